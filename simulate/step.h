// One training step of the simulated run (internal to the simulator): the gradient buckets and
// where backward finishes each, what a step costs besides its kernels (the reductions, a sharded
// update's all-gather, the passes, the optimizer), the host events inside a micro-step, and the
// step's timeline, each micro-step paced by its slowest rank.
//
// Design choice: the buckets are harness::make_buckets over the real parameter layout in backward
// order, and each bucket's reduction starts when the slowest rank's backward has finished it (by
// backward FLOPs), on one stream in bucket order; only what is left after backward counts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bert/config.h"
#include "harness/config/system_config.h"
#include "simulate/kernels.h"
#include "simulate/network.h"
#include "simulate/profile.h"
#include "simulate/simulator.h"
#include "simulate/workload.h"

namespace mlbert::simulate {

// Backward FLOPs each tensor's gradient needs before it is final, as coefficients of the
// micro-batch's tokens T, squared tokens Q and masked predictions P (docs/reference.md,
// "Compute": backward = 2 x forward).
struct BackwardWork {
  double tokens = 0, squares = 0, predictions = 0;
};

// The bucket layout on the wire and where in backward each bucket becomes final.
struct BucketPlan {
  std::vector<double> bytes;         // per bucket, on the wire
  std::vector<double> norm_seconds;  // per bucket: one read of its f32 gradients
  std::vector<BackwardWork> done;    // backward work finished when the bucket is final
  std::vector<std::size_t> ends;     // per bucket: the gradient elements final with it
  BackwardWork total;
  std::size_t tensors = 0;   // parameter tensors
  double parameters = 0;     // elements of all tensors
  double flat_elements = 0;  // of the gradient buffer
};

// `model`'s gradients in run.bucket_mb buckets: `wire_bytes` per element on the wire, each
// bucket's norm pass reading `norm_bytes` per element at the memory rate.
BucketPlan plan_buckets(const bert::BertConfig& model, const harness::RunSpec& run,
                        double wire_bytes, double norm_bytes, double memory_bytes_per_second);

// The load balancing's exchange, in words.
const char* exchange_description(harness::LoadBalancing balancing);

// One evaluation: rank r evaluates samples [r N / W, (r+1) N / W) in batches, as load_eval_share
// splits them, each batch timed by the model's eval kernels; the slowest rank plus the allreduce of
// the counts.
double evaluation_seconds(const LengthSource& lengths, const harness::RunSpec& run, int world,
                          const KernelPlan& plan, const KernelRates& rates,
                          const SimulationOptions& options, const NetworkSpec& network);

// The implementation's host events inside a training micro-step (SimulationOptions): read-backs
// before the encoder and the heads, and after each gradient bucket's last kernel its hook.
std::vector<HostEvent> micro_step_events(const KernelPlan& kernels, const BucketPlan& buckets,
                                         const SimulationOptions& o);

// What a step costs besides the micro-steps' kernels: each bucket's reduction, the all-gather of a
// sharded update, the norm and scaling passes, the optimizer.
struct StepCosts {
  std::vector<double> bucket_seconds;
  std::map<std::string, int> choices;  // algorithm/protocol -> buckets
  double shard = 1;                    // ranks the optimizer is sharded over
  double gather_seconds = 0;
  bool own_passes = false;  // the implementation's passes replace mlbert's clip pass
  double clip_seconds = 0;
  double optimizer_seconds = 0;
};

StepCosts step_costs(const BucketPlan& plan, const harness::RunSpec& run,
                     const SimulationOptions& options, const AcceleratorProfile& profile,
                     const NetworkSpec& network);

// What every step of one timing shares: the run, the kernels, the bucket plan and its costs under
// one profile and network, and the implementation's host events.
struct StepContext {
  const harness::RunSpec& run;
  const SimulationOptions& options;
  const KernelPlan& kernels;
  const BucketPlan& buckets;
  const StepCosts& costs;
  const NetworkSpec& network;
  KernelRates rates;
  std::vector<HostEvent> events;
  double broadcast = 0;           // the forward's buffer broadcast, before every micro-step
  double between_steps_host = 0;  // what the GPU waits for of the host's work after backward
  double fixed = 0;               // the profile's fixed cost per step
};

// One step: its micro-steps `work[0 .. accumulation)`, each paced by its slowest rank, then the
// reductions, passes and optimizer. Adds to `p`'s stream and host-bound figures and to
// `straggler_sum` (slowest / mean per micro-step).
StepBreakdown time_step(const StepContext& c, const MicroStepWork* work, Prediction& p,
                        double& straggler_sum);

}  // namespace mlbert::simulate
