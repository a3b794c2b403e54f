// The run model: the run dealt once, then timed step by step (step.h) and its evaluations, with
// the assumptions it names (see simulator.h).
#include "simulate/simulator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "harness/config/model_spec.h"
#include "simulate/assumptions.h"
#include "simulate/step.h"

namespace mlbert::simulate {

const char* to_string(OptimizerShard shard) {
  switch (shard) {
    case OptimizerShard::none:
      return "none";
    case OptimizerShard::node:
      return "node";
    case OptimizerShard::world:
      return "world";
  }
  return "?";
}

OptimizerShard optimizer_shard_from_string(const std::string& text) {
  for (OptimizerShard s : {OptimizerShard::none, OptimizerShard::node, OptimizerShard::world})
    if (text == to_string(s)) return s;
  throw std::invalid_argument("\"" + text + "\" is not an optimizer sharding (none, node, world)");
}

std::string describe_implementation(const SimulationOptions& s) {
  std::string text = s.host_seconds_per_kernel > 0
                         ? "kernels issued one by one (" +
                               std::to_string(std::llround(s.host_seconds_per_kernel * 1e6)) +
                               " us each)"
                         : "the step replayed from CUDA graphs";
  text += s.packing > 1 ? ", packed rows" : s.padded ? ", padded sequences" : ", unpadded";
  text += std::string(", optimizer ") + (s.optimizer_shard == OptimizerShard::none ? "unsharded"
                                         : s.optimizer_shard == OptimizerShard::node
                                             ? "sharded in the node"
                                             : "sharded over the world");
  if (s.syncs_before_encoder + s.syncs_before_heads > 0 || s.sync_per_bucket ||
      s.sync_after_backward)
    text += ", read-backs inside the step";
  return text;
}

StepBreakdown& StepBreakdown::operator+=(const StepBreakdown& o) {
  exchange += o.exchange;
  compute += o.compute;
  imbalance += o.imbalance;
  exposed_comm += o.exposed_comm;
  clip += o.clip;
  optimizer += o.optimizer;
  host += o.host;
  fixed += o.fixed;
  return *this;
}

StepBreakdown& StepBreakdown::operator/=(double n) {
  exchange /= n;
  compute /= n;
  imbalance /= n;
  exposed_comm /= n;
  clip /= n;
  optimizer /= n;
  host /= n;
  fixed /= n;
  return *this;
}

ClusterRun cluster_from_system(const harness::SystemConfig& system) {
  const harness::Topology& t = system.topology;
  ClusterRun c;
  c.name = system.name;
  c.accelerator = t.accelerator.model;
  c.network.nodes = t.nodes;
  c.network.gpus_per_node = t.ranks_per_node;
  // System files state NVLink as both directions together (600 GB/s for A100).
  c.network.nvlink_gbs = t.intra_node_bandwidth_gbs / 2;
  c.network.nics_per_node = static_cast<int>(t.nics.size());
  for (const harness::NicSpec& nic : t.nics) c.network.nic_gbs_per_node += nic.bandwidth_gbps / 8;
  c.run = system.run;
  c.model = model_from_spec(system.run.model, system.path);
  if (system.run.model.vocab_from_data)
    c.notes.push_back("run.model.vocab_from_data: the preset's vocabulary is used");
  return c;
}

void check_profile_fits(const ClusterRun& cluster, const AcceleratorProfile& profile) {
  const bert::BertConfig priced = bert::BertConfig::preset(profile.model);
  if (!(priced == cluster.model))
    throw std::invalid_argument(
        "profile " + profile.path.string() + " prices " + profile.model + "; " + cluster.name +
        " trains a model of " + std::to_string(cluster.model.num_hidden_layers) + " layers x " +
        std::to_string(cluster.model.hidden_size) + " (no profile can stand for it)");
}

Simulation::Simulation(ClusterRun cluster, const AcceleratorProfile& deal_profile,
                       const SimulationOptions& options)
    : cluster_(std::move(cluster)), options_(options), plan_(trace_kernel_plan(cluster_.model)) {
  const harness::RunSpec& run = cluster_.run;
  const int world = cluster_.world();
  if (static_cast<std::int64_t>(run.per_rank_batch) * world * run.gradient_accumulation !=
      run.global_batch_size)
    throw std::invalid_argument(
        cluster_.name + ": per-rank batch " + std::to_string(run.per_rank_batch) + " x " +
        std::to_string(world) + " ranks x accumulation " +
        std::to_string(run.gradient_accumulation) + " is not the global batch size " +
        std::to_string(run.global_batch_size));
  if (options_.steps) {
    convergence_.steps = *options_.steps;
    convergence_.evals = options_.evals.value_or(0);
    convergence_.samples = *options_.steps * run.global_batch_size;
    convergence_.target_samples = static_cast<double>(convergence_.samples);
    convergence_.eval_interval = eval_interval(run);
    convergence_.source = "the published run's own samples and evaluations";
  } else {
    convergence_ = convergence_for(run);
  }
  lengths_ =
      options_.lengths == SimulationOptions::Lengths::mlperf_bin_mix
          ? mlperf_bin_mix_lengths(run, options_.bin_mix_rows, run.eval.eval_samples,
                                   options_.length_seed)
          : shard_lengths(options_.data_dir, run, run.eval.eval_samples, options_.length_seed);
  const KernelRates r = rates(deal_profile);
  const WorkCost deal_cost{KernelPlan::seconds_per_token(plan_.train, r),
                           KernelPlan::seconds_per_square(plan_.train, r), 0};
  work_ = deal_micro_steps(lengths_, run, world, cluster_.network.gpus_per_node, deal_cost,
                           convergence_.steps * run.gradient_accumulation);
}

KernelRates Simulation::rates(const AcceleratorProfile& profile) const {
  KernelRates r;
  r.tensor_flops_per_second = profile.tensor_flops_per_second;
  r.memory_bytes_per_second = profile.memory_bytes_per_second;
  r.multiprocessors = profile.multiprocessors;
  r.host_seconds_per_kernel = options_.host_seconds_per_kernel;
  return r;
}

Prediction predict(const ClusterRun& cluster, const AcceleratorProfile& profile,
                   const SimulationOptions& options) {
  check_profile_fits(cluster, profile);
  return Simulation(cluster, profile, options).time(profile);
}

Prediction Simulation::time(const AcceleratorProfile& profile, const NetworkSpec& network) const {
  const harness::RunSpec& run = cluster_.run;
  const int world = cluster_.world();
  if (network.ranks() != world)
    throw std::invalid_argument("simulate: a network of " + std::to_string(network.ranks()) +
                                " ranks for a run dealt on " + std::to_string(world));
  Prediction p;
  p.name = cluster_.name;
  p.accelerator = cluster_.accelerator;
  p.nodes = network.nodes;
  p.ranks_per_node = network.gpus_per_node;
  p.global_batch_size = run.global_batch_size;
  p.convergence = convergence_;
  const std::int64_t steps = p.convergence.steps;

  const BucketPlan plan =
      plan_buckets(cluster_.model, run, options_.gradient_wire_bytes,
                   options_.bucket_norm_bytes_per_element, profile.memory_bytes_per_second);
  const StepCosts costs = step_costs(plan, run, options_, profile, network);
  const StepContext c{
      .run = run,
      .options = options_,
      .kernels = plan_,
      .buckets = plan,
      .costs = costs,
      .network = network,
      .rates = rates(profile),
      .events = micro_step_events(plan_, plan, options_),
      .broadcast = broadcast_cost(network, options_.forward_broadcast_bytes).seconds,
      // After a read-back at the end of backward, the host's loops over the parameter tensors
      // run while the GPU does the passes and the optimizer they issue; what the GPU does not
      // hide.
      .between_steps_host =
          options_.sync_after_backward
              ? kReadBackSeconds + std::max(0.0, options_.host_seconds_per_tensor *
                                                         static_cast<double>(plan.tensors) -
                                                     (costs.clip_seconds + costs.optimizer_seconds))
              : 0.0,
      .fixed = profile.fixed_step_seconds};

  double straggler_sum = 0;
  p.step_seconds.reserve(static_cast<std::size_t>(steps));
  for (std::int64_t s = 0; s < steps; ++s) {
    const StepBreakdown b = time_step(
        c, &work_[static_cast<std::size_t>(s * run.gradient_accumulation)], p, straggler_sum);
    p.mean_step += b;
    p.step_seconds.push_back(b.total());
    p.train_seconds += b.total();
  }
  if (steps > 0) {
    const double n = static_cast<double>(steps);
    p.mean_step /= n;
    p.comm_busy /= n;
    p.host_bound /= n;
    p.straggler_ratio = straggler_sum / static_cast<double>(steps * run.gradient_accumulation);
  }
  p.kernels_per_micro_step = plan_.train.size();
  p.eval_seconds = evaluation_seconds(lengths_, run, world, plan_, c.rates, options_, network);
  p.eval_total_seconds = p.eval_seconds * static_cast<double>(p.convergence.evals);
  p.run_start_seconds = profile.run_start_seconds;
  p.total_seconds = p.run_start_seconds + p.train_seconds + p.eval_total_seconds;
  p.buckets = plan.bytes.size();
  p.gradient_bytes = std::accumulate(plan.bytes.begin(), plan.bytes.end(), 0.0);
  for (const auto& [name, count] : costs.choices)
    p.allreduce_choice +=
        (p.allreduce_choice.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  compute_assumptions(c, lengths_, profile, p);
  reduction_assumptions(c, cluster_, p);
  return p;
}

}  // namespace mlbert::simulate
