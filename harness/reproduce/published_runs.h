// The runs of a published BERT result folder as a reproduction needs them: every hyperparameter
// the MLLOG records state, each with the record it came from, and what each run did.
//
// Design choice: a value counts only when every run that logs it logs the same one; a folder whose
// runs disagree on a hyperparameter, on the benchmark or on the platform is not one result, and is
// refused with the file, line and key named, never averaged or taken from the first run.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mlperf_logging/log/run_timeline.h"

namespace mlbert::harness::reproduce {

// A hyperparameter as the logs state it, and the record that states it first.
struct LoggedValue {
  nlohmann::json value;
  std::filesystem::path file;
  std::size_t line = 0;
  std::string source() const;  // "result_0.txt:17 opt_base_learning_rate"
};

struct PublishedRun {
  std::filesystem::path file;
  std::optional<std::int64_t> seed;
  std::int64_t samples = 0;  // trained at run_stop: train_samples, else the last eval's epoch_num
  std::string status;        // run_stop's metadata.status ("success", "aborted")
  double seconds = 0;        // run_start to run_stop
  mllog::RunPhases phases;   // init, training and evaluation, as simulate --results reads them
};

struct PublishedRuns {
  std::filesystem::path dir;
  std::vector<PublishedRun> runs;
  // The configuration keys every run agrees on (global_batch_size, opt_*, ...), by key.
  std::map<std::string, LoggedValue> hyperparameters;
  std::string platform;  // submission_platform, "" when not logged
  std::string org;       // submission_org

  const LoggedValue* find(const std::string& key) const;
};

// The configuration keys of a BERT log that a reproduction carries (or names as not carried).
const std::vector<std::string>& configuration_keys();

// Reads every result_*.txt in `dir`. Throws std::runtime_error naming the file, line and key:
// no result file, a log of another benchmark, runs of different platforms, runs that disagree on
// a hyperparameter, a log that does not time a whole run (truncated), a value of the wrong type.
PublishedRuns read_published_runs(const std::filesystem::path& dir);

}  // namespace mlbert::harness::reproduce
