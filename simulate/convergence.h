// Where a simulated run stops: the samples it must train to converge (stated, or the RCP mean of
// its ruleset at its global batch size) and the evaluation of its cadence that first reaches them.
//
// Design choice: the RCP figures come from the log toolkit's RCP catalog, interpolated between
// batch sizes as the RCP checker does; a run the RCPs do not cover must state its samples.
#pragma once

#include <cstdint>
#include <string>

#include "harness/config/system_config.h"

namespace mlbert::simulate {

struct Convergence {
  double target_samples = 0;  // what the run must train: RCP mean or the stated figure
  std::string source;         // where the target came from
  std::int64_t eval_interval = 0;
  std::int64_t steps = 0, evals = 0, samples = 0;  // at the eval that reaches the target
  bool reached = true;                             // false when run.max_steps stops the run first
};

// Samples to converge and where the run stops: the stated run.samples_to_converge, else (LAMB)
// the RCP mean of the run's ruleset at its global batch size, interpolated between RCP batch
// sizes as the RCP checker does; then the first eval of the run's cadence at or past it. Throws
// std::invalid_argument saying why when neither applies.
Convergence convergence_for(const harness::RunSpec& run);

}  // namespace mlbert::simulate
