// The run model: convergence point, per-step timeline with overlapped bucket allreduces,
// evaluations (see simulator.h).
#include "simulate/simulator.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "bert/parameters.h"
#include "common/thousands.h"
#include "harness/comm/grad_sync.h"
#include "harness/config/model_spec.h"
#include "mlperf_logging/rcp/rcp.h"

namespace mlbert::simulate {
namespace {

std::string format_count(double x) {
  return group_thousands(std::to_string(std::llround(x)));
}

std::string format_number(double x, int precision) {
  std::ostringstream s;
  s.precision(precision);
  s << x;
  return s.str();
}

// Backward FLOPs each tensor's gradient needs before it is final, as coefficients of the
// micro-batch's tokens T, squared tokens Q and masked predictions P (REFERENCE.md section 7:
// backward = 2 x forward).
struct BackwardWork {
  double tokens = 0, squares = 0, predictions = 0;
};

BackwardWork backward_work(const bert::ParameterInfo& info, const bert::BertConfig& c) {
  const auto ends_with = [&](const char* suffix) {
    const std::string s(suffix);
    return info.name.size() >= s.size() &&
           info.name.compare(info.name.size() - s.size(), s.size(), s) == 0;
  };
  const double numel = static_cast<double>(info.numel);
  BackwardWork w;
  if (info.name == "cls/predictions/output_bias") {
    // The decoder (tied word embeddings) runs backward first; its bias is final right after.
    w.predictions = 4.0 * c.hidden_size * c.padded_vocab_size();
  } else if (info.name == "cls/predictions/transform/dense/kernel") {
    w.predictions = 4.0 * numel;
  } else if (info.name.rfind("bert/encoder/", 0) == 0 && ends_with("/kernel")) {
    w.tokens = 4.0 * numel;
    // Attention's QK^T and PV backward (8 H s^2 per layer) come just before the QKV projection.
    if (ends_with("attention/self/query/kernel")) w.squares = 8.0 * c.hidden_size;
  }
  return w;
}

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

BucketPlan plan_buckets(const bert::BertConfig& model, const harness::RunSpec& run, double wire_bytes,
                        double norm_bytes, double memory_bytes_per_second) {
  const auto layout = bert::bert_parameter_layout(model);
  const std::size_t flat = bert::flat_size_of(layout);
  const auto buckets = harness::make_buckets(layout, flat, harness::bucket_elements_for(run.bucket_mb));
  BucketPlan plan;
  plan.flat_elements = static_cast<double>(flat);
  plan.tensors = layout.size();
  std::size_t t = 0;
  for (const harness::Bucket& b : buckets) {
    while (t < layout.size() && layout[t].offset + layout[t].numel <= b.end) {
      const BackwardWork w = backward_work(layout[t], model);
      plan.total.tokens += w.tokens;
      plan.total.squares += w.squares;
      plan.total.predictions += w.predictions;
      plan.parameters += static_cast<double>(layout[t].numel);
      ++t;
    }
    plan.done.push_back(plan.total);
    plan.ends.push_back(b.end);
    plan.bytes.push_back(static_cast<double>(b.size()) * wire_bytes);
    plan.norm_seconds.push_back(static_cast<double>(b.size()) * norm_bytes /
                                memory_bytes_per_second);
  }
  return plan;
}

double exchange_seconds(const NetworkSpec& network, harness::LoadBalancing balancing,
                        double bytes_per_rank) {
  switch (balancing) {
    case harness::LoadBalancing::none:
      return 0;
    case harness::LoadBalancing::node_exchange:
      return allgather_cost(network, bytes_per_rank, true).seconds;
    case harness::LoadBalancing::global_exchange:
      return allgather_cost(network, bytes_per_rank, false).seconds;
    case harness::LoadBalancing::global_deal:
      return 0;  // every rank plans the deal itself from the length index
  }
  throw std::logic_error("simulate: unknown load balancing mode");
}

const char* exchange_description(harness::LoadBalancing balancing) {
  switch (balancing) {
    case harness::LoadBalancing::none:
      return "load balancing none: each rank trains what it sampled, nothing exchanged";
    case harness::LoadBalancing::node_exchange:
      return "node-exchange: each micro-step all-gathers the node's serialized samples over "
             "NVLink before the deal (ring all-gather)";
    case harness::LoadBalancing::global_exchange:
      return "global-exchange: each micro-step all-gathers every rank's serialized samples over "
             "the world before the deal (ring all-gather)";
    case harness::LoadBalancing::global_deal:
      return "global-deal: every rank computes global-exchange's deal itself from the sampler and "
             "the length index and reads only its own samples; nothing exchanged";
  }
  return "?";
}

// One evaluation: rank r evaluates samples [r N / W, (r+1) N / W) in batches, as load_eval_share
// splits them, each batch timed by the model's eval kernels; the slowest rank plus the allreduce of
// the counts.
double evaluation_seconds(const LengthSource& lengths, const harness::RunSpec& run, int world,
                          const KernelPlan& plan, const KernelRates& rates,
                          const SimulationOptions& options, const NetworkSpec& network) {
  const double max_length = static_cast<double>(run.max_seq_length);
  const auto n = static_cast<std::int64_t>(lengths.eval_lengths.size());
  double slowest = 0;
  for (int r = 0; r < world; ++r) {
    const std::int64_t begin = r * n / world, end = (r + 1) * n / world;
    double seconds = 0;
    for (std::int64_t first = begin; first < end; first += run.eval.batch_size) {
      MicroBatchShape shape;
      for (std::int64_t i = first; i < std::min(end, first + run.eval.batch_size); ++i) {
        const double s = lengths.eval_lengths[static_cast<std::size_t>(i)];
        shape.tokens += options.padded ? max_length : s;
        shape.squares +=
            options.padded && options.padded_attention ? max_length * max_length : s * s;
        shape.sequences += 1;
        shape.predictions += masked_predictions(static_cast<int>(s), run.max_predictions_per_seq);
      }
      seconds += KernelPlan::time(plan.eval, shape, rates).seconds;
    }
    slowest = std::max(slowest, seconds);
  }
  return slowest + allreduce_cost(network, kEvalCountBytes).seconds;
}

// The implementation's host events inside a training micro-step (SimulationOptions): read-backs
// before the encoder and the heads, and after each gradient bucket's last kernel its hook.
std::vector<HostEvent> micro_step_events(const KernelPlan& kernels, const BucketPlan& buckets,
                                         const SimulationOptions& o) {
  std::vector<HostEvent> events;
  if (o.syncs_before_encoder > 0)
    events.push_back(HostEvent{kernels.encoder_start, o.syncs_before_encoder, 0});
  if (o.syncs_before_heads > 0)
    events.push_back(HostEvent{kernels.heads_start, o.syncs_before_heads, 0});
  if (o.sync_per_bucket) {
    for (std::size_t end : buckets.ends) {
      const auto ready = std::find_if(kernels.grad_ready.begin(), kernels.grad_ready.end(),
                                      [&](const GradReady& g) { return g.flat_prefix >= end; });
      if (ready == kernels.grad_ready.end())
        throw std::logic_error("simulate: a gradient bucket the traced backward never finishes");
      events.push_back(HostEvent{ready->kernels, 1, o.bucket_hook_seconds});
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const HostEvent& a, const HostEvent& b) { return a.before < b.before; });
  return events;
}

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

StepCosts step_costs(const BucketPlan& plan, const harness::RunSpec& run, const SimulationOptions& options,
                     const AcceleratorProfile& profile, const NetworkSpec& network) {
  StepCosts c;
  const OptimizerShard shard = options.optimizer_shard;
  c.shard = shard == OptimizerShard::node    ? network.gpus_per_node
            : shard == OptimizerShard::world ? network.ranks()
                                             : 1;
  for (double bytes : plan.bytes) {
    const CollectiveCost cost =
        shard == OptimizerShard::node    ? node_sharded_reduction_cost(network, bytes)
        : shard == OptimizerShard::world ? reduce_scatter_cost(network, bytes, false)
                                         : allreduce_cost(network, bytes);
    c.bucket_seconds.push_back(cost.seconds);
    ++c.choices[std::string(to_string(cost.algorithm)) + "/" + to_string(cost.protocol)];
  }
  // A sharded update all-gathers the new parameters (compute dtype, 2 bytes) after the optimizer.
  if (c.shard > 1)
    c.gather_seconds =
        allgather_cost(network, plan.flat_elements * 2 / c.shard, shard == OptimizerShard::node)
            .seconds;
  c.own_passes = options.gradient_pass_bytes_per_parameter > 0;
  if (c.own_passes)
    c.clip_seconds = plan.parameters * options.gradient_pass_bytes_per_parameter /
                     profile.memory_bytes_per_second;
  else if (run.clipping == harness::ClippingMode::after_allreduce)
    c.clip_seconds =
        plan.flat_elements * sizeof(float) / profile.memory_bytes_per_second + kReadBackSeconds;
  c.optimizer_seconds =
      plan.parameters * profile.optimizer_seconds_per_parameter(run.optimizer.kind) / c.shard;
  return c;
}

}  // namespace

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

namespace {

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

MicroBatchShape micro_batch_shape(const StepContext& c, double tokens, double sequences,
                                  double predictions, double squares) {
  const SimulationOptions& o = c.options;
  const double rows = std::ceil(sequences / std::max(1, o.packing));
  const double length = static_cast<double>(c.run.max_seq_length);
  return MicroBatchShape{o.padded ? rows * length : tokens, sequences, predictions,
                         o.padded && o.padded_attention ? sequences * length * length : squares};
}

// The last micro-step's backward releases the buckets: forward 1/3, backward 2/3 of the slowest
// rank's micro-step starting at `start`. Each bucket's reduction starts when backward has finished
// it (by backward FLOPs) and the one allreduce stream is free; while the stream is busy, backward
// runs options.overlap_slowdown slower. Adds the stream's busy time to `comm_busy`.
struct BucketTimeline {
  double norms = 0;    // the buckets' norm passes inside backward (bucket clipping)
  double exposed = 0;  // what the reductions add to backward: the tail left after it, and the
                       // compute lost beside them
};
BucketTimeline bucket_timeline(const StepContext& c, const MicroStepWork& w, double start,
                               double slowest, double& comm_busy) {
  const BucketPlan& plan = c.buckets;
  const bool bucket_clip = c.run.clipping == harness::ClippingMode::bucket_before_allreduce;
  const double backward_start = start + slowest / 3;
  const double backward = slowest * 2 / 3;
  const double total_work = plan.total.tokens * w.slowest_tokens +
                            plan.total.squares * w.slowest_squares +
                            plan.total.predictions * w.slowest_predictions;
  const double slow = 1 + c.options.overlap_slowdown;
  BucketTimeline t;
  // Backward's clock without the slowdown (`reached`) and the time lost to it so far (`lost`):
  // backward is at `reached + lost`. The stream is busy from there to `stream_free` without a gap
  // (a reduction starts when its bucket is done or the one before ends, whichever is later).
  double reached = backward_start, lost = 0, stream_free = 0;
  const auto advance_to = [&](double target) {
    const double now = reached + lost;
    if (stream_free > now) {
      const double beside = (stream_free - now) / slow;  // backward's work beside the reductions
      if (target - reached <= beside) {
        lost += (target - reached) * (slow - 1);
        reached = target;
        return;
      }
      reached += beside;
      lost += beside * (slow - 1);
    }
    reached = target;
  };
  for (std::size_t i = 0; i < plan.bytes.size(); ++i) {
    if (bucket_clip) t.norms += plan.norm_seconds[i];
    const BackwardWork& d = plan.done[i];
    const double bucket_work = d.tokens * w.slowest_tokens + d.squares * w.slowest_squares +
                               d.predictions * w.slowest_predictions;
    const double progress = c.options.overlap && total_work > 0 ? bucket_work / total_work : 1;
    advance_to(backward_start + progress * backward + t.norms);
    stream_free = std::max(reached + lost, stream_free) + c.costs.bucket_seconds[i];
    comm_busy += c.costs.bucket_seconds[i];
  }
  const double backward_end = backward_start + backward + t.norms;
  advance_to(backward_end);
  t.exposed = std::max(0.0, std::max(backward_end + lost, stream_free) - backward_end);
  return t;
}

// One step: its micro-steps `work[0 .. accumulation)`, each paced by its slowest rank, then the
// reductions, passes and optimizer. Adds to `p`'s stream and host-bound figures and to
// `straggler_sum` (slowest / mean per micro-step).
StepBreakdown time_step(const StepContext& c, const MicroStepWork* work, Prediction& p,
                        double& straggler_sum) {
  StepBreakdown b;
  double clock = 0, exposed = 0;
  const int accumulation = c.run.gradient_accumulation;
  for (int a = 0; a < accumulation; ++a) {
    const MicroStepWork& w = work[a];
    const double exchange =
        exchange_seconds(c.network, c.run.load_balancing, w.exchange_bytes_per_rank);
    const KernelTime slow =
        KernelPlan::time(c.kernels.train,
                         micro_batch_shape(c, w.slowest_tokens, w.slowest_sequences,
                                           w.slowest_predictions, w.slowest_squares),
                         c.rates, c.events);
    const KernelTime mean_time = KernelPlan::time(
        c.kernels.train,
        micro_batch_shape(c, w.mean_tokens, w.mean_sequences, w.mean_predictions, w.mean_squares),
        c.rates, c.events);
    // The deal ranks by a linear cost; the kernel timeline of the mean work cannot exceed the
    // slowest rank's by more than rounding, and never counts as negative imbalance.
    const double slowest = slow.seconds, mean = std::min(mean_time.seconds, slowest);
    straggler_sum += slowest / mean;
    p.host_bound += mean_time.host_bound_seconds();
    b.exchange += exchange;
    b.compute += mean;
    b.imbalance += slowest - mean;
    b.exposed_comm += c.broadcast;  // before the forward, every rank waits for it
    clock += exchange + c.broadcast;
    if (a + 1 < accumulation) {
      clock += slowest;
      continue;
    }
    const BucketTimeline t = bucket_timeline(c, w, clock, slowest, p.comm_busy);
    b.compute += t.norms;
    exposed = t.exposed;
  }
  p.comm_busy += c.costs.gather_seconds;
  b.exposed_comm += exposed + c.costs.gather_seconds;
  b.clip = c.costs.clip_seconds;
  b.optimizer = c.costs.optimizer_seconds;
  b.host = c.between_steps_host;
  b.fixed = c.fixed;
  return b;
}

// The assumptions behind the compute columns: convergence, lengths, the deal, the profile, the
// kernels.
void compute_assumptions(const StepContext& c, const LengthSource& lengths,
                         const AcceleratorProfile& profile, Prediction& p) {
  auto& a = p.assumptions;
  const harness::RunSpec& run = c.run;
  const SimulationOptions& options = c.options;
  const KernelPlan& kernels = c.kernels;
  a.push_back("convergence: " + p.convergence.source +
              "; the run stops at the first evaluation "
              "at or past it (eval every " +
              format_count(p.convergence.eval_interval) + " samples)");
  a.push_back(lengths.description);
  a.push_back(std::string("sampler ") + to_string(run.sampler) + ", " +
              exchange_description(run.load_balancing) +
              "; the harness's harness::Sampler and plan_exchange deal every rank of every step");
  a.push_back("compute: profile " + profile.path.filename().string() + " (" +
              profile.provenance_kind + ": " + profile.source() +
              "): GEMM and attention kernels at " +
              format_number(profile.tensor_flops_per_second / 1e12, 4) +
              " TFLOP/s, wave-quantized over " + std::to_string(profile.multiprocessors) +
              " SMs in 128 x 128 output tiles; memory-bound kernels at " +
              format_number(profile.memory_bytes_per_second / 1e12, 4) + " TB/s");
  if (profile.fixed_step_seconds > 0) {
    const nlohmann::json& fit = profile.provenance.is_object() && profile.provenance.contains("fit")
                                    ? profile.provenance["fit"]
                                    : nlohmann::json::object();
    const std::string fitted_on =
        fit.contains("implementation") && fit["implementation"].is_string()
            ? fit["implementation"].get<std::string>()
            : "";
    const std::string here = describe_implementation(options);
    a.push_back("fixed cost per step: " + format_number(profile.fixed_step_seconds * 1e3, 4) +
                " ms on every training step, fitted with the tensor rate to two results of one "
                "implementation at different batches per GPU (the profile's provenance)" +
                (fitted_on.empty() || fitted_on == here
                     ? std::string()
                     : "; fitted where " + fitted_on + ", this run has " + here +
                           ": the cost may not carry over"));
  }
  a.push_back("kernels: mlbert's model traced (" + std::to_string(kernels.train.size()) +
              " kernels per training micro-step, " + std::to_string(kernels.eval.size()) +
              " per evaluation batch), each no earlier than the host has issued it; host " +
              format_number(options.host_seconds_per_kernel * 1e6, 3) + " us per kernel (" +
              options.host_issue + ")" +
              (options.padded && options.packing > 1
                   ? "; micro-batches padded to rows of " + std::to_string(run.max_seq_length) +
                         " tokens, " + std::to_string(options.packing) +
                         " samples packed per row (attention on the real lengths)"
               : options.padded
                   ? "; micro-batches padded to sequences x " + std::to_string(run.max_seq_length) +
                         " tokens (attention on the " +
                         (options.padded_attention ? "padded" : "real") + " lengths)"
                   : std::string("; unpadded micro-batches")) +
              "; forward = 1/3 and backward = 2/3 of a micro-step for the bucket timeline");
  a.push_back(
      "the slowest rank of each micro-step sets the pace (exact when the micro-step "
      "synchronizes all ranks)");
}

// The assumptions behind the reduction, the passes, the optimizer, the host, the evaluation and
// the network.
void reduction_assumptions(const StepContext& c, const ClusterRun& cluster, Prediction& p) {
  auto& a = p.assumptions;
  const harness::RunSpec& run = c.run;
  const SimulationOptions& options = c.options;
  const StepCosts& costs = c.costs;
  const NetworkSpec& network = c.network;
  a.push_back("gradients: " + std::to_string(p.buckets) + " buckets of run.bucket_mb " +
              format_number(run.bucket_mb, 4) +
              " MiB of f32 (harness::make_buckets over the parameter layout of " +
              std::to_string(cluster.model.num_hidden_layers) + " x " +
              std::to_string(cluster.model.hidden_size) + ", backward order), " +
              format_number(options.gradient_wire_bytes, 2) +
              " bytes per element on the wire, "
              "one allreduce stream in bucket order, " +
              (options.overlap ? std::string("each started when the slowest rank's backward has "
                                             "finished the bucket (by backward FLOPs)")
                               : std::string("all started after backward (no overlap)")));
  if (options.overlap && options.overlap_slowdown > 0)
    a.push_back("backward runs " + format_number(options.overlap_slowdown * 100, 3) +
                "% slower while a reduction runs beside it (simulate.overlap_slowdown; Lee et al., "
                "arXiv 2507.03114: 18.9% on average and 40.0% at most, GPT and LLaMA training on 4 "
                "A100s, H100s, MI250s or MI210s); the time it loses counts as exposed "
                "communication");
  switch (run.clipping) {
    case harness::ClippingMode::after_allreduce:
      if (!costs.own_passes)
        a.push_back(
            "clipping after allreduce: one read of the f32 gradient buffer for the global "
            "norm plus a 20 us host round trip, after the last bucket");
      break;
    case harness::ClippingMode::bucket_before_allreduce:
      a.push_back("bucket-before-allreduce clipping: each bucket's local norm (" +
                  format_number(options.bucket_norm_bytes_per_element, 3) +
                  " bytes per gradient element) runs in backward before its reduction; no "
                  "global-norm pass");
      break;
    case harness::ClippingMode::none:
      a.push_back("no clipping: no norm pass");
      break;
  }
  if (costs.own_passes)
    a.push_back(
        "gradient passes of the implementation after the reduction: " + options.gradient_passes +
        " (" + format_number(options.gradient_pass_bytes_per_parameter, 3) +
        " bytes per parameter per step at the memory rate)" +
        (run.clipping == harness::ClippingMode::after_allreduce
             ? "; they hold its norm, in place of mlbert's clip pass"
             : ""));
  if (costs.shard > 1)
    a.push_back(std::string("optimizer ") + to_string(run.optimizer.kind) + " sharded over the " +
                (options.optimizer_shard == OptimizerShard::node ? "node's " : "world's ") +
                format_count(costs.shard) +
                " ranks: " + format_number(costs.optimizer_seconds * 1e3, 3) +
                " ms per step; the gradients reduce-scattered" +
                (options.optimizer_shard == OptimizerShard::node
                     ? " in the node, each rank's share allreduced between the nodes,"
                     : ",") +
                " the updated parameters all-gathered (2 bytes each, " +
                format_number(costs.gather_seconds * 1e3, 3) + " ms, exposed)");
  else
    a.push_back(std::string("optimizer ") + to_string(run.optimizer.kind) +
                " over every parameter on every rank (not sharded): " +
                format_number(costs.optimizer_seconds * 1e3, 3) + " ms per step from the profile");
  for (const auto& note : options.host_notes) a.push_back(note);
  a.push_back("evaluation: " + format_count(static_cast<double>(run.eval.eval_samples)) +
              " samples forward split over all ranks in batches of " +
              std::to_string(run.eval.batch_size) + ", then an allreduce of the counts");
  a.push_back("time to train = run start (" + format_number(p.run_start_seconds, 3) +
              " s from the profile) + steps + evaluations; init is not in the score");
  for (const auto& line : network_assumptions(network)) a.push_back(line);
  for (const auto& note : cluster.notes) a.push_back(note);
  if (!p.convergence.reached)
    a.push_back("WARNING: run.max_steps " + std::to_string(run.max_steps) +
                " ends the run before the convergence point");
}

}  // namespace

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
