// The project's own form of the official compliance configs: one Config per YAML file, one KeyRule
// per KEY record, with the Python expressions turned into C++ callables that keep their source text
// (for messages, and so a test can hold every table against the official YAML text).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlperf_logging/log/parser.h"

namespace mlbert::mllog::rules {

// The checker's `s`: one fresh State per config (each config's BEGIN sets what it uses).
struct State {
  // common.yaml
  bool init_started = false;
  bool init_stopped = false;
  bool run_started = false;
  bool run_stopped = false;
  double first_init_start = 9e99;
  int compile_time_mins = 0;
  // closed_bert.yaml, rulesets 1.1.0 to 2.1.0: the `initialized_tensors` list, kept as counts per
  // expected name (sorted(list) == sorted(expected) is a multiset comparison).
  std::vector<std::uint32_t> tensor_counts;
  std::size_t tensors_logged = 0;
  std::size_t tensors_unexpected = 0;
  std::optional<nlohmann::json> global_batch_size;  // closed_bert.yaml; unset until logged
};

// Side effects of POST code that reach beyond the state: enqueue_config(...).
struct Effects {
  std::vector<std::string> enqueued;
};

// A Python expression evaluated on a record: true/false, or py::Error when Python would raise.
struct Expr {
  std::string source;  // the expression as the YAML writes it (stripped)
  std::function<bool(const LogRecord&, const State&)> eval;
};

struct KeyRule {
  std::string name;
  std::string req;  // "EXACTLY_ONE", "AT_LEAST_ONE", "AT_LEAST_ONE_OR(x)", "OPTIONAL" or "" (none)
  std::vector<Expr> checks;
  std::string post_source;
  std::function<void(const LogRecord&, State&, Effects&)> post;  // may raise py::Error
  std::optional<Expr> atleast_one_check;                         // a raise here stops the checker
};

struct Config {
  std::string name;  // as enqueued: "training_4.0.0/common.yaml"
  std::string begin_source;
  std::function<void(State&)> begin;
  std::vector<KeyRule> keys;
  std::string end_source;
  std::function<bool(const State&)> end;  // may raise py::Error
};

// Every config the official queue can reach from training_<ruleset>/common.yaml for a BERT log:
// common, closed_common, open_common, closed_bert, open_bert (1.1.0's open_common enqueues
// training_1.0.0/open_bert.yaml, which is encoded under that name; 5.1.0 lists no bert but still
// ships the two bert files, which its division configs enqueue). Empty for other rulesets.
const std::vector<Config>& bert_configs(std::string_view ruleset);

// The benchmarks the division configs of `ruleset` accept (their submission_benchmark CHECK list).
std::vector<std::string> accepted_benchmarks(std::string_view ruleset, std::string_view division);

}  // namespace mlbert::mllog::rules
