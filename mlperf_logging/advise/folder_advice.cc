// Advisories across the runs of one result folder (see folder_advice.h).
#include "mlperf_logging/advise/folder_advice.h"

#include <cmath>
#include <map>

#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {
namespace {

// A seed as a number when it is one ("42", 42 and 42.0 are one seed, as Python's int() reads
// them), else its text.
std::string seed_key(const nlohmann::json& value) {
  if (value.is_number()) {
    const double x = value.get<double>();
    if (std::isfinite(x) && x == std::trunc(x) && std::fabs(x) < 1e18)
      return std::to_string(static_cast<long long>(x));
  }
  std::string text = value_text(value);
  const auto first = text.find_first_not_of(" \t");
  const auto last = text.find_last_not_of(" \t");
  return first == std::string::npos ? text : text.substr(first, last - first + 1);
}

std::string verdict_text(const RcpResult& result) {
  std::string text = std::string(to_string(result.verdict)) + " (" + result.message;
  if (result.reference) text += " against " + result.reference->name;
  if (result.scaling_factor > 1.0) text += ", scaling " + mllog::python_float_repr(result.scaling_factor);
  return text + ")";
}

std::string names(const std::vector<RcpPoint>& points) {
  std::string out;
  for (const RcpPoint& p : points) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace

void advise_seed_repeats(const std::vector<LogFacts>& runs, AdviceReport& report) {
  std::map<std::string, const LogFacts*> first_with;
  for (const LogFacts& run : runs) {
    for (const LoggedSeed& seed : run.seeds) {
      const auto [it, inserted] = first_with.emplace(seed_key(seed.value), &run);
      if (inserted || it->second == &run) continue;
      report.add(advice::kSeedRepeat, run.file, seed.line,
                 "seed " + it->first + " is also the seed of " +
                     it->second->file.filename().string() +
                     ": the runs of a submission use different seeds");
    }
  }
}

void advise_identical_runs(const std::vector<LogFacts>& runs, AdviceReport& report) {
  std::map<std::string, const LogFacts*> first_with;
  for (const LogFacts& run : runs) {
    if (run.evals.empty() || !run.read_error.empty()) continue;
    const auto [it, inserted] = first_with.emplace(run.records_digest, &run);
    if (inserted) continue;
    report.add(advice::kIdenticalRuns, run.file, 0,
               "every record but the seed is the same as in " +
                   it->second->file.filename().string() +
                   " (time_ms aside): the same training twice, or a copy of one log");
  }
}

void advise_rcp_envelope(const std::filesystem::path& results_dir, const std::string& ruleset,
                         bool train_samples, AdviceReport& report) {
  const mllog::TrainingRuleset* row = mllog::find_training_ruleset(ruleset);
  if (!row || !row->bert_rcps) return;
  RcpOptions options;
  options.ruleset = ruleset;
  options.bert_train_samples = train_samples;
  RcpResult official, envelope;
  try {
    official = check_rcp_directory(results_dir, options);
    options.pass = RcpPass::envelope;
    envelope = check_rcp_directory(results_dir, options);
  } catch (const std::exception& e) {
    report.notes.push_back(results_dir.string() + ": RCP envelope not checked: " + e.what());
    return;
  }
  const bool same_reference = official.reference.has_value() == envelope.reference.has_value() &&
                              (!official.reference || official.reference->name == envelope.reference->name);
  // The factor means something only for a passing result (a failing one's may be NaN).
  const bool same_factor =
      !official.passed || !envelope.passed || official.scaling_factor == envelope.scaling_factor;
  if (official.verdict == envelope.verdict && same_reference && same_factor) return;
  const RcpCatalog catalog(ruleset);
  std::vector<RcpPoint> dropped;
  for (const RcpPoint& point : catalog.points(RcpPass::pruned))
    if (!catalog.find(point.batch_size, RcpPass::envelope)) dropped.push_back(point);
  report.add(advice::kRcpEnvelope, results_dir, 0,
             "the official RCP pruning gives " + verdict_text(official) +
                 "; the lower convex envelope of the RCPs, which also drops " + names(dropped) +
                 ", gives " + verdict_text(envelope) + " (mlcommons/logging#368)");
}

}  // namespace mlbert::logging
