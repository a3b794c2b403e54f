// The timed part of one `mlbert train` rank, run_start to run_stop: training steps, evals at the
// run's cadence, and the closing records.
#pragma once

#include <cstdint>

#include "harness/comm/mpi_communicator.h"
#include "harness/train/init_phase.h"
#include "harness/train/preflight.h"
#include "harness/train/result_log.h"
#include "harness/train/run_guard.h"
#include "harness/train/run_observer.h"
#include "harness/train/trainer.h"

namespace mlbert::harness {

// Returns the exit status: 0 when an eval reached the target, kExitNotConverged when the run
// stopped at its step or sample limit first.
int run_timed(const TrainOptions& o, const Prepared& p, RankState& s, MpiCommunicator& world,
              RunLog& log, RunGuard& guard, RunObserver& observer, std::int64_t seed);

}  // namespace mlbert::harness
