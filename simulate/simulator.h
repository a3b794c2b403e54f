// `mlbert simulate`'s model of one training run: samples to converge, then every step of every
// rank timed from an accelerator profile, mlbert's traced kernels and a network model, then the
// evaluations.
//
// Design choice: the simulator runs the harness's own pieces in place of the model and the
// communicator: the Sampler and load balancer deal each step (workload.h), the real model's
// kernels time each rank's micro-step (kernels.h), the gradient buckets are make_buckets over the
// real parameter layout in backward order, and each bucket's reduction starts when the slowest
// rank's backward has finished it, on one stream in bucket order; only what is left after
// backward counts. What the implementation adds around the model (the host's cost per kernel,
// padded shapes, a sharded optimizer, its own passes over the gradients) is a SimulationOptions
// field, set from a published run's launch line or left at mlbert's. Time to train = run start +
// steps + evaluations (init is not in the score). Every constant that is not from the profile or
// the system is named in Prediction::assumptions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bert/config.h"
#include "harness/config/system_config.h"
#include "simulate/constants.h"
#include "simulate/convergence.h"
#include "simulate/kernels.h"
#include "simulate/network.h"
#include "simulate/profile.h"
#include "simulate/workload.h"

namespace mlbert::simulate {

// What a prediction needs: the machine and the run.
struct ClusterRun {
  std::string name;         // the system (file stem or result folder)
  std::string accelerator;  // accelerator model name
  NetworkSpec network;      // nodes, GPUs per node, links
  harness::RunSpec run;     // the harness's run settings
  bert::BertConfig model;
  std::vector<std::string> notes;  // where values came from when not stated (results folders)
  int world() const { return network.ranks(); }
};

// A system file's cluster: topology.* for the machine, run.* for the run.
ClusterRun cluster_from_system(const harness::SystemConfig& system);

enum class OptimizerShard { none, node, world };
const char* to_string(OptimizerShard shard);
// "none", "node" or "world"; throws std::invalid_argument otherwise.
OptimizerShard optimizer_shard_from_string(const std::string& text);

// The most samples per packed row a run may state (NVIDIA packs 2 or 3 into 512 tokens).
inline constexpr int kMaxPacking = 64;

struct SimulationOptions {
  enum class Lengths { mlperf_bin_mix, shards };
  Lengths lengths = Lengths::mlperf_bin_mix;
  std::filesystem::path data_dir;       // Lengths::shards
  std::int64_t bin_mix_rows = 1 << 22;  // training samples of the bin-mix table
  std::uint64_t length_seed = 12345;
  // Bytes per gradient element on the wire: mlbert reduces its f32 gradient buffer.
  double gradient_wire_bytes = 4;
  // Allreduce each bucket as backward finishes it (mlbert); false: every bucket after backward.
  bool overlap = true;
  // While the allreduce stream is busy, backward's compute runs this much slower (0.189: 1.189x
  // the time); the time it loses counts as exposed communication.
  double overlap_slowdown = kOverlapComputeSlowdown;
  // The host's cost per kernel, and what it stands for: mlbert issues its kernels from C++.
  double host_seconds_per_kernel = kDriverLaunchSeconds;
  std::string host_issue = "mlbert's C++ launches: cuLaunchKernel, 3 us (tritonbench#1017)";
  // Kernels run on padded micro-batches (sequences x run.max_seq_length tokens; attention on the
  // real lengths), as an implementation with static shapes (CUDA graphs) does.
  bool padded = false;
  // With `padded`: attention on the padded length too (an implementation that never removes the
  // padding, e.g. NVIDIA's run_pretraining.py without --unpad).
  bool padded_attention = false;
  // Samples per padded row (packed samples): a padded micro-batch of n sequences is ceil(n /
  // packing) rows of run.max_seq_length tokens; at most kMaxPacking.
  int packing = 1;
  // The optimizer's state and update sharded over the node's GPUs or the world: each rank updates
  // 1/g of the parameters, the gradients are reduce-scattered (then, sharded by node, allreduced
  // between nodes) and the updated parameters all-gathered in the compute dtype.
  OptimizerShard optimizer_shard = OptimizerShard::none;
  // Bytes per gradient element of a bucket's norm pass in backward (bucket-before-allreduce
  // clipping): mlbert reads its f32 bucket once.
  double bucket_norm_bytes_per_element = sizeof(float);
  // An implementation's own passes over the gradients per step after their reduction (bytes per
  // parameter), which then replace mlbert's after-allreduce clip pass; with what they are.
  double gradient_pass_bytes_per_parameter = 0;
  std::string gradient_passes;
  // What a published implementation's host does that mlbert's does not (mlbert reads nothing
  // back inside a step and keeps its parameters in one flat buffer; all off by default):
  // read-backs before the encoder (unpadding reads the sequence lengths back) and before the
  // heads (the masked positions as a dynamic shape); a read-back per gradient bucket in backward
  // inside a communication hook costing `bucket_hook_seconds` of host work; a read-back after
  // backward (a loss scaler's overflow flag), after which the host spends
  // `host_seconds_per_tensor` on each parameter tensor (optimizer and zero_grad loops in Python)
  // while the GPU runs the passes and the optimizer it issues; a broadcast of
  // `forward_broadcast_bytes` before every forward (DDP's module buffers). `host_notes` says
  // where each comes from.
  int syncs_before_encoder = 0;
  int syncs_before_heads = 0;
  bool sync_per_bucket = false;
  double bucket_hook_seconds = 0;
  bool sync_after_backward = false;
  double host_seconds_per_tensor = 0;
  double forward_broadcast_bytes = 0;
  std::vector<std::string> host_notes;
  // Simulate exactly this many steps with this many evaluations (a published run's own count)
  // instead of running to the convergence point.
  std::optional<std::int64_t> steps;
  std::optional<std::int64_t> evals;
};

// How a run's implementation is simulated, in words ("the step replayed from CUDA graphs, packed
// rows, optimizer sharded in the node"): a fixed cost per step (AcceleratorProfile) is fitted to,
// and holds for, one such way; a step replayed from CUDA graphs has none of an eagerly issued
// step's host costs.
std::string describe_implementation(const SimulationOptions& options);

// Per-step times in seconds; they add up to the step.
struct StepBreakdown {
  double exchange = 0;      // load-balancing all-gather of the samples
  double compute = 0;       // forward + backward of the mean rank (+ per-bucket norms)
  double imbalance = 0;     // slowest rank minus the mean rank
  double exposed_comm = 0;  // gradient allreduce left after the slowest rank's backward
  double clip = 0;          // norm and scaling passes over the gradients, and their wait
  double optimizer = 0;
  double host = 0;   // between steps, the host's work the GPU waits for (after a read-back)
  double fixed = 0;  // the profile's fixed cost per step (fitted on two results; else 0)
  double total() const {
    return exchange + compute + imbalance + exposed_comm + clip + optimizer + host + fixed;
  }
  StepBreakdown& operator+=(const StepBreakdown& o);
  StepBreakdown& operator/=(double n);  // every component, e.g. a sum over steps into a mean
};

struct Prediction {
  std::string name;
  std::string accelerator;
  int nodes = 0, ranks_per_node = 0;
  std::int64_t global_batch_size = 0;
  Convergence convergence;
  std::vector<double> step_seconds;  // every simulated step
  StepBreakdown mean_step;           // averaged over the steps
  double comm_busy = 0;              // mean seconds per step the allreduce stream is busy
  double host_bound = 0;  // mean seconds per step of compute the GPU waits for the host to issue
  std::size_t kernels_per_micro_step = 0;
  double eval_seconds = 0;  // one evaluation
  double run_start_seconds = 0;
  double train_seconds = 0, eval_total_seconds = 0, total_seconds = 0;
  double straggler_ratio = 0;  // mean over micro-steps of slowest / mean forward+backward time
  std::size_t buckets = 0;
  double gradient_bytes = 0;     // per step, on the wire
  std::string allreduce_choice;  // e.g. "tree/LL128 (52 buckets)"
  std::vector<std::string> assumptions;
};

// A run drawn and dealt once, then timed under any profile: the deal depends on the profile
// only through which rank is slowest, i.e. on the ratios of its costs, so a calibration can
// change a profile's rates without drawing again.
class Simulation {
 public:
  // Deals with `deal_profile`'s linear costs. Throws std::invalid_argument / std::runtime_error
  // with the reason when the cluster cannot be simulated (no convergence figure, the sampler
  // cannot fill a step, ...).
  Simulation(ClusterRun cluster, const AcceleratorProfile& deal_profile,
             const SimulationOptions& options);
  Prediction time(const AcceleratorProfile& profile) const {
    return time(profile, cluster_.network);
  }
  // The same draw on another network (the deal does not depend on it).
  Prediction time(const AcceleratorProfile& profile, const NetworkSpec& network) const;
  const Convergence& convergence() const { return convergence_; }
  const ClusterRun& cluster() const { return cluster_; }
  const KernelPlan& kernels() const { return plan_; }
  // The rates a profile times kernels at under these options.
  KernelRates rates(const AcceleratorProfile& profile) const;

 private:
  ClusterRun cluster_;
  SimulationOptions options_;
  Convergence convergence_;
  KernelPlan plan_;
  LengthSource lengths_;
  std::vector<MicroStepWork> work_;
};

// The whole run: check_profile_fits, then Simulation(cluster, profile, options).time.
Prediction predict(const ClusterRun& cluster, const AcceleratorProfile& profile,
                   const SimulationOptions& options);

// Throws std::invalid_argument unless `profile` can price `cluster` (same model; a GPU run).
void check_profile_fits(const ClusterRun& cluster, const AcceleratorProfile& profile);

}  // namespace mlbert::simulate
