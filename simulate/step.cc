// One training step of the simulated run (see step.h).
#include "simulate/step.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "bert/parameters.h"
#include "harness/comm/grad_sync.h"

namespace mlbert::simulate {
namespace {

// The backward work after which the gradient of `info` is final.
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

}  // namespace

BucketPlan plan_buckets(const bert::BertConfig& model, const harness::RunSpec& run,
                        double wire_bytes, double norm_bytes, double memory_bytes_per_second) {
  const auto layout = bert::bert_parameter_layout(model);
  const std::size_t flat = bert::flat_size_of(layout);
  const auto buckets =
      harness::make_buckets(layout, flat, harness::bucket_elements_for(run.bucket_mb));
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

StepCosts step_costs(const BucketPlan& plan, const harness::RunSpec& run,
                     const SimulationOptions& options, const AcceleratorProfile& profile,
                     const NetworkSpec& network) {
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

}  // namespace mlbert::simulate
