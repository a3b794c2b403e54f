// Run numbering in a result folder: new runs go after every earlier run; only an explicit
// replace removes earlier results, and only their files.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/atomic_file.h"
#include "harness/launch/run_numbering.h"
#include "tests/common/shared_fixtures.h"

namespace fs = std::filesystem;
using mlbert::harness::earlier_run_index;
using mlbert::harness::number_new_runs;

namespace {

fs::path folder_with_earlier_runs(const std::string& name) {
  const fs::path dir = mlbert::test::binary_dir() / "test-work" / "harness" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* file : {"result_0.txt", "train_0.out", "result_5.txt", "result_7.txt.partial",
                           "report.html", ".train_9.out.partial-0a1b2c3d-12-ab"})
    std::ofstream(dir / file) << "earlier\n";
  return dir;
}

}  // namespace

TEST_CASE("a run index is read from result_N.txt and train_N.out only", "[run_numbering]") {
  CHECK(earlier_run_index("result_0.txt") == 0);
  CHECK(earlier_run_index("result_12.txt") == 12);
  CHECK(earlier_run_index("train_3.out") == 3);
  CHECK(earlier_run_index("result_7.txt.partial") == -1);
  CHECK(earlier_run_index(".train_9.out.partial-0a1b2c3d-12-ab") == -1);
  CHECK(earlier_run_index("result_.txt") == -1);
  CHECK(earlier_run_index("result_x.txt") == -1);
  CHECK(earlier_run_index("result_-1.txt") == -1);
  CHECK(earlier_run_index("report.html") == -1);
}

TEST_CASE("new runs are numbered after every earlier run and nothing is removed",
          "[run_numbering]") {
  const fs::path dir = folder_with_earlier_runs("numbering_keeps");
  const auto numbering = number_new_runs(dir, false);
  CHECK(numbering.first == 6);
  CHECK(numbering.removed.empty());
  for (const char* file : {"result_0.txt", "train_0.out", "result_5.txt", "report.html"})
    CHECK(fs::exists(dir / file));
  CHECK(number_new_runs(dir / "new_system", false).first == 0);
}

TEST_CASE("replace removes only the earlier runs' files, lists them and starts at 0",
          "[run_numbering]") {
  const fs::path dir = folder_with_earlier_runs("numbering_replace");
  const auto numbering = number_new_runs(dir, true);
  CHECK(numbering.first == 0);
  CHECK(numbering.removed ==
        std::vector<fs::path>{dir / "result_0.txt", dir / "result_5.txt", dir / "train_0.out"});
  CHECK_FALSE(fs::exists(dir / "result_0.txt"));
  CHECK(fs::exists(dir / "report.html"));
}

TEST_CASE("a killed run's partial log and dead temporaries go, a live run's and foreign ones stay",
          "[run_numbering]") {
  const fs::path dir = folder_with_earlier_runs("numbering_leftovers");
  // A live run holds its partial log under a flock; this process plays it.
  std::ofstream(dir / "result_8.txt.partial") << "live\n";
  const int live = ::open((dir / "result_8.txt.partial").c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(live >= 0);
  REQUIRE(::flock(live, LOCK_EX | LOCK_NB) == 0);
  // A console temporary of this machine whose writer is gone (pid 2^22 + 1 is above pid_max's
  // default), as a killed demo leaves it.
  const std::string dead_temporary =
      ".train_3.out.partial-" + mlbert::files::machine_key() + "-4194305-deadbeef";
  std::ofstream(dir / dead_temporary) << "console\n";
  const auto numbering = number_new_runs(dir, false);
  ::close(live);
  CHECK(numbering.leftovers == std::vector<fs::path>{dir / "result_7.txt.partial"});
  CHECK_FALSE(fs::exists(dir / "result_7.txt.partial"));
  CHECK_FALSE(fs::exists(dir / dead_temporary));
  CHECK(fs::exists(dir / "result_8.txt.partial"));
  CHECK(fs::exists(dir / ".train_9.out.partial-0a1b2c3d-12-ab"));  // another machine's writer
  CHECK(numbering.first == 6);
}

TEST_CASE("replace refuses a folder under a run's name before removing anything",
          "[run_numbering]") {
  const fs::path dir = folder_with_earlier_runs("numbering_folder");
  fs::create_directories(dir / "result_3.txt" / "inside");
  CHECK_THROWS_WITH(number_new_runs(dir, true),
                    Catch::StartsWith((dir / "result_3.txt").string() + ": not a file"));
  CHECK(fs::exists(dir / "result_0.txt"));
  CHECK(fs::exists(dir / "result_3.txt" / "inside"));
  CHECK(number_new_runs(dir, false).first == 6);
}
