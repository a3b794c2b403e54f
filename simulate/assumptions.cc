// The assumptions of a prediction, in words (see assumptions.h).
#include "simulate/assumptions.h"

#include <nlohmann/json.hpp>

#include "simulate/format.h"

namespace mlbert::simulate {
namespace {

// The assumptions behind the gradients: their buckets and reduction, the overlap with backward,
// the clipping and the implementation's passes.
void gradient_assumptions(const StepContext& c, const ClusterRun& cluster, Prediction& p) {
  auto& a = p.assumptions;
  const harness::RunSpec& run = c.run;
  const SimulationOptions& options = c.options;
  const StepCosts& costs = c.costs;
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
}

}  // namespace

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

void reduction_assumptions(const StepContext& c, const ClusterRun& cluster, Prediction& p) {
  auto& a = p.assumptions;
  const harness::RunSpec& run = c.run;
  const SimulationOptions& options = c.options;
  const StepCosts& costs = c.costs;
  gradient_assumptions(c, cluster, p);
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
  for (const auto& line : network_assumptions(c.network)) a.push_back(line);
  for (const auto& note : cluster.notes) a.push_back(note);
  if (!p.convergence.reached)
    a.push_back("WARNING: run.max_steps " + std::to_string(run.max_steps) +
                " ends the run before the convergence point");
}

}  // namespace mlbert::simulate
