// One result log's run as its MLLOG records time it: init, run_start and run_stop, each
// evaluation, the samples trained; and the phases (init, training, evaluation) those times give.
// `simulate --results` and `reproduce` both read runs through it, so a run is timed one way.
//
// Design choice: the reader folds records one by one and only the timing keys (run_timeline_keys),
// so a caller reading a log for other keys too feeds it the same record stream; a record before
// run_start or after run_stop times nothing but the init interval.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mlperf_logging/log/parser.h"

namespace mlbert::mllog {

// An evaluation the log times with eval_start and eval_stop (NVIDIA's logs from v3.1 on; earlier
// ones log eval_accuracy only): seconds after run_start, and the samples trained before it where
// the log states them (eval_start's value, else its epoch_num; counts of 1,000 or less are not
// samples: early rounds log epoch_num 1 on every eval).
struct TimedEval {
  double start = 0, stop = 0;
  std::optional<std::int64_t> samples;
};

// What the timing records of one run say. Timestamps are the records' time_ms.
struct RunTiming {
  std::optional<double> init_start,
      init_stop;                              // the first init_start, the first init_stop after it
  std::optional<double> run_start, run_stop;  // the first of each, run_stop after run_start
  // The last block_stop or epoch_stop between run_start and run_stop: where training ends.
  std::optional<double> last_block_stop;
  std::string status;              // run_stop's metadata.status
  std::int64_t samples = 0;        // train_samples after run_start, else the last eval's epoch_num
  std::int64_t evals = 0;          // eval_accuracy records
  std::vector<double> eval_times;  // seconds after run_start
  // The samples at each eval_accuracy (its epoch_num), 0 where not stated (1,000 or less).
  std::vector<std::int64_t> eval_samples;
  std::vector<TimedEval> timed_evals;  // eval_start .. eval_stop pairs, in order
};

// Folds a log's records into its RunTiming.
class RunTimeline {
 public:
  explicit RunTimeline(std::filesystem::path file) : file_(std::move(file)) {}

  // Takes a timing record; false for any other key. Throws std::runtime_error naming the file,
  // line and key when train_samples is not a count.
  bool read(const LogRecord& r);
  // The timing once every record is read: an eval_start without its eval_stop is dropped, and
  // samples falls back on the last eval's epoch_num.
  RunTiming finish();
  bool started() const { return timing_.run_start.has_value(); }

 private:
  double since_start(const LogRecord& r) const {
    return (r.timestamp - *timing_.run_start) / 1000.0;
  }
  void eval_accuracy(const LogRecord& r);
  void eval_start(const LogRecord& r);

  std::filesystem::path file_;
  RunTiming timing_;
  std::int64_t last_epoch_ = 0;
  bool eval_open_ = false;  // an eval_start waits for its eval_stop
};

// The keys RunTimeline::read takes, for a parse that decodes only the records it needs.
const std::set<std::string, std::less<>>& run_timeline_keys();

// A logged count as an integer: a finite number up to 2^53 (which a double holds exactly),
// truncated; nullopt otherwise.
std::optional<std::int64_t> logged_count(const nlohmann::json& value);

// The seconds one run spent in each phase; nullopt where its records do not time the phase.
struct RunPhases {
  // init_start to init_stop (to run_start where the log has no init_stop).
  std::optional<double> init;
  // run_start to the last block_stop or epoch_stop (run_stop without one), less the evaluations
  // timed in that span; nullopt when the run evaluated without timing its evaluations.
  std::optional<double> training;
  std::optional<double> eval;  // every eval_start to its eval_stop, summed
};
RunPhases run_phases(const RunTiming& timing);

}  // namespace mlbert::mllog
