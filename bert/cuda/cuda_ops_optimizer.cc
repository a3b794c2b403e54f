// CudaOps' optimizer and loss scaling: the device chunk tables of the flat buffers, global norms,
// bucket clipping, Adam and LAMB (multi_tensor.h, optimizer.cu), the device loss scaler.
#include "bert/cuda/cuda_ops.h"

#include <algorithm>
#include <string>

#include "bert/cuda/cuda_check.h"
#include "bert/cuda/cuda_ops_checks.h"

namespace mlbert::cuda {

using namespace ops_checks;

// ---- optimizer
// ------------------------------------------------------------------------------------

const DeviceChunkTable& CudaOps::chunk_table(std::span<const bert::TensorSegment> segments,
                                             size_t buffer_elements) {
  for (const CachedTable& t : tables_) {
    if (t.buffer_elements == buffer_elements && same_segments(t.segments, segments)) return t.table;
  }
  const ChunkTable host = build_chunk_table(segments, buffer_elements);
  CachedTable cached;
  cached.segments.assign(segments.begin(), segments.end());
  cached.buffer_elements = buffer_elements;
  const size_t chunk_bytes = align_up(host.chunks.size() * sizeof(TensorChunk));
  const size_t first_bytes = host.segment_first_chunk.size() * sizeof(uint32_t);
  cached.device = device_malloc(chunk_bytes + first_bytes);
  char* base = static_cast<char*>(cached.device);
  // On stream_, ahead of the kernels that read the table. A plain cudaMemcpy runs on the legacy
  // default stream, which stream_ (non-blocking) is not ordered after, and from pageable memory it
  // returns once the bytes are staged, before they land: the first kernel could read the table
  // half-written. From pageable memory the async call also returns only after staging `host`.
  if (!host.chunks.empty())
    CUDA_CHECK(cudaMemcpyAsync(base, host.chunks.data(), host.chunks.size() * sizeof(TensorChunk),
                               cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(base + chunk_bytes, host.segment_first_chunk.data(), first_bytes,
                             cudaMemcpyHostToDevice, stream_));
  cached.table.chunks = reinterpret_cast<const TensorChunk*>(base);
  cached.table.segment_first_chunk = reinterpret_cast<const uint32_t*>(base + chunk_bytes);
  cached.table.num_chunks = static_cast<uint32_t>(host.chunks.size());
  cached.table.num_segments = static_cast<uint32_t>(segments.size());
  tables_.push_back(std::move(cached));
  return tables_.back().table;
}

void CudaOps::l2_norm(const bert::L2NormParams& p) {
  const char* op = "l2_norm";
  require_tensor(p.buffer, DType::f32, 0, op, "buffer");
  require_tensor(p.total, DType::f32, 2, op, "total");
  if (p.segment_norms.defined())
    require_tensor(p.segment_norms, DType::f32, p.segments.size(), op, "segment_norms");
  const DeviceChunkTable& table = chunk_table(p.segments, p.buffer.numel);
  L2NormArgs a;
  a.buffer = p.buffer.as<const float>();
  a.table = table;
  a.segment_norms = p.segment_norms.defined() ? p.segment_norms.as<float>() : nullptr;
  a.total = p.total.as<float>();
  const size_t bytes = l2_norm_workspace_bytes(table.num_chunks);
  cuda::l2_norm(a, scratch(std::max<size_t>(bytes, 1)), std::max<size_t>(bytes, 1), stream_);
}

void CudaOps::scale(Tensor x, float factor) {
  require_tensor(x, DType::f32, 0, "scale", "x");
  scale_f32(x.as<float>(), factor, static_cast<int64_t>(x.numel), stream_);
}

void CudaOps::bucket_clip(const bert::BucketClipParams& p) {
  require_tensor(p.x, DType::f32, 0, "bucket_clip", "x");
  require_tensor(p.total, DType::f32, 2, "bucket_clip", "total");
  require(p.num_buckets >= 1 && p.world >= 1 && p.loss_scale > 0, "bucket_clip",
          "needs num_buckets >= 1, world >= 1 and a positive loss scale");
  bucket_clip_f32(p.x.as<float>(), static_cast<int64_t>(p.x.numel), p.total.as<const float>(),
                  p.loss_scale, static_cast<int64_t>(p.num_buckets), p.world, stream_);
}

namespace {
template <typename Params>
void fill_moments(MomentArgs& a, const Params& p, const char* op, const DeviceChunkTable& table) {
  const size_t n = p.master.numel;
  require_tensor(p.master, DType::f32, n, op, "master");
  require_tensor(p.grad, DType::f32, n, op, "grad");
  require_tensor(p.exp_avg, DType::f32, n, op, "exp_avg");
  require_tensor(p.exp_avg_sq, DType::f32, n, op, "exp_avg_sq");
  require(p.step >= 1, op, "step counts from 1");
  a.master = p.master.template as<float>();
  a.grad = p.grad.template as<float>();
  a.exp_avg = p.exp_avg.template as<float>();
  a.exp_avg_sq = p.exp_avg_sq.template as<float>();
  if (p.compute.defined() && p.compute.data != p.master.data) {
    require(p.compute.numel >= n, op, "compute holds fewer elements than master");
    if (p.compute.dtype == DType::f16)
      a.compute_copy = ComputeCopy::f16;
    else if (p.compute.dtype == DType::bf16)
      a.compute_copy = ComputeCopy::bf16;
    else
      throw std::invalid_argument(std::string(op) + ": compute must be f16 or bf16");
    a.compute = p.compute.data;
  }
  a.table = table;
  a.lr = p.lr;
  a.beta1 = p.beta1;
  a.beta2 = p.beta2;
  a.eps = p.eps;
  a.weight_decay = p.weight_decay;
  a.grad_scale = p.grad_scale;
  if (p.bias_correction) {
    a.bias_correction1 = static_cast<float>(
        1.0 / (1.0 - std::pow(static_cast<double>(p.beta1), static_cast<double>(p.step))));
    a.bias_correction2 = static_cast<float>(
        1.0 / (1.0 - std::pow(static_cast<double>(p.beta2), static_cast<double>(p.step))));
  }
}
}  // namespace

void CudaOps::adam_update(const bert::AdamParams& p) {
  const char* op = "adam_update";
  AdamArgs a;
  fill_moments(a, p, op, chunk_table(p.segments, p.master.numel));
  a.decoupled_weight_decay = p.mode == bert::AdamMode::adamw;
  a.loss_scale = loss_scale_;
  cuda::adam_update(a, stream_);
}

void CudaOps::lamb_update(const bert::LambParams& p) {
  const char* op = "lamb_update";
  LambArgs a;
  const DeviceChunkTable& table = chunk_table(p.segments, p.master.numel);
  fill_moments(a, p, op, table);
  a.trust_ratio_without_decay = p.trust_ratio_without_decay;
  a.loss_scale = loss_scale_;
  const size_t bytes = lamb_workspace_bytes(table.num_chunks, table.num_segments);
  cuda::lamb_update(a, scratch(std::max<size_t>(bytes, 1)), std::max<size_t>(bytes, 1), stream_);
}

void CudaOps::enable_device_loss_scaling(const LossScaleConfig& config) {
  if (loss_scale_ == nullptr)
    loss_scale_ = static_cast<LossScaleState*>(device_malloc(sizeof(LossScaleState)));
  loss_scale_config_ = config;
  const LossScaleState initial = initial_loss_scale_state(config);
  // On stream_, after the kernels already queued that may read the state and before the next
  // update_loss_scale (see chunk_table for why not a plain cudaMemcpy).
  CUDA_CHECK(
      cudaMemcpyAsync(loss_scale_, &initial, sizeof(initial), cudaMemcpyHostToDevice, stream_));
}

void CudaOps::disable_device_loss_scaling() {
  if (loss_scale_ == nullptr) return;
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  CUDA_CHECK(cudaFree(loss_scale_));
  loss_scale_ = nullptr;
}

void CudaOps::update_loss_scale(Tensor total) {
  require(loss_scale_ != nullptr, "update_loss_scale", "device loss scaling is not enabled");
  require_tensor(total, DType::f32, 2, "update_loss_scale", "total");
  cuda::update_loss_scale(total.as<const float>(), loss_scale_, loss_scale_config_, stream_);
}

LossScaleState CudaOps::loss_scale_state() {
  require(loss_scale_ != nullptr, "loss_scale_state", "device loss scaling is not enabled");
  LossScaleState state;
  CUDA_CHECK(cudaMemcpyAsync(&state, loss_scale_, sizeof(state), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  return state;
}

}  // namespace mlbert::cuda
