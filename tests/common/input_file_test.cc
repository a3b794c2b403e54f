// Input files: a missing path, a folder and a readable file, each told apart by name and reason.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "common/input_file.h"
#include "tests/common/shared_fixtures.h"

namespace fs = std::filesystem;
using mlbert::files::open_input;
using mlbert::files::unreadable_reason;

TEST_CASE("an input file that is missing or a folder is refused by name, with the reason",
          "[files]") {
  const fs::path dir = mlbert::test::binary_dir() / "test-work" / "common" / "input_file";
  fs::remove_all(dir);
  fs::create_directories(dir / "folder.json");
  { std::ofstream(dir / "config.json") << "{\"a\": 1}\n"; }

  CHECK(unreadable_reason(dir / "absent.json") == "no such file");
  CHECK(unreadable_reason(dir / "folder.json") == "is a directory, not a file");
  CHECK(unreadable_reason(dir / "config.json").empty());
  CHECK_THROWS_WITH(open_input(dir / "absent.json", "system file"),
                    Catch::EndsWith("absent.json: cannot open system file: no such file"));
  CHECK_THROWS_WITH(
      open_input(dir / "folder.json", "accelerator profile"),
      Catch::EndsWith("folder.json: cannot open accelerator profile: is a directory, not a file"));

  std::ifstream in = open_input(dir / "config.json", "config");
  std::string line;
  REQUIRE(std::getline(in, line));
  CHECK(line == "{\"a\": 1}");
  fs::remove_all(dir);
}

TEST_CASE("an input that is a FIFO or a symlink loop is refused at once with what it is",
          "[files]") {
  const fs::path dir = mlbert::test::binary_dir() / "test-work" / "common" / "special_inputs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  REQUIRE(::mkfifo((dir / "result_9.txt").c_str(), 0644) == 0);
  fs::create_symlink("loop.txt", dir / "loop.txt");
  { std::ofstream(dir / "result_0.txt") << ":::MLLOG {}\n"; }

  // A FIFO with no writer: opening it for reading would wait forever.
  CHECK(unreadable_reason(dir / "result_9.txt") == "is a FIFO, not a regular file");
  CHECK_THROWS_WITH(mlbert::files::open_regular_file(dir / "result_9.txt"),
                    Catch::EndsWith("result_9.txt: is a FIFO, not a regular file"));
  CHECK_THROWS_WITH(open_input(dir / "result_9.txt", "log"),
                    Catch::EndsWith("result_9.txt: cannot open log: is a FIFO, not a regular file"));
  CHECK(unreadable_reason(dir / "loop.txt") == "Too many levels of symbolic links");
  CHECK_THROWS_WITH(mlbert::files::open_regular_file(dir / "loop.txt"),
                    Catch::EndsWith("loop.txt: cannot open: Too many levels of symbolic links"));
  const int fd = mlbert::files::open_regular_file(dir / "result_0.txt");
  CHECK(fd >= 0);
  char first = 0;
  CHECK(::read(fd, &first, 1) == 1);  // a blocking descriptor again, reading the file
  CHECK(first == ':');
  ::close(fd);
  fs::remove_all(dir);
}
