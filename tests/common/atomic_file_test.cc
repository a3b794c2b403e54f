// AtomicFile: a file is under its final name only once complete; a failed or abandoned write
// leaves nothing; the temporaries of killed writers are removed by the next writer of that name,
// those of live or foreign writers are kept.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "common/atomic_file.h"
#include "tests/common/file_size_limit.h"
#include "tests/common/shared_fixtures.h"

namespace fs = std::filesystem;
using mlbert::files::AtomicFile;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = mlbert::test::binary_dir() / "test-work" / "common" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A pid that no process has now: a child that has exited and been reaped.
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

}  // namespace

TEST_CASE("an AtomicFile is under its final name only after commit and complete", "[atomic_file]") {
  const fs::path dir = scratch("commit");
  const fs::path path = dir / "shard.hdf5";
  {
    AtomicFile file(path);
    file.write("first half ");
    CHECK_FALSE(fs::exists(path));
    CHECK(fs::exists(file.temp_path()));
    CHECK(file.temp_path().parent_path() == dir);  // same directory: rename stays atomic
    CHECK(mlbert::files::is_partial_name(file.temp_path()));
    file.write("second half");
    file.commit();
    CHECK_FALSE(fs::exists(file.temp_path()));
  }
  CHECK(read_text(path) == "first half second half");
  CHECK(names_in(dir) == std::vector<std::string>{"shard.hdf5"});
}

TEST_CASE("an AtomicFile not committed leaves the old file and no temporary", "[atomic_file]") {
  const fs::path dir = scratch("abandon");
  const fs::path path = dir / "model.safetensors";
  mlbert::files::write_file_atomically(path, "old");
  {
    AtomicFile file(path);
    file.write("new but unfinished");
  }
  CHECK(read_text(path) == "old");
  CHECK(names_in(dir) == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("temporaries of killed writers go with the next write but live and foreign ones stay",
          "[atomic_file]") {
  const fs::path dir = scratch("leftovers");
  const std::string key = mlbert::files::machine_key();
  const std::string dead = ".part-1.hdf5.partial-" + key + "-" + std::to_string(dead_pid()) + "-1";
  const std::string live = ".part-1.hdf5.partial-" + key + "-" + std::to_string(::getppid()) + "-2";
  const std::string foreign = ".part-1.hdf5.partial-0000abcd-" + std::to_string(dead_pid()) + "-3";
  const std::string other_name =
      ".part-2.hdf5.partial-" + key + "-" + std::to_string(dead_pid()) + "-4";
  for (const auto& name : {dead, live, foreign, other_name}) std::ofstream(dir / name) << "half";
  mlbert::files::write_file_atomically(dir / "part-1.hdf5", "whole");
  std::vector<std::string> expected = {live, foreign, other_name, "part-1.hdf5"};
  std::sort(expected.begin(), expected.end());
  CHECK(names_in(dir) == expected);
  CHECK(mlbert::files::is_partial_name(dir / dead));
  CHECK(mlbert::files::is_partial_name(dir / foreign));
  CHECK_FALSE(mlbert::files::is_partial_name(dir / "part-1.hdf5"));
  CHECK_FALSE(mlbert::files::is_partial_name(dir / ".hidden"));
  CHECK_FALSE(mlbert::files::is_partial_name(dir / "result_0.txt.partial"));
}

TEST_CASE("a write that fails (file size limit) names the file and leaves nothing behind",
          "[atomic_file]") {
  const fs::path dir = scratch("too_large");
  const fs::path path = dir / "eval.hdf5";
  std::string error;
  try {
    const mlbert::test::FileSizeLimit limit(1000);
    AtomicFile file(path);
    file.write(std::string(5000, 'x'));
    file.commit();
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK_THAT(error, Catch::Contains(path.string()) && Catch::Contains("File too large"));
  CHECK(names_in(dir).empty());
}

TEST_CASE("a process is alive until it ends and a zombie is not", "[atomic_file]") {
  CHECK(mlbert::files::process_alive(::getpid()));
  CHECK_FALSE(mlbert::files::process_alive(dead_pid()));
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // exited, not yet reaped
  CHECK_FALSE(mlbert::files::process_alive(child));
  ::waitpid(child, nullptr, 0);
}
