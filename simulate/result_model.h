// A published result as the simulator's inputs: its machine and run (a ClusterRun) and how its
// implementation ran (SimulationOptions), for `mlbert simulate --results` and `calibrate`.
//
// Design choice: both ask the result's derived launch (PublishedResult::launch) for what the
// implementation did and add the constants of its code (constants.h); what neither the folder
// nor the launch states is mlbert's own choice, named in ClusterRun::notes or the host notes.
#pragma once

#include <cstdint>

#include "simulate/results.h"
#include "simulate/simulator.h"

namespace mlbert::simulate {

// The most ranks a published result may describe: the deal holds every rank's samples of a step.
inline constexpr std::int64_t kMaxSimulatedRanks = 1 << 20;

// The machine and the run of a published result. Throws std::invalid_argument with the field
// named when system.json or the logs leave the shape undetermined (nodes, GPUs, batch size).
ClusterRun cluster_from_result(const PublishedResult& result);

// How the published implementation ran (result.launch): its gradient reduction (one flat
// allreduce after backward, in fp16; apex's DistributedFusedLAMB, sharded by node; or Samsung's
// DDP buckets), its own passes over the gradients, the host's cost per kernel (an eager framework
// from Python, or CUDA graphs), padded shapes and the read-backs of its step; `base` (mlbert's)
// for the rest.
SimulationOptions simulation_options_for(const PublishedResult& result, SimulationOptions base);

// Times what the result's longest run did: its steps at `global_batch_size` (the result's, or a
// --set one) and its evaluations, into o.steps and o.evals.
void time_longest_run(const PublishedResult& result, std::int64_t global_batch_size,
                      SimulationOptions& o);

}  // namespace mlbert::simulate
