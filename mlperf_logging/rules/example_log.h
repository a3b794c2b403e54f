// A compliant MLPerf Training BERT result log for any BERT ruleset and division, written with
// the MLLOG emitter: the reference of what `mlbert check` accepts, and the seed that tests, fuzzers
// and benchmarks mutate. Every value is plausible for a real run (NVIDIA's 8-GPU LAMB recipe).
#pragma once
#include <cstdint>
#include <string>

namespace mlbert::mllog {

struct ExampleLogOptions {
  std::string ruleset = "4.0.0";
  std::string division = "closed";
  std::int64_t start_ms = 1700000000000;  // time_ms of the first record
  int evals = 4;                          // eval_accuracy records; the last one reaches the target
  int noise_lines_per_eval = 0;           // non-MLLOG lines (framework chatter) between evaluations
  bool weights_initialization = true;  // the 398 per-tensor records (required up to 2.1.0 closed)
};

// The log text, one record per line, '\n'-terminated. Throws std::invalid_argument for a ruleset
// without BERT (5.1.0 on), where no BERT log complies.
std::string example_bert_log(const ExampleLogOptions& options);

}  // namespace mlbert::mllog
