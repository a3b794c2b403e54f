// Synthetic BERT logs for the audit tests. Records are written in the order a real NVIDIA log has
// them, with every key the BERT rules of 0.7.0 .. 5.0.0 ask for (keys a ruleset does not know are
// ignored by its checker), including the 398 weights_initialization tensors.
#include "tests/mlperf_logging/audit_synthetic.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "mlperf_logging/rules/bert_tensors.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::test {
namespace {

using Json = nlohmann::ordered_json;

class LogWriter {
 public:
  explicit LogWriter(std::int64_t time_ms) : time_ms_(time_ms) {}
  void at(std::int64_t time_ms) { time_ms_ = time_ms; }
  void line(const char* event_type, const std::string& key, const Json& value,
            Json metadata = Json::object(), int lineno = 100) {
    Json record;
    record["namespace"] = "";
    record["time_ms"] = time_ms_;
    record["event_type"] = event_type;
    record["key"] = key;
    record["value"] = value;
    Json meta;
    meta["file"] = "/workspace/bert/run_pretraining.py";
    meta["lineno"] = lineno;
    for (auto& [k, v] : metadata.items()) meta[k] = v;
    record["metadata"] = meta;
    out_ << ":::MLLOG " << record.dump() << "\n";
  }
  void point(const std::string& key, const Json& value, Json metadata = Json::object(),
             int lineno = 100) {
    line("POINT_IN_TIME", key, value, std::move(metadata), lineno);
  }
  std::string text() const { return out_.str(); }

 private:
  std::int64_t time_ms_;
  std::ostringstream out_;
};

}  // namespace

