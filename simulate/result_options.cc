// How a published implementation ran, as SimulationOptions (see result_model.h): its gradient
// path's reduction and passes, the host's issue, the shapes, the read-backs of its step.
#include <algorithm>
#include <cmath>

#include "simulate/constants.h"
#include "simulate/result_model.h"

namespace mlbert::simulate {
namespace {

// The gradient path's reduction on the wire and its own passes over the gradients.
void gradient_path_options(const PublishedLaunch& launch, SimulationOptions& o) {
  switch (launch.gradient_path.value) {
    case GradientPath::distributed_lamb:
      o.overlap = false;
      o.gradient_wire_bytes = 2;
      o.optimizer_shard = OptimizerShard::node;
      o.gradient_pass_bytes_per_parameter = kDistributedLambPassBytes;
      o.gradient_passes =
          "DistributedFusedLAMB: fp16 gradients flattened (2 + 2), their norm (2), scaled (2 + 2)";
      return;
    case GradientPath::ddp_bucket_clipping:
      o.overlap = true;
      o.gradient_wire_bytes = 2;
      o.bucket_norm_bytes_per_element = kDdpBucketNormBytes;
      o.gradient_pass_bytes_per_parameter = kAmpUnscaleBytes;
      o.gradient_passes = "amp unscale of the fp16 gradients into f32 master gradients (2 + 4)";
      return;
    case GradientPath::post_accumulation_allreduce:
      o.overlap = false;
      if (launch.fp16_allreduce) o.gradient_wire_bytes = 2;
      o.gradient_pass_bytes_per_parameter =
          kPostAccumulationPassBytes + (launch.clip_before_allreduce ? kLocalClipPassBytes : 0);
      o.gradient_passes =
          std::string(
              "amp unscale of the fp16 gradients into f32 master gradients (2 + 4), scaled "
              "into the flat allreduce buffer (4 + 2) and back (2 + 4)") +
          (launch.clip_before_allreduce ? ", --local_gradient_clip: norm (4) and scaling (4 + 4)"
                                        : "");
      return;
    case GradientPath::mlbert_buckets:
      return;
  }
}

// The read-backs before the encoder and the heads.
void read_back_options(const HostReadBacks& b, SimulationOptions& o) {
  if (b.before_encoder.value > 0) {
    o.syncs_before_encoder = b.before_encoder.value;
    o.host_notes.push_back(
        "--unpad: " + std::to_string(b.before_encoder.value) +
        " read-backs before the encoder (generate_mask: nonzero, the longest sequence, the token "
        "count; padding.py), each emptying the GPU's queue and costing a 20 us round trip");
  }
  if (b.before_heads.value > 0) {
    o.syncs_before_heads = b.before_heads.value;
    o.host_notes.push_back("--dense_seq_output: " + std::to_string(b.before_heads.value) +
                           " read-backs before the heads (nonzero of the masked positions and a "
                           "boolean-mask index: dynamic shapes; modeling.py)");
  }
}

// Samsung's own path: DDP with the bucket-wise clipping hook, apex amp O2, DDP's buffer broadcast.
void ddp_host_options(const HostReadBacks& b, SimulationOptions& o) {
  const double eager_op = kPytorchEagerOpSeconds, launch = kDriverLaunchSeconds;
  if (!b.per_bucket_hook.value) return;
  o.sync_per_bucket = true;
  o.bucket_hook_seconds = kBucketHookOps * (eager_op + launch);
  o.host_notes.push_back(
      "DDP communication hook (Samsung's run_pretraining.py): a read-back per gradient bucket "
      "(the clip coefficient, a CUDA tensor, passed as apex multi_tensor_scale's float argument) "
      "as backward finishes it, and " +
      std::to_string(kBucketHookOps) + " eager ops with a launch each (" +
      std::to_string(static_cast<int>(std::lround(o.bucket_hook_seconds * 1e6))) + " us of host)");
  if (b.loss_scaler.value) {
    o.sync_after_backward = true;
    o.host_seconds_per_tensor = kAmpEagerOpsPerTensor * eager_op + kAmpLaunchesPerTensor * launch;
    o.host_notes.push_back(
        "--use_apex_amp: the loss scaler reads its overflow flag back after backward; then per "
        "parameter tensor amp's empty_like of the f32 master gradient and zero_grad's detach and "
        "zero_ (" +
        std::to_string(kAmpEagerOpsPerTensor) + " eager ops, " +
        std::to_string(kAmpLaunchesPerTensor) + " launch: " +
        std::to_string(static_cast<int>(std::lround(o.host_seconds_per_tensor * 1e6))) +
        " us a tensor) run on the host while the GPU does the passes and the optimizer");
  }
  if (b.buffer_broadcast.value) {
    const bert::BertConfig model = bert::BertConfig::preset("bert-large");
    const double h = static_cast<double>(model.hidden_size);
    o.forward_broadcast_bytes = static_cast<double>(model.num_hidden_layers) * (3 * h * h + 3 * h) *
                                kFmhaBufferBytesPerElement;
    o.host_notes.push_back(
        "DDP's broadcast_buffers (on by default): before each forward rank 0 broadcasts the "
        "module buffers, the FMHA layers' fused QKV weights and biases (fmha.py registers them as "
        "buffers): " +
        std::to_string(static_cast<long long>(o.forward_broadcast_bytes)) +
        " bytes of fp16, NCCL's ring broadcast, exposed");
  }
}

}  // namespace

SimulationOptions simulation_options_for(const PublishedResult& result, SimulationOptions base) {
  const PublishedLaunch& launch = result.launch;
  gradient_path_options(launch, base);
  switch (launch.host_issue.value) {
    case HostIssue::cuda_graphs:
      base.host_seconds_per_kernel = 0;
      base.host_issue = "--use_cuda_graph: replayed CUDA graphs";
      break;
    case HostIssue::eager_python:
      base.host_seconds_per_kernel = kPytorchEagerOpSeconds + kDriverLaunchSeconds;
      base.host_issue = "eager " + result.framework +
                        " from Python: ~7 us per op (pytorch/pytorch#41383) + a 3 us launch";
      break;
    case HostIssue::cpp_launches:
      break;
  }
  base.padded = launch.padded();
  base.padded_attention = launch.shapes.value == Shapes::fully_padded;
  base.packing = launch.packing;
  read_back_options(launch.read_backs, base);
  ddp_host_options(launch.read_backs, base);
  return base;
}

void time_longest_run(const PublishedResult& result, std::int64_t global_batch_size,
                      SimulationOptions& o) {
  std::int64_t steps = 0, evals = 0;
  for (const PublishedRun& run : result.runs) {
    steps = std::max(steps, run.steps(global_batch_size));
    evals = std::max(evals, run.evals);
  }
  o.steps = steps;
  o.evals = evals;
}

}  // namespace mlbert::simulate
