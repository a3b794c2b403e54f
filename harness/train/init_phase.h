// The init phase of one `mlbert train` rank, between init_start and init_stop: the run's
// configuration in the log, then everything the rank trains with (backend, weights,
// communicators, optimizer, sampler), then untimed warm-up steps on synthetic data.
#pragma once

#include <cstdint>
#include <memory>

#include "bert/model.h"
#include "bert/ops.h"
#include "bert/parameters.h"
#include "harness/comm/communicator.h"
#include "harness/comm/grad_sync.h"
#include "harness/comm/mpi_communicator.h"
#include "harness/data/sampler.h"
#include "harness/train/optimizer.h"
#include "harness/train/preflight.h"
#include "harness/train/result_log.h"
#include "harness/train/run_guard.h"
#include "harness/train/run_observer.h"

namespace mlbert::harness {

// Everything one rank trains with. Members are destroyed in reverse order, the backend last.
struct RankState {
  std::unique_ptr<bert::Ops> ops;
  std::unique_ptr<bert::ParameterStore> params;
  std::unique_ptr<bert::Model> model;
  std::unique_ptr<Optimizer> optimizer;
  std::shared_ptr<Communicator> grad_comm;      // MPI, or NCCL on GPUs
  std::unique_ptr<Communicator> exchange_comm;  // the load-balancing group, if any
  std::unique_ptr<GradientSync> sync;
  std::unique_ptr<LossScaler> scaler;
  std::unique_ptr<Sampler> sampler;
};

// The submission and hyperparameter records of the init phase, as the run's ruleset asks.
void log_run_config(RunLog& log, const Prepared& p, std::int64_t seed);

// Builds the rank's state; the weights come from the checkpoint or the seed and are checked to be
// the same on every rank.
RankState init_rank(const Prepared& p, MpiCommunicator& world, RunLog& log, RunGuard& guard,
                    RunObserver& observer, std::int64_t seed);

// run.warmup_iterations steps' kernels and collectives on synthetic data; weights stay as they are.
void warm_up(const Prepared& p, RankState& s, RunGuard& guard, std::int64_t seed);

#ifdef MLBERT_HAVE_CUDA
// This rank's GPU: MLBERT_DEVICE (set by `mlbert bind`), else the local rank the launcher states
// (the global rank modulo the ranks per node only when it states none: wrong for a cyclic
// placement, where two ranks of a node would take one GPU). All of it is in the environment
// before MPI starts.
int cuda_device(const SystemConfig& system);
#endif

}  // namespace mlbert::harness
