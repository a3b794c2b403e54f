// Reading a published result folder's runs for `mlbert reproduce` (see published_runs.h).
#include "harness/reproduce/published_runs.h"

#include <set>
#include <stdexcept>

#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/package/layout.h"

namespace mlbert::harness::reproduce {
namespace {

// Keys a run logs with a value of its own, not a configuration of the result.
const std::set<std::string, std::less<>> kPerRunKeys = {"seed", "data_file", "cache_clear"};

std::string where(const std::filesystem::path& file, std::size_t line, const std::string& key) {
  return file.filename().string() + ":" + std::to_string(line) + ": " + key;
}

// A seed is a whole number: a fraction is not one, unlike a count the timeline truncates.
std::optional<std::int64_t> whole_number(const nlohmann::json& value) {
  const auto n = mllog::logged_count(value);
  if (!n || static_cast<double>(*n) != value.get<double>()) return std::nullopt;
  return n;
}

// One log folded record by record: its timing, its seed, and its configuration merged into the
// folder's (first run states it, later runs must agree).
class RunReader {
 public:
  RunReader(const std::filesystem::path& file, PublishedRuns& runs)
      : file_(file), runs_(runs), timeline_(file) {
    run_.file = file;
  }

  void read(const mllog::LogRecord& r) {
    if (!r.key_is_string) return;
    // train_samples before run_start configures the result; the timeline counts it after.
    const bool configuring = !timeline_.started();
    if (timeline_.read(r) && !configuring) return;
    if (r.key == "seed") {
      run_.seed = whole_number(r.value);
      if (!run_.seed)
        throw std::runtime_error(where(file_, r.line, r.key) + ": value " + r.value.dump() +
                                 " is not a whole number");
    } else if (r.key == "submission_benchmark") {
      if (!r.value.is_string() || r.value.get<std::string>() != logging::kBertBenchmark)
        throw std::runtime_error(where(file_, r.line, r.key) + ": " + r.value.dump() +
                                 " is not BERT's result (\"bert\"); reproduce reads BERT results");
    } else if (r.key == "submission_platform" || r.key == "submission_org") {
      identity_.emplace(r.key, LoggedValue{r.value, file_, r.line});
    } else if (!kPerRunKeys.contains(r.key) && is_configuration(r.key) && configuring) {
      config_.emplace(r.key, LoggedValue{r.value, file_, r.line});
    }
  }

  PublishedRun finish() {
    const mllog::RunTiming t = timeline_.finish();
    if (!t.run_start)
      throw std::runtime_error(file_.string() + ": run_start: missing (no run in it)");
    if (!t.run_stop)
      throw std::runtime_error(file_.string() +
                               ": run_stop: missing after run_start (the log is truncated)");
    run_.seconds = (*t.run_stop - *t.run_start) / 1000.0;
    run_.samples = t.samples;
    run_.status = t.status;
    run_.phases = mllog::run_phases(t);
    merge();
    return run_;
  }

 private:
  static bool is_configuration(const std::string& key) {
    for (const auto& k : configuration_keys())
      if (k == key) return true;
    return false;
  }

  // A run's identity and configuration are compared with the folder's once the run is read, the
  // identity first: runs of another system disagree on everything, and that is what to name.
  void merge() {
    for (auto& [key, v] : identity_) {
      std::string& folder = key == "submission_platform" ? runs_.platform : runs_.org;
      const std::string value = v.value.is_string() ? v.value.get<std::string>() : v.value.dump();
      if (runs_.runs.empty())
        folder = value;
      else if (folder != value)
        throw std::runtime_error(where(file_, v.line, key) + ": \"" + value +
                                 "\" but the folder's earlier runs log \"" + folder +
                                 "\" (runs of different systems in one folder)");
    }
    auto& known = runs_.hyperparameters;
    for (auto& [key, v] : config_) {
      const auto it = known.find(key);
      if (it == known.end()) {
        if (!runs_.runs.empty())
          throw std::runtime_error(where(file_, v.line, key) +
                                   ": logged here but not in the folder's first run");
        known.emplace(key, v);
        continue;
      }
      const bool same =
          it->second.value == v.value || (v.value.is_number() && it->second.value.is_number() &&
                                          v.value.get<double>() == it->second.value.get<double>());
      if (!same)
        throw std::runtime_error(where(file_, v.line, key) + ": " + v.value.dump() + " but " +
                                 it->second.source() + " logs " + it->second.value.dump() +
                                 " (the runs are not one configuration)");
    }
  }

  const std::filesystem::path& file_;
  PublishedRuns& runs_;
  PublishedRun run_;
  mllog::RunTimeline timeline_;
  std::map<std::string, LoggedValue> identity_, config_;  // the first record of each key
};

}  // namespace

std::string LoggedValue::source() const {
  return file.filename().string() + ":" + std::to_string(line);
}

const LoggedValue* PublishedRuns::find(const std::string& key) const {
  const auto it = hyperparameters.find(key);
  return it == hyperparameters.end() ? nullptr : &it->second;
}

const std::vector<std::string>& configuration_keys() {
  static const std::vector<std::string> keys = {
      "global_batch_size",
      "gradient_accumulation_steps",
      "opt_gradient_accumulation_steps",
      "d_batch_size",
      "opt_name",
      "opt_base_learning_rate",
      "opt_lamb_beta_1",
      "opt_lamb_beta_2",
      "opt_adam_beta_1",
      "opt_adam_beta_2",
      "opt_epsilon",
      "opt_lamb_epsilon",
      "opt_adam_epsilon",
      "opt_lamb_weight_decay_rate",
      "opt_weight_decay",
      "opt_lamb_learning_rate_decay_poly_power",
      "opt_learning_rate_warmup_steps",
      "opt_learning_rate_training_steps",
      "start_warmup_step",
      "num_warmup_steps",
      "max_sequence_length",
      "max_predictions_per_seq",
      "eval_samples",
      "train_samples",
      "submission_division",
      "submission_status",
  };
  return keys;
}

PublishedRuns read_published_runs(const std::filesystem::path& dir) {
  PublishedRuns runs;
  runs.dir = dir;
  std::vector<std::filesystem::path> files;
  try {
    files = logging::find_result_files(dir);
  } catch (const std::exception& e) {
    throw std::runtime_error(dir.string() + ": " + e.what());
  }
  if (files.empty())
    throw std::runtime_error(dir.string() + ": result_*.txt: none (no runs to reproduce)");
  for (const auto& file : files) {
    RunReader reader(file, runs);
    mllog::for_each_record(
        file, [&](const mllog::LogRecord& r) { reader.read(r); }, [](const mllog::ParseError&) {});
    runs.runs.push_back(reader.finish());
  }
  return runs;
}

}  // namespace mlbert::harness::reproduce
