// What the advisory audits and the report read from one result log, gathered in one streaming
// pass: the evals with their epoch_num, the submission fields, the seeds with the source line that
// logged them, the hyperparameters, run_start/run_stop, the clock's steps backwards, the source
// files named in metadata, and two digests (the file's SHA-256, and one of its records without
// time_ms and seed, which two copies of a run share).
//
// Design choice: facts, not judgements. Nothing here decides whether a log is compliant; a log
// that cannot be read yields facts with `read_error` set and the advisories say so.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mlbert::logging {

// A record's value and the line it is on.
struct LoggedValue {
  nlohmann::json value;
  std::size_t line = 0;
};

struct LoggedEval {
  nlohmann::json epoch_num;  // metadata.epoch_num (null when absent)
  nlohmann::json accuracy;   // value
  std::size_t line = 0;
};

struct LoggedSeed {
  nlohmann::json value;
  std::string source_file;  // metadata.file, "" when absent or not a string
  std::int64_t source_line = 0;  // metadata.lineno, 0 when absent or not an integer
  std::size_t line = 0;
};

// A record whose time_ms is earlier than the latest seen before it.
struct ClockStep {
  std::size_t line = 0;
  std::int64_t latest_ms = 0;  // the latest time_ms before this record
  std::int64_t time_ms = 0;
};

struct LogFacts {
  std::filesystem::path file;
  std::string sha256;          // of the file's bytes
  std::string records_digest;  // SHA-256 of every record but seed, without time_ms
  std::size_t records = 0;
  std::size_t parse_errors = 0;
  std::string read_error;  // the file could not be read at all

  std::optional<LoggedValue> global_batch_size, submission_org, submission_platform,
      submission_division;
  std::vector<LoggedSeed> seeds;
  // Keys logged before run_start that set the training (opt_*, batch and warm-up settings), each
  // with its first value, in log order.
  std::vector<std::pair<std::string, LoggedValue>> hyperparameters;
  std::vector<LoggedEval> evals;
  std::optional<std::size_t> run_start_line, run_stop_line;
  std::optional<std::int64_t> run_start_ms, run_stop_ms;
  // Steps back of more than kClockJitterMs in the timed part of the run (run_start and every
  // record after it), in file order. Records with time_ms <= 0 are not clock readings (logs add
  // records after the run with time_ms 0) and are left out.
  std::vector<ClockStep> clock_steps_back;
  std::set<std::string> source_files;  // every metadata.file value
};

// Steps back up to this size are logging jitter: ranks and threads of one job stamp records with
// their own clocks. Before run_start, where every rank logs its init, published logs step back by
// seconds (5 s in the v1.1 Samsung logs: 128 nodes' clocks); from run_start on, none of the
// published logs steps back at all, and 100 ms is under 1% of the shortest time to train.
inline constexpr std::int64_t kClockJitterMs = 100;

// Reads `file` (never throws for its content; `read_error` says when it cannot be read).
LogFacts read_log_facts(const std::filesystem::path& file);

// The value of `key` among the hyperparameters, or nullptr.
const LoggedValue* find_hyperparameter(const LogFacts& facts, std::string_view key);

// A logged value as text: strings as they are, anything else as JSON.
std::string value_text(const nlohmann::json& value);

}  // namespace mlbert::logging
