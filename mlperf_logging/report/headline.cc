// The report's headline score (see report.h): the official summarizer multiplies the olympic
// mean by scaling.json's factor, which the package checker writes for a closed result whose RCP
// check passes converging faster than the RCP mean. The report computes the same factor from its
// own RCP check rather than trusting a scaling.json that may be stale or absent.
#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/report/report.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging {

ScoreHeadline score_headline(const SystemReport& system) {
  ScoreHeadline headline;
  if (!system.score || !system.score->score) return headline;
  // score_system applied the folder's scaling.json, if any: undo it for the raw mean.
  headline.raw = *system.score->score / system.score->scaling_factor;
  headline.normalized = headline.raw;
  const mllog::TrainingRuleset* row = mllog::find_training_ruleset(system.ruleset);
  const auto division = system.division();
  const RcpResult* rcp = system.rcp_shown();
  if (!row || !row->bert_rcps) {
    headline.basis = "ruleset " + system.ruleset + " has no RCPs: no normalization";
  } else if (division != "closed") {
    headline.basis = division.value_or("unknown") +
                     " division: RCP normalization applies to closed results only";
  } else if (!rcp || !rcp->passed) {
    headline.basis = "the RCP check did not pass: no normalization";
  } else if (rcp->scaling_factor <= 1.0) {
    headline.basis = "converges no faster than the RCP mean: factor 1";
  } else {
    headline.factor = rcp->scaling_factor;
    headline.normalized = *headline.raw * headline.factor;
    headline.basis = "olympic mean x RCP scaling factor " +
                     mllog::python_float_repr(headline.factor) + " (" +
                     (rcp->reference ? rcp->reference->name + " mean / submission mean" : "") + ")";
  }
  if (system.score->scaling_factor != 1.0 && system.score->scaling_factor != headline.factor)
    headline.basis += "; the folder's scaling.json says " +
                      mllog::python_float_repr(system.score->scaling_factor);
  return headline;
}

}  // namespace mlbert::logging
