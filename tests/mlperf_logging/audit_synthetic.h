// Synthetic MLPerf BERT result logs and submission packages for the audit tests: complete enough
// to pass the compliance checker of any BERT ruleset (0.7.0 .. 5.0.0, closed or open), with the
// figures a test wants to vary (run time, samples to converge, batch size, seed, run_stop status).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mlbert::test {

struct SyntheticRun {
  std::string ruleset = "4.1.0";
  std::string division = "closed";
  int global_batch_size = 4608;
  double samples_to_converge = 2'850'000;  // epoch_num of the last eval (and train_samples)
  double final_accuracy = 0.7215;          // value of the last eval_accuracy
  std::string status = "success";          // run_stop status
  std::int64_t run_start_ms = 1'700'000'000'000;
  double run_minutes = 10.0;  // run_stop - run_start
  long long seed = 1234;
  int seed_lineno = 42;  // metadata.lineno of the seed record
  // epoch_num of each eval; empty: four evals at a quarter, half, ... of samples_to_converge.
  std::vector<double> eval_samples;
};

// The log text, lines ending in '\n'.
std::string synthetic_bert_log(const SyntheticRun& run);

void write_text(const std::filesystem::path& file, const std::string& text);
std::string read_text(const std::filesystem::path& file);

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes result_0..result_{n-1}.txt into `dir` from `runs` (created if needed).
void write_results(const std::filesystem::path& dir, const std::vector<SyntheticRun>& runs);

// Ten runs of one system that pass compliance, seeds and (closed division) the RCP check of
// `ruleset`: different seeds, run times 10.0 .. 10.9 minutes in a shuffled order.
std::vector<SyntheticRun> ten_good_runs(const std::string& ruleset, const std::string& division);

// A complete package under `org`: systems/<system>.json, results/<system>/bert/result_*.txt,
// benchmarks/bert/implementations/mlbert/run.sh.
void write_package(const std::filesystem::path& org, const std::string& system,
                   const std::string& division, const std::string& ruleset,
                   const std::vector<SyntheticRun>& runs);

// A system description with every required field; `status` chosen for the ruleset.
std::string synthetic_system_json(const std::string& system, const std::string& division,
                                  const std::string& ruleset);

}  // namespace mlbert::test
