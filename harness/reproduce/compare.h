// `mlbert reproduce compare`: a reproduction's result folder against the published one, scored
// and RCP-tested by the official engines on both sides, with a verdict scripts can use.
//
// Design choice: "reproduced" needs both things a reader means by it: every hyperparameter the
// two sides' logs state is the same (a run with another learning rate is another experiment,
// whatever its time), and the olympic means of the official scores agree within the tolerance.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/reproduce/published_runs.h"
#include "mlperf_logging/package/score.h"
#include "mlperf_logging/rcp/rcp.h"

namespace mlbert::harness::reproduce {

struct ComparedSide {
  std::filesystem::path dir;
  PublishedRuns runs;
  logging::SystemScore score;
  logging::RcpResult rcp;
};

// A logged hyperparameter whose value differs between the sides (or that one side lacks).
struct DifferingField {
  std::string key;
  std::string reproduced, published;  // the values as logged, "(not logged)" when absent
};

struct Comparison {
  std::string ruleset;
  double tolerance = 0.05;
  ComparedSide reproduced, published;
  std::optional<double> ratio;  // reproduced score / published score
  std::vector<DifferingField> differing;
  bool reproduced_verdict = false;
  std::string verdict;  // "reproduced" or "not reproduced: <why>"
};

// Parses "5%" or "0.05"; throws naming the option otherwise.
double parse_tolerance(const std::string& text);

// Reads, scores and RCP-tests both folders under `ruleset`. Throws naming the folder and file
// when either cannot be read.
Comparison compare_results(const std::filesystem::path& reproduced,
                           const std::filesystem::path& published, const std::string& ruleset,
                           double tolerance);

// The comparison for a terminal: scores, ratio, verdict, runs side by side, differing fields.
std::string format_comparison(const Comparison& c);

}  // namespace mlbert::harness::reproduce
