// Samples to converge and the evaluation that reaches them (see convergence.h).
#include "simulate/convergence.h"

#include <stdexcept>

#include "mlperf_logging/rcp/rcp.h"
#include "simulate/format.h"

namespace mlbert::simulate {

Convergence convergence_for(const harness::RunSpec& run) {
  Convergence c;
  c.eval_interval = eval_interval(run);
  const double gbs = static_cast<double>(run.global_batch_size);
  if (run.samples_to_converge > 0) {
    c.target_samples = static_cast<double>(run.samples_to_converge);
    c.source = "stated: run.samples_to_converge " + format_count(c.target_samples) +
               " samples at GBS " + format_count(gbs);
  } else if (run.optimizer.kind == harness::OptimizerKind::lamb) {
    const logging::RcpCatalog catalog(run.ruleset);
    const auto pass = logging::RcpPass::pruned;
    const auto below = catalog.nearest_below(gbs, pass);
    const auto above = catalog.nearest_above(gbs, pass);
    if (const auto exact = catalog.find(gbs, pass)) {
      c.target_samples = exact->mean;
      c.source = "RCP mean of ruleset " + run.ruleset + " at GBS " + format_count(gbs) + " (" +
                 exact->name + ", " + std::to_string(exact->runs) + " reference runs)";
    } else if (below && above) {
      const logging::RcpPoint p = catalog.interpolate(gbs, *below, *above);
      c.target_samples = p.mean;
      c.source = "RCP mean of ruleset " + run.ruleset + " interpolated at GBS " +
                 format_count(gbs) + " between " + below->name + " and " + above->name +
                 " as the RCP checker does";
    } else if (const auto unpruned = catalog.find(gbs, logging::RcpPass::full)) {
      c.target_samples = unpruned->mean;
      c.source = "RCP mean of ruleset " + run.ruleset + " at GBS " + format_count(gbs) + " (" +
                 unpruned->name + ", a point the RCP checker prunes)";
    } else {
      const auto& points = catalog.points(logging::RcpPass::full);
      throw std::invalid_argument(
          "no RCP of ruleset " + run.ruleset + " covers GBS " + format_count(gbs) +
          " (its RCPs span GBS " + format_count(points.front().batch_size) + " to " +
          format_count(points.back().batch_size) +
          "): state run.samples_to_converge (e.g. --set run.samples_to_converge=N)");
    }
  } else {
    throw std::invalid_argument(
        std::string("run.optimizer.name is \"") + to_string(run.optimizer.kind) +
        "\": RCPs cover LAMB only; state the samples this configuration converges in as "
        "run.samples_to_converge (e.g. --set run.samples_to_converge=N)");
  }
  std::int64_t samples = 0;
  std::int64_t next_eval = run.eval.start_samples > 0 ? run.eval.start_samples : c.eval_interval;
  while (true) {
    ++c.steps;
    samples += run.global_batch_size;
    if (samples >= next_eval) {
      ++c.evals;
      while (next_eval <= samples) next_eval += c.eval_interval;
      if (static_cast<double>(samples) >= c.target_samples) break;
    }
    if (run.max_steps > 0 && c.steps >= run.max_steps) {
      c.reached = false;
      break;
    }
  }
  c.samples = samples;
  return c;
}

}  // namespace mlbert::simulate
