// The BERT reference convergence points (RCPs) of every MLPerf Training ruleset, as C++ data.
// Transcribed from the official mlperf_logging package
// (rcp_checker/training_<ruleset>/rcps_bert.json); several rulesets share one data set, and the
// table records which (see bert_rcp_set).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mlbert::logging {

// One hyperparameter of a reference run, e.g. {"opt_base_learning_rate", 0.00035}.
struct RcpHyperparam {
  std::string_view name;
  double value;
};

// The reference runs at one global batch size: samples to converge of each of ~20 seeds.
struct RcpRecord {
  std::string_view name;  // "bert_ref_3072"
  int batch_size;
  std::string_view creator;  // empty where the official file has no provenance fields
  std::string_view when;
  std::string_view platform;
  std::span<const RcpHyperparam> hyperparams;
  std::span<const std::int64_t> samples_to_converge;
};

// The RCP data set a ruleset uses, in the order of the official file.
struct RcpSet {
  std::string_view ruleset;       // the ruleset asked for
  std::string_view data_ruleset;  // the ruleset whose file introduced this data, e.g. "2.1.0"
  std::span<const RcpRecord> records;
};

// Rulesets with BERT RCPs: 1.0.0 1.1.0 2.0.0 2.1.0 3.0.0 3.1.0 4.0.0 4.1.0 5.0.0 5.1.0.
std::span<const std::string_view> bert_rcp_rulesets();

// Empty when `ruleset` has BERT RCPs; otherwise why not, in words: for a BERT round before RCPs
// (0.7.0) that the round had none, for anything else the rulesets that have them.
std::string bert_rcp_absence(std::string_view ruleset);

// The BERT RCPs of `ruleset`; throws std::invalid_argument with bert_rcp_absence() otherwise.
RcpSet bert_rcp_set(std::string_view ruleset);

}  // namespace mlbert::logging
