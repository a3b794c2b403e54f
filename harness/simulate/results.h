// A published MLPerf BERT result folder (`result_*.txt` and the submission's `system.json`) as
// `mlbert simulate` reads it: what the machine was, how the run was set up, and what each run did.
//
// Design choice: everything comes from the log toolkit (its parser for the MLLOG records, its
// result-file discovery, ruleset-from-path and scoring) or from the system description's own
// fields; a value neither states is a documented default, recorded in ClusterRun::notes so the
// output names it. A few launch-line flags of NVIDIA's BERT implementation, which most GPU
// submissions derive from, are read from the log text when present (load balancing, stratified
// quotas, Adam, bucket clipping): they say what the MLLOG keys do not.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/simulate/simulator.h"

namespace mlbert::harness::simulate {

struct PublishedRun {
  std::filesystem::path file;
  double seconds = 0;              // run_start to run_stop
  std::int64_t samples = 0;        // trained when it stopped
  std::int64_t evals = 0;          // eval_accuracy records
  std::vector<double> eval_times;  // seconds after run_start
  std::string status;              // run_stop's metadata.status
};

struct PublishedResult {
  std::filesystem::path dir;
  nlohmann::json system;  // system.json
  std::string ruleset;    // from the path (v1.1 -> 1.1.0) or given
  std::string division;
  std::vector<PublishedRun> runs;
  std::int64_t global_batch_size = 0;
  int gradient_accumulation = 1;
  std::int64_t eval_samples = 10000;
  std::optional<std::string> opt_name;    // MLLOG opt_name, when logged
  std::vector<std::string> launch_flags;  // the recognized launch-line flags found in the logs
  std::optional<int> eval_batch_size;
  std::optional<std::vector<int>> stratified_quotas;
  bool global_exchange = false, group_exchange = false, bucket_clipping = false, adam = false;
  bool post_accumulation_allreduce = false;  // one allreduce of all gradients after backward
  bool fp16_allreduce = false;

  // Olympic mean of the run times in seconds (drop fastest and slowest, no compliance filter).
  double olympic_seconds() const;
};

// Reads `dir` (result_*.txt and system.json). `ruleset` empty: from the path. Throws
// std::runtime_error naming the file and record when the folder cannot be read.
PublishedResult read_published_result(const std::filesystem::path& dir,
                                      const std::string& ruleset = "");

// The official score (minutes) by the toolkit's summarizer rules, or why there is none.
struct OfficialScore {
  std::optional<double> minutes;
  std::string note;
};
OfficialScore official_score(const PublishedResult& result);

// The machine and the run of a published result. Throws std::invalid_argument with the field
// named when system.json or the logs leave the shape undetermined (nodes, GPUs, batch size).
ClusterRun cluster_from_result(const PublishedResult& result);

// How the published implementation reduced its gradients where its launch line says (one flat
// allreduce after backward, in fp16); `base` unchanged otherwise (mlbert's overlapped f32 buckets).
SimulationOptions simulation_options_for(const PublishedResult& result, SimulationOptions base);

}  // namespace mlbert::harness::simulate