std::string synthetic_bert_log(const SyntheticRun& run) {
  const std::int64_t init_start = run.run_start_ms - 120'000;
  LogWriter log(init_start);
  log.point("cache_clear", true);
  log.line("INTERVAL_START", "init_start", nullptr);
  log.point("submission_benchmark", "bert");
  log.point("submission_org", "mlbert");
  log.point("submission_division", run.division);
  // 4.0.0 and before check the old vocabulary; later rulesets ignore the key.
  log.point("submission_status", "onprem");
  log.point("submission_platform", "1xSYNTHETIC");
  log.point("seed", run.seed, Json::object(), run.seed_lineno);
  log.point("global_batch_size", run.global_batch_size);
  log.point("gradient_accumulation_steps", 1);
  log.point("max_predictions_per_seq", 76);
  log.point("opt_learning_rate_training_steps", 700);
  log.point("num_warmup_steps", 0);
  for (const std::string& tensor : mllog::bert_weight_tensor_names()) {
    log.point("weights_initialization", nullptr, Json{{"tensor", tensor}});
  }
  log.point("opt_base_learning_rate", 0.0035);
  log.point(std::string(mllog::training_ruleset(run.ruleset).lamb_epsilon_key), 1e-06);
  log.point("opt_lamb_beta_1", 0.62);
  log.point("opt_lamb_beta_2", 0.9);
  log.point("opt_lamb_weight_decay_rate", 0.01);
  log.point("opt_learning_rate_warmup_steps", 0);
  log.point("opt_lamb_learning_rate_decay_poly_power", 1.0);
  log.point("start_warmup_step", 0);
  log.at(run.run_start_ms - 1000);
  log.line("INTERVAL_END", "init_stop", nullptr);
  log.at(run.run_start_ms);
  log.line("INTERVAL_START", "run_start", nullptr);
  log.line("INTERVAL_START", "epoch_start", nullptr, Json{{"epoch_num", 0}});
  log.line("INTERVAL_START", "block_start", nullptr,
           Json{{"first_epoch_num", 1}, {"epoch_count", 1}});
  const std::int64_t run_stop =
      run.run_start_ms + static_cast<std::int64_t>(std::llround(run.run_minutes * 60'000));
  const int evals = run.eval_samples.empty() ? 4 : static_cast<int>(run.eval_samples.size());
  for (int i = 1; i <= evals; ++i) {
    const double samples = run.eval_samples.empty()
                               ? std::round(run.samples_to_converge * i / evals)
                               : run.eval_samples[static_cast<std::size_t>(i - 1)];
    const double accuracy = i == evals ? run.final_accuracy : 0.35 + 0.08 * i;
    log.at(run.run_start_ms + (run_stop - run.run_start_ms) * i / evals - 10);
    log.line("INTERVAL_START", "eval_start", samples, Json{{"epoch_num", samples}});
    log.line("INTERVAL_END", "eval_stop", samples, Json{{"epoch_num", samples}});
    log.point("eval_accuracy", accuracy, Json{{"epoch_num", samples}});
  }
  log.at(run_stop - 5);
  log.line("INTERVAL_END", "block_stop", nullptr, Json{{"first_epoch_num", 1}});
  log.line("INTERVAL_END", "epoch_stop", nullptr, Json{{"epoch_num", run.samples_to_converge}});
  log.point("train_samples", run.samples_to_converge);
  log.point("eval_samples", 10000);
  log.at(run_stop);
  log.line("INTERVAL_END", "run_stop", nullptr, Json{{"status", run.status}});
  return log.text();
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  std::random_device seed;
  path_ = std::filesystem::temp_directory_path() /
          ("mlbert_audit_test_" + std::to_string(seed()) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_results(const std::filesystem::path& dir, const std::vector<SyntheticRun>& runs) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    write_text(dir / ("result_" + std::to_string(i) + ".txt"), synthetic_bert_log(runs[i]));
  }
}

std::vector<SyntheticRun> ten_good_runs(const std::string& ruleset, const std::string& division) {
  // Run times 10.0 .. 10.9 min in a scrambled order; samples around the 4608 RCP mean (2,798,080),
  // slower than it so no scaling applies.
  constexpr int kOrder[10] = {3, 7, 0, 9, 5, 1, 8, 2, 6, 4};
  std::vector<SyntheticRun> runs(10);
  for (int i = 0; i < 10; ++i) {
    runs[i].ruleset = ruleset;
    runs[i].division = division;
    runs[i].run_minutes = 10.0 + 0.1 * kOrder[i];
    runs[i].samples_to_converge = 2'850'000 + 10'000 * kOrder[i];
    runs[i].seed = 1000 + 17 * i;
    runs[i].run_start_ms = 1'700'000'000'000 + 3'600'000LL * i;
  }
  return runs;
}

std::string synthetic_system_json(const std::string& system, const std::string& division,
                                  const std::string& ruleset) {
  nlohmann::ordered_json desc;
  desc["submitter"] = "mlbert";
  desc["division"] = division;
  desc["status"] =
      mllog::training_ruleset(ruleset).availability_status ? "Available on-premise" : "onprem";
  desc["system_name"] = system;
  desc["number_of_nodes"] = "1";
  desc["host_processors_per_node"] = "2";
  desc["host_processor_model_name"] = "Synthetic CPU";
  desc["host_processor_core_count"] = "64";
  for (const char* field :
       {"host_processor_vcpu_count", "host_processor_frequency", "host_processor_caches",
        "host_processor_interconnect", "host_memory_capacity", "host_storage_type",
        "host_storage_capacity", "host_networking", "host_networking_topology",
        "host_memory_configuration"}) {
    desc[field] = "";
  }
  desc["accelerators_per_node"] = "8";
  desc["accelerator_model_name"] = "Synthetic GPU";
  for (const char* field :
       {"accelerator_host_interconnect", "accelerator_frequency", "accelerator_on-chip_memories",
        "accelerator_memory_configuration", "accelerator_memory_capacity",
        "accelerator_interconnect", "accelerator_interconnect_topology", "cooling", "hw_notes"}) {
    desc[field] = "";
  }
  desc["framework"] = "mlbert";
  desc["other_software_stack"] = {{"compiler", "g++"}};
  desc["operating_system"] = "Debian 12";
  desc["sw_notes"] = "";
  return desc.dump(4);
}

void write_package(const std::filesystem::path& org, const std::string& system,
                   const std::string& division, const std::string& ruleset,
                   const std::vector<SyntheticRun>& runs) {
  write_text(org / "systems" / (system + ".json"),
             synthetic_system_json(system, division, ruleset));
  write_results(org / "results" / system / "bert", runs);
  write_text(org / "benchmarks" / "bert" / "implementations" / "mlbert" / "run.sh",
             "#!/bin/sh\nexec mlbert train --seed \"$SEED\" \"$@\"\n");
}

}  // namespace mlbert::test
