// The result log: claimed as result_<N>.txt.partial under a lock, renamed to result_<N>.txt at
// run_stop; a killed run's partial log is reused, a live run's skipped; a file size limit still
// leaves room for run_stop, and no record is ever cut in half.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>

#include <fstream>

#include "harness/train/result_log.h"
#include "tests/common/shared_fixtures.h"

namespace fs = std::filesystem;
using mlbert::harness::ResultLogFile;
using mlbert::harness::RunLog;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = mlbert::test::binary_dir() / "test-work" / "harness" / "result_log" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of('\n');
  const auto start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - start);
}

// Lowers RLIMIT_FSIZE for one scope (SIGXFSZ ignored, so writes fail with EFBIG instead).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    handler_ = ::signal(SIGXFSZ, SIG_IGN);
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, handler_);
  }

 private:
  rlimit saved_{};
  sighandler_t handler_ = nullptr;
};

}  // namespace

TEST_CASE("the first N without a final log or a live partial one is claimed", "[result_log]") {
  const fs::path dir = scratch("claim");
  std::ofstream(dir / "result_0.txt") << "a finished run\n";
  ResultLogFile first = ResultLogFile::claim(dir, std::nullopt);
  CHECK(first.final_path() == dir / "result_1.txt");
  CHECK(fs::exists(dir / "result_1.txt.partial"));
  CHECK_FALSE(fs::exists(dir / "result_1.txt"));  // not under the final name while it runs
  // result_1.txt.partial is held by a live run: the next claim skips it.
  ResultLogFile second = ResultLogFile::claim(dir, std::nullopt);
  CHECK(second.final_path() == dir / "result_2.txt");
  CHECK_THROWS_WITH(ResultLogFile::claim(dir, 1),
                    Catch::Contains("result_1.txt.partial: another run is writing it"));
  CHECK_THROWS_WITH(ResultLogFile::claim(dir, 0), Catch::Contains("result_0.txt: exists"));
  first.append("line\n");
  first.finish();
  CHECK(read_text(dir / "result_1.txt") == "line\n");
  CHECK_FALSE(fs::exists(dir / "result_1.txt.partial"));
  second.abandon();
  CHECK_FALSE(fs::exists(dir / "result_2.txt.partial"));
  CHECK(ResultLogFile::claim(dir, std::nullopt).final_path() == dir / "result_2.txt");
}

TEST_CASE("a partial log no run holds (a killed run's) is emptied and reused with a note",
          "[result_log]") {
  const fs::path dir = scratch("stale");
  std::ofstream(dir / "result_0.txt.partial") << ":::MLLOG {\"key\": \"init_start\"}\n:::MLLOG {";
  ResultLogFile file = ResultLogFile::claim(dir, std::nullopt);
  CHECK(file.final_path() == dir / "result_0.txt");
  CHECK_THAT(file.note(),
             Catch::Contains("result_0.txt.partial") && Catch::Contains("ended without run_stop"));
  CHECK(fs::file_size(dir / "result_0.txt.partial") == 0);
  CHECK(ResultLogFile::claim(scratch("fresh"), std::nullopt).note().empty());
}

TEST_CASE("run_stop renames the log to its final name and closes it", "[result_log]") {
  const fs::path dir = scratch("run_log");
  RunLog log;
  log.open(ResultLogFile::claim(dir, std::nullopt), false);
  log.start("run_start");
  CHECK_FALSE(fs::exists(dir / "result_0.txt"));
  CHECK(log.stop("aborted"));
  log.event("eval_accuracy", 0.5);  // after run_stop: dropped
  CHECK(log.stop("success"));       // once only
  const std::string text = read_text(dir / "result_0.txt");
  CHECK_THAT(text, Catch::Contains("\"key\": \"run_start\""));
  CHECK_THAT(last_line(text), Catch::Contains("\"key\": \"run_stop\"") &&
                                  Catch::Contains("\"status\": \"aborted\""));
  CHECK(text.find("eval_accuracy") == std::string::npos);
  CHECK_FALSE(fs::exists(dir / "result_0.txt.partial"));
}

TEST_CASE("a file size limit refuses records but keeps room for run_stop", "[result_log]") {
  const fs::path dir = scratch("limit");
  RunLog log;
  log.open(ResultLogFile::claim(dir, std::nullopt), false);
  log.start("run_start");
  const auto size = fs::file_size(dir / "result_0.txt.partial");
  const rlim_t limit = size + ResultLogFile::kReserveBytes - 1000;  // run_stop fits, 4 KB do not
  {
    FileSizeLimit small(limit);
    CHECK_THROWS_WITH(log.event("eval_accuracy", 0.25), Catch::Contains("result_0.txt.partial") &&
                                                            Catch::Contains("RLIMIT_FSIZE") &&
                                                            Catch::Contains(std::to_string(limit)));
    CHECK(fs::file_size(dir / "result_0.txt.partial") == size);  // nothing of it written
    CHECK(log.stop("aborted"));
  }
  const std::string text = read_text(dir / "result_0.txt");
  CHECK(text.size() <= limit);
  CHECK_THAT(last_line(text), Catch::Contains("\"status\": \"aborted\""));
}

TEST_CASE("a write the disk refuses is cut back to the last whole line", "[result_log]") {
  const fs::path dir = scratch("cut");
  ResultLogFile file = ResultLogFile::claim(dir, std::nullopt);
  file.append("first\n");
  {
    FileSizeLimit small(10);  // 4 of the next 100 bytes fit
    CHECK_THROWS_WITH(file.append(std::string(99, 'x') + "\n", true),
                      Catch::Contains("File too large"));
  }
  CHECK(read_text(dir / "result_0.txt.partial") == "first\n");
}
