// AtomicFile: a file is under its final name only once complete; a failed or abandoned write
// leaves nothing; the temporaries of killed writers are removed by the next writer of that name,
// those of live or foreign writers are kept.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
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

namespace {

// A socket file at `path`, as a server would leave it; the descriptor is closed again.
void make_socket_file(const fs::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  ::close(fd);
}

std::string write_error(const fs::path& path) {
  try {
    mlbert::files::write_file_atomically(path, "output\n");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an output over a FIFO, socket, folder or device is refused by name and left as it was",
          "[atomic_file]") {
  const fs::path dir = scratch("special_targets");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0644) == 0);
  make_socket_file(dir / "socket");
  fs::create_directory(dir / "folder");
  CHECK_THAT(write_error(dir / "fifo"), Catch::StartsWith((dir / "fifo").string() + ": is a FIFO, "));
  CHECK_THAT(write_error(dir / "socket"),
             Catch::StartsWith((dir / "socket").string() + ": is a socket, "));
  CHECK_THAT(write_error(dir / "folder"),
             Catch::StartsWith((dir / "folder").string() + ": is a directory, "));
  CHECK(fs::is_fifo(dir / "fifo"));
  CHECK(fs::is_socket(dir / "socket"));
  CHECK(fs::is_empty(dir / "folder"));
  // A node of the kernel's null device made here, never the system's /dev/null: a regression can
  // only replace this one. Creating it needs root (CAP_MKNOD).
  if (::mknod((dir / "null").c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) {
    CHECK_THAT(write_error(dir / "null"),
               Catch::StartsWith((dir / "null").string() + ": is a character device, "));
    CHECK(fs::is_character_file(dir / "null"));
  } else {
    WARN("mknod needs root here: the character-device case was not run");
  }
  const std::vector<std::string> names = names_in(dir);
  const bool only_the_originals =
      names == std::vector<std::string>{"fifo", "folder", "null", "socket"} ||
      names == std::vector<std::string>{"fifo", "folder", "socket"};
  CHECK(only_the_originals);
}

TEST_CASE("an output over a symlink replaces the regular file it points to and keeps the link",
          "[atomic_file]") {
  const fs::path dir = scratch("symlink_target");
  std::ofstream(dir / "report.html") << "old\n";
  fs::create_symlink("report.html", dir / "latest.html");
  mlbert::files::write_file_atomically(dir / "latest.html", "new\n");
  CHECK(fs::is_symlink(dir / "latest.html"));
  CHECK(read_text(dir / "report.html") == "new\n");
  CHECK(names_in(dir) == std::vector<std::string>{"latest.html", "report.html"});
}

TEST_CASE("an output over a symlink to a FIFO, to nothing or in a loop is refused by name",
          "[atomic_file]") {
  const fs::path dir = scratch("bad_symlinks");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0644) == 0);
  fs::create_symlink("fifo", dir / "to_fifo");
  fs::create_symlink("missing/file", dir / "dangling");
  fs::create_symlink("loop", dir / "loop");
  CHECK_THAT(write_error(dir / "to_fifo"),
             Catch::StartsWith((dir / "to_fifo").string() + ": is a symlink to ") &&
                 Catch::Contains(", a FIFO, not a regular file"));
  CHECK_THAT(write_error(dir / "dangling"),
             Catch::StartsWith((dir / "dangling").string() + ": is a symlink that leads nowhere") &&
                 Catch::Contains("No such file"));
  CHECK_THAT(write_error(dir / "loop"),
             Catch::Contains("leads nowhere (Too many levels of symbolic links)"));
  CHECK(fs::is_fifo(dir / "fifo"));
  CHECK(names_in(dir) == std::vector<std::string>{"dangling", "fifo", "loop", "to_fifo"});
}

TEST_CASE("an output that is one of the command's inputs, by any name, is refused naming it",
          "[atomic_file]") {
  const fs::path dir = scratch("output_is_input");
  std::ofstream(dir / "result_0.txt") << "log\n";
  fs::create_hard_link(dir / "result_0.txt", dir / "hard_link.txt");
  fs::create_symlink("result_0.txt", dir / "soft_link.txt");
  const std::vector<fs::path> inputs{dir / "system.json", dir / "result_0.txt"};
  for (const char* name : {"result_0.txt", "hard_link.txt", "soft_link.txt"}) {
    std::string error;
    try {
      mlbert::files::refuse_replacing_inputs(dir / name, inputs);
    } catch (const std::exception& e) {
      error = e.what();
    }
    CHECK(error == (dir / name).string() + ": is " + (dir / "result_0.txt").string() +
                       ", an input of this command; write the output elsewhere");
  }
  CHECK_NOTHROW(mlbert::files::refuse_replacing_inputs(dir / "report.html", inputs));
  std::ofstream(dir / "other.html") << "page\n";
  CHECK_NOTHROW(mlbert::files::refuse_replacing_inputs(dir / "other.html", inputs));
}
