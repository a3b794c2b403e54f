// `mlbert simulate`'s model of one training run: samples to converge, then every step of every
// rank timed from an accelerator profile and a network model, then the evaluations.
//
// Design choice: the simulator runs the harness's own pieces in place of the model and the
// communicator: the Sampler and load balancer deal each step (workload.h), the gradient buckets
// are make_buckets over the real parameter layout in backward order, and each bucket's allreduce
// starts when the slowest rank's backward has finished it, on one stream in bucket order; only
// what is left after backward counts. Time to train = run start + steps + evaluations (init is not
// in the score). Every constant that is not from the profile or the system is named in
// Prediction::assumptions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bert/config.h"
#include "harness/simulate/network.h"
#include "harness/simulate/profile.h"
#include "harness/simulate/workload.h"
#include "harness/system_config.h"

namespace mlbert::harness::simulate {

// What a prediction needs: the machine and the run.
struct ClusterRun {
  std::string name;         // the system (file stem or result folder)
  std::string accelerator;  // accelerator model name
  NetworkSpec network;      // nodes, GPUs per node, links
  RunSpec run;              // the harness's run settings
  bert::BertConfig model;
  std::vector<std::string> notes;  // where values came from when not stated (results folders)
  int world() const { return network.ranks(); }
};

// A system file's cluster: topology.* for the machine, run.* for the run.
ClusterRun cluster_from_system(const SystemConfig& system);

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
  // Simulate exactly this many steps with this many evaluations (a published run's own count)
  // instead of running to the convergence point.
  std::optional<std::int64_t> steps;
  std::optional<std::int64_t> evals;
};

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
Convergence convergence_for(const RunSpec& run);

// Per-step times in seconds; they add up to the step.
struct StepBreakdown {
  double exchange = 0;      // load-balancing all-gather of the samples
  double compute = 0;       // forward + backward of the mean rank (+ per-bucket norms)
  double imbalance = 0;     // slowest rank minus the mean rank
  double exposed_comm = 0;  // gradient allreduce left after the slowest rank's backward
  double clip = 0;          // after-allreduce clipping: global-norm pass and its wait
  double optimizer = 0;
  double total() const { return exchange + compute + imbalance + exposed_comm + clip + optimizer; }
  StepBreakdown& operator+=(const StepBreakdown& o);
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
  double eval_seconds = 0;           // one evaluation
  double run_start_seconds = 0;
  double train_seconds = 0, eval_total_seconds = 0, total_seconds = 0;
  double straggler_ratio = 0;  // mean over micro-steps of slowest / mean forward+backward time
  std::size_t buckets = 0;
  double gradient_bytes = 0;     // per step, on the wire
  std::string allreduce_choice;  // e.g. "tree/LL128 (52 buckets)"
  std::vector<std::string> assumptions;
};

// A run drawn and dealt once, then timed under any profile: the deal depends on the profile
// only through which rank is slowest, i.e. on the ratios of its training costs, so a calibration
// can rescale a profile without drawing again.
class Simulation {
 public:
  // Throws std::invalid_argument / std::runtime_error with the reason when the cluster cannot be
  // simulated (no convergence figure, the sampler cannot fill a step, ...).
  Simulation(ClusterRun cluster, const WorkCost& deal_cost, const SimulationOptions& options);
  Prediction time(const AcceleratorProfile& profile) const {
    return time(profile, cluster_.network);
  }
  // The same draw on another network (the deal does not depend on it).
  Prediction time(const AcceleratorProfile& profile, const NetworkSpec& network) const;
  const Convergence& convergence() const { return convergence_; }
  const ClusterRun& cluster() const { return cluster_; }

 private:
  ClusterRun cluster_;
  SimulationOptions options_;
  Convergence convergence_;
  LengthSource lengths_;
  std::vector<MicroStepWork> work_;
};

// The whole run: check_profile_fits, then Simulation(cluster, profile.train, options).time.
Prediction predict(const ClusterRun& cluster, const AcceleratorProfile& profile,
                   const SimulationOptions& options);

// Throws std::invalid_argument unless `profile` can price `cluster` (same model; a GPU run).
void check_profile_fits(const ClusterRun& cluster, const AcceleratorProfile& profile);

}  // namespace mlbert::harness::simulate
