// Input files: a missing path, a folder and a readable file, each told apart by name and reason.
#include <catch2/catch.hpp>

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
