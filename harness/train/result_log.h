// Rank 0's result log (`results/<system>/bert/result_<N>.txt`), written while the run goes on.
//
// Design choice: the log is written as `result_<N>.txt.partial`, held under an exclusive flock
// for the whole run, and renamed to `result_<N>.txt` (fsynced, then the directory) right after
// run_stop is written, whatever status it has: a submitter finds every run that reached run_stop
// under its final name, aborted ones included, and never finds a log a kill -9 cut short there.
// A partial log that no live process holds is the leftover of a killed run: the next run with
// that N empties and reuses it (and says so). The last kReserveBytes a file may grow by (the
// RLIMIT_FSIZE limit, or disk space preallocated past the end) are kept for run_stop, so a full
// disk still ends the log with run_stop "aborted", and no record is ever half written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "mlperf_logging/log/mllog.h"

namespace mlbert::harness {

class ResultLogFile {
 public:
  static constexpr std::int64_t kReserveBytes = 4096;

  // Claims <dir>/result_<index>.txt, or with no index the first N whose final name does not
  // exist and whose partial name no live run holds. Throws naming the file when `dir` is not
  // writable or the given index is taken. `note` tells of a killed run's partial log replaced.
  static ResultLogFile claim(const std::filesystem::path& dir, std::optional<int> index);
  ResultLogFile(ResultLogFile&& other) noexcept;
  ResultLogFile& operator=(ResultLogFile&& other) noexcept;
  ~ResultLogFile();

  // Appends whole lines. A normal record must leave kReserveBytes of room; `last` (run_stop) may
  // use them. On failure the file is cut back to its last whole line and the error, naming the
  // file and the cause (errno, the RLIMIT_FSIZE limit), is thrown.
  void append(std::string_view lines, bool last = false);
  // fsync, rename to the final name, fsync the directory.
  void finish();
  // Removes the partial file (the run never started).
  void abandon();

  const std::filesystem::path& final_path() const { return final_; }
  const std::filesystem::path& partial_path() const { return partial_; }
  const std::string& note() const { return note_; }

 private:
  ResultLogFile() = default;
  void close();

  std::filesystem::path final_, partial_;
  int fd_ = -1;
  std::int64_t size_ = 0;
  bool preallocate_ = true;  // cleared where the filesystem cannot
  std::string note_;
};

// The MLLOG records of a run: the log toolkit's emitter, with rank 0's ResultLogFile as its sink.
// Closed by the first run_stop: nothing is written after it, whichever thread (main, watchdog,
// signal) stops the run first. Ranks without a file write nothing.
class RunLog {
 public:
  void open(ResultLogFile file, bool to_stdout);
  void event(std::string_view k, const mllog::Json& value = nullptr,
             const mllog::Json& metadata = nullptr,
             mllog::SourceLocation where = mllog::SourceLocation::current()) {
    write(mllog::EventType::point_in_time, k, value, metadata, where);
  }
  void start(std::string_view k, const mllog::Json& value = nullptr,
             const mllog::Json& metadata = nullptr,
             mllog::SourceLocation where = mllog::SourceLocation::current()) {
    write(mllog::EventType::interval_start, k, value, metadata, where);
  }
  void end(std::string_view k, const mllog::Json& value = nullptr,
           const mllog::Json& metadata = nullptr,
           mllog::SourceLocation where = mllog::SourceLocation::current()) {
    write(mllog::EventType::interval_end, k, value, metadata, where);
  }
  // Writes run_stop once and renames the log to its final name; later calls do nothing. Never
  // throws (it runs on the abort paths): returns false, having said why on stderr, when the log
  // could not be completed.
  bool stop(std::string_view status,
            mllog::SourceLocation where = mllog::SourceLocation::current());

 private:
  void write(mllog::EventType type, std::string_view k, const mllog::Json& value,
             const mllog::Json& metadata, mllog::SourceLocation where);
  static mllog::LoggerOptions silent();

  mutable std::mutex mutex_;
  mllog::Logger logger_{silent()};
  std::optional<ResultLogFile> file_;
  bool stopped_ = false;
  bool last_record_ = false;  // the line being written is run_stop
};

}  // namespace mlbert::harness
