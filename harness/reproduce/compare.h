// `mlbert reproduce compare`: a reproduction's result folder against the published one, scored
// and RCP-tested by the official engines on both sides, with a verdict scripts can use.
//
// Design choice: "reproduced" needs both things a reader means by it: every hyperparameter the
// two sides' logs state is the same (a run with another learning rate is another experiment,
// whatever its time) on a machine of the same shape (nodes and accelerators per node; the other
// system fields are reported, see system_fields.h), and the olympic means of the official scores
// agree within the tolerance. Phase times are information: they say where a difference comes from.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/reproduce/published_runs.h"
#include "harness/reproduce/system_fields.h"
#include "mlperf_logging/package/score.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/report/report.h"

namespace mlbert::harness::reproduce {

// Each phase's median seconds over a side's successful runs (run_stop status "success"), each
// over the runs whose records time it; nullopt where none does.
struct PhaseMedians {
  std::optional<double> init, training, eval;
  std::size_t runs = 0;  // the successful runs
};
PhaseMedians phase_medians(const PublishedRuns& runs);

struct ComparedSide {
  std::filesystem::path dir;
  PublishedRuns runs;
  logging::SystemScore score;
  logging::RcpResult rcp;
  PhaseMedians phases;
  std::filesystem::path system_file;  // "" when the side has no system description
  nlohmann::json system;
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
  // Compared only when both sides have a system description (system_note says which has none).
  std::vector<SystemFieldDifference> system_differing;
  std::string system_note;
  bool reproduced_verdict = false;
  std::string verdict;  // "reproduced" or "not reproduced: <why>"
};

// Parses "5%" or "0.05"; throws naming the option otherwise.
double parse_tolerance(const std::string& text);

// Reads, scores and RCP-tests both folders under `ruleset`. `reproduced_system`, when not empty,
// describes the reproduction's system (an mlbert system file or a description) in place of the
// one found beside its results. Throws naming the folder and file when either cannot be read.
Comparison compare_results(const std::filesystem::path& reproduced,
                           const std::filesystem::path& published, const std::string& ruleset,
                           double tolerance, const std::filesystem::path& reproduced_system = {});

// The comparison for a terminal: scores, ratio, phases, runs side by side, differing fields,
// verdict last.
std::string format_comparison(const Comparison& c);
// The same as JSON, for scripts.
nlohmann::json comparison_json(const Comparison& c);
// The same as the section `mlbert report --compare` renders.
logging::ComparisonSection comparison_section(const Comparison& c);

}  // namespace mlbert::harness::reproduce
