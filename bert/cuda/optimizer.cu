// Multi-tensor L2 norm, Adam/AdamW, LAMB and the loss-scale update (see optimizer.h).
#include "bert/cuda/optimizer.h"

#include <stdexcept>
#include <string>

#include "bert/cuda/common.cuh"

namespace mlbert::cuda {
namespace {

constexpr int kChunkThreads = 256;
constexpr int kFinalizeThreads = 1024;
constexpr int kFloatsPerVector = 4;

__device__ __forceinline__ bool chunk_vectorizable(const TensorChunk& chunk) {
  return chunk.offset % kFloatsPerVector == 0;
}

// Visits every element of a chunk as (index in the flat buffer, count of 1 or 4): float4 accesses
// when the chunk starts on a 16-byte boundary (parameters start at multiples of 64 elements).
template <typename Body>
__device__ __forceinline__ void for_chunk(const TensorChunk& chunk, Body body) {
  const uint64_t begin = chunk.offset;
  const uint32_t n = chunk.numel;
  if (chunk_vectorizable(chunk)) {
    const uint32_t vectors = n / kFloatsPerVector;
    for (uint32_t v = threadIdx.x; v < vectors; v += blockDim.x)
      body(begin + static_cast<uint64_t>(v) * kFloatsPerVector, true);
    for (uint32_t i = vectors * kFloatsPerVector + threadIdx.x; i < n; i += blockDim.x)
      body(begin + i, false);
  } else {
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) body(begin + i, false);
  }
}

__device__ __forceinline__ float4 load4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ void store4(float* p, float4 v) {
  *reinterpret_cast<float4*>(p) = v;
}
__device__ __forceinline__ float& lane(float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

__device__ __forceinline__ void store_compute(void* compute, ComputeCopy type, uint64_t index,
                                              const float* values, int count) {
  if (type == ComputeCopy::f16) {
    __half* dst = static_cast<__half*>(compute) + index;
    if (count == 4) {
      uint2 packed{Pair<__half>::pack(values[0], values[1]),
                   Pair<__half>::pack(values[2], values[3])};
      *reinterpret_cast<uint2*>(dst) = packed;
    } else {
      dst[0] = __float2half_rn(values[0]);
    }
  } else if (type == ComputeCopy::bf16) {
    __nv_bfloat16* dst = static_cast<__nv_bfloat16*>(compute) + index;
    if (count == 4) {
      uint2 packed{Pair<__nv_bfloat16>::pack(values[0], values[1]),
                   Pair<__nv_bfloat16>::pack(values[2], values[3])};
      *reinterpret_cast<uint2*>(dst) = packed;
    } else {
      dst[0] = __float2bfloat16_rn(values[0]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// L2 norm

struct NormPartial {
  double sum_squares;
  int nonfinite;
  int reserved;
};

__global__ void __launch_bounds__(kChunkThreads)
    l2_norm_chunk_kernel(const float* __restrict__ buffer, const TensorChunk* __restrict__ chunks,
                         NormPartial* __restrict__ partials) {
  __shared__ double scratch[kChunkThreads / kWarpSize];
  const TensorChunk chunk = chunks[blockIdx.x];
  float sum = 0.0f;
  bool nonfinite = false;
  for_chunk(chunk, [&](uint64_t index, bool vector) {
    if (vector) {
      const float4 v = load4(buffer + index);
      sum += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
      nonfinite |= !(isfinite(v.x) && isfinite(v.y) && isfinite(v.z) && isfinite(v.w));
    } else {
      const float x = buffer[index];
      sum += x * x;
      nonfinite |= !isfinite(x);
    }
  });
  const int any_nonfinite = __syncthreads_or(nonfinite);
  const double total = block_sum(static_cast<double>(sum), scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = NormPartial{total, any_nonfinite, 0};
}

__global__ void __launch_bounds__(kFinalizeThreads)
    l2_norm_finalize_kernel(const NormPartial* __restrict__ partials,
                            const uint32_t* __restrict__ first_chunk, uint32_t num_segments,
                            float* __restrict__ segment_norms, float* __restrict__ total) {
  __shared__ double scratch[kFinalizeThreads / kWarpSize];
  double all = 0.0;
  bool nonfinite = false;
  for (uint32_t s = threadIdx.x; s < num_segments; s += blockDim.x) {
    double segment = 0.0;
    for (uint32_t c = first_chunk[s]; c < first_chunk[s + 1]; ++c) {
      segment += partials[c].sum_squares;
      nonfinite |= partials[c].nonfinite != 0;
    }
    if (segment_norms != nullptr) segment_norms[s] = static_cast<float>(sqrt(segment));
    all += segment;
  }
  const int any_nonfinite = __syncthreads_or(nonfinite);
  all = block_sum(all, scratch);
  if (threadIdx.x == 0) {
    total[0] = static_cast<float>(sqrt(all));
    total[1] = any_nonfinite ? 1.0f : 0.0f;
  }
}

// ---------------------------------------------------------------------------------------------
// Adam / AdamW and LAMB

struct Moments {
  float m, v, u;
};

__device__ __forceinline__ bool skip_step(const MomentArgs& a) {
  return a.loss_scale != nullptr && a.loss_scale->found_inf != 0;
}
__device__ __forceinline__ float effective_grad_scale(const MomentArgs& a) {
  return a.loss_scale != nullptr ? a.grad_scale * a.loss_scale->step_unscale : a.grad_scale;
}

// One element's moment update; returns u = mhat / (sqrt(vhat) + eps) (+ decay terms per mode).
__device__ __forceinline__ Moments moments(const MomentArgs& a, float p, float g, float& m,
                                           float& v, bool l2_decay) {
  if (l2_decay) g += a.weight_decay * p;
  m = a.beta1 * m + (1.0f - a.beta1) * g;
  v = a.beta2 * v + (1.0f - a.beta2) * g * g;
  const float u = (m * a.bias_correction1) / (sqrtf(v * a.bias_correction2) + a.eps);
  return Moments{m, v, u};
}

__global__ void __launch_bounds__(kChunkThreads) adam_kernel(const AdamArgs a) {
  if (skip_step(a)) return;
  const TensorChunk chunk = a.table.chunks[blockIdx.x];
  const float gs = effective_grad_scale(a);
  const bool decay = chunk.weight_decay != 0 && a.weight_decay != 0.0f;
  const bool l2_decay = decay && !a.decoupled_weight_decay;
  const bool decoupled = decay && a.decoupled_weight_decay;
  for_chunk(chunk, [&](uint64_t index, bool vector) {
    const int count = vector ? kFloatsPerVector : 1;
    float4 p = vector ? load4(a.master + index) : make_float4(a.master[index], 0, 0, 0);
    float4 g = vector ? load4(a.grad + index) : make_float4(a.grad[index], 0, 0, 0);
    float4 m = vector ? load4(a.exp_avg + index) : make_float4(a.exp_avg[index], 0, 0, 0);
    float4 v = vector ? load4(a.exp_avg_sq + index) : make_float4(a.exp_avg_sq[index], 0, 0, 0);
    float updated[kFloatsPerVector];
    for (int i = 0; i < count; ++i) {
      const float pi = lane(p, i);
      Moments r = moments(a, pi, lane(g, i) * gs, lane(m, i), lane(v, i), l2_decay);
      float u = r.u;
      if (decoupled) u += a.weight_decay * pi;
      updated[i] = pi - a.lr * u;
      lane(p, i) = updated[i];
    }
    if (vector) {
      store4(a.master + index, p);
      store4(a.exp_avg + index, m);
      store4(a.exp_avg_sq + index, v);
    } else {
      a.master[index] = p.x;
      a.exp_avg[index] = m.x;
      a.exp_avg_sq[index] = v.x;
    }
    store_compute(a.compute, a.compute_copy, index, updated, count);
  });
}

struct LambPartial {
  double param_squares;
  double update_squares;
};

// Phase 1: moments, u into grad, per-chunk sums of p^2 and u^2.
__global__ void __launch_bounds__(kChunkThreads)
    lamb_moments_kernel(const LambArgs a, LambPartial* __restrict__ partials) {
  __shared__ double scratch[kChunkThreads / kWarpSize];
  if (skip_step(a)) return;
  const TensorChunk chunk = a.table.chunks[blockIdx.x];
  const float gs = effective_grad_scale(a);
  const bool decay = chunk.weight_decay != 0 && a.weight_decay != 0.0f;
  float param_squares = 0.0f, update_squares = 0.0f;
  for_chunk(chunk, [&](uint64_t index, bool vector) {
    const int count = vector ? kFloatsPerVector : 1;
    const float4 p = vector ? load4(a.master + index) : make_float4(a.master[index], 0, 0, 0);
    float4 g = vector ? load4(a.grad + index) : make_float4(a.grad[index], 0, 0, 0);
    float4 m = vector ? load4(a.exp_avg + index) : make_float4(a.exp_avg[index], 0, 0, 0);
    float4 v = vector ? load4(a.exp_avg_sq + index) : make_float4(a.exp_avg_sq[index], 0, 0, 0);
    float4 p_copy = p;
    for (int i = 0; i < count; ++i) {
      const float pi = lane(p_copy, i);
      Moments r = moments(a, pi, lane(g, i) * gs, lane(m, i), lane(v, i), false);
      const float u = decay ? r.u + a.weight_decay * pi : r.u;
      lane(g, i) = u;
      param_squares += pi * pi;
      update_squares += u * u;
    }
    if (vector) {
      store4(a.grad + index, g);
      store4(a.exp_avg + index, m);
      store4(a.exp_avg_sq + index, v);
    } else {
      a.grad[index] = g.x;
      a.exp_avg[index] = m.x;
      a.exp_avg_sq[index] = v.x;
    }
  });
  const double ps = block_sum(static_cast<double>(param_squares), scratch);
  const double us = block_sum(static_cast<double>(update_squares), scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = LambPartial{ps, us};
}

// Phase 2: one trust ratio per segment.
__global__ void __launch_bounds__(kFinalizeThreads)
    lamb_ratio_kernel(const LambArgs a, const LambPartial* __restrict__ partials,
                      float* __restrict__ ratios) {
  if (skip_step(a)) return;
  for (uint32_t s = threadIdx.x; s < a.table.num_segments; s += blockDim.x) {
    const uint32_t first = a.table.segment_first_chunk[s],
                   last = a.table.segment_first_chunk[s + 1];
    double ps = 0.0, us = 0.0;
    for (uint32_t c = first; c < last; ++c) {
      ps += partials[c].param_squares;
      us += partials[c].update_squares;
    }
    const bool decays = first < last && a.table.chunks[first].weight_decay != 0;
    float ratio = 1.0f;
    if ((decays || a.trust_ratio_without_decay) && ps > 0.0 && us > 0.0)
      ratio = static_cast<float>(sqrt(ps) / sqrt(us));
    ratios[s] = ratio;
  }
}

// Phase 3: p -= lr * ratio * u, and the compute copy.
__global__ void __launch_bounds__(kChunkThreads)
    lamb_apply_kernel(const LambArgs a, const float* __restrict__ ratios) {
  if (skip_step(a)) return;
  const TensorChunk chunk = a.table.chunks[blockIdx.x];
  const float step = a.lr * ratios[chunk.segment];
  for_chunk(chunk, [&](uint64_t index, bool vector) {
    const int count = vector ? kFloatsPerVector : 1;
    float4 p = vector ? load4(a.master + index) : make_float4(a.master[index], 0, 0, 0);
    const float4 u = vector ? load4(a.grad + index) : make_float4(a.grad[index], 0, 0, 0);
    float updated[kFloatsPerVector];
    float4 u_copy = u;
    for (int i = 0; i < count; ++i) {
      updated[i] = lane(p, i) - step * lane(u_copy, i);
      lane(p, i) = updated[i];
    }
    if (vector)
      store4(a.master + index, p);
    else
      a.master[index] = p.x;
    store_compute(a.compute, a.compute_copy, index, updated, count);
  });
}

__global__ void update_loss_scale_kernel(const float* __restrict__ total,
                                         LossScaleState* __restrict__ state,
                                         LossScaleConfig config) {
  *state = next_loss_scale(*state, total[1] != 0.0f, config);
}

void require_table(const DeviceChunkTable& t, const char* op) {
  if (t.num_chunks > 0 && (t.chunks == nullptr || t.segment_first_chunk == nullptr))
    throw std::invalid_argument(std::string(op) + ": chunk table is not on the device");
}

void require_moments(const MomentArgs& a, const char* op) {
  require_table(a.table, op);
  if (a.master == nullptr || a.grad == nullptr || a.exp_avg == nullptr || a.exp_avg_sq == nullptr)
    throw std::invalid_argument(std::string(op) +
                                ": master, grad, exp_avg and exp_avg_sq are required");
  if (a.compute_copy != ComputeCopy::none && a.compute == nullptr)
    throw std::invalid_argument(std::string(op) + ": compute copy requested without a buffer");
}

}  // namespace

size_t l2_norm_workspace_bytes(uint32_t num_chunks) {
  return static_cast<size_t>(num_chunks) * sizeof(NormPartial);
}

void l2_norm(const L2NormArgs& a, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  require_table(a.table, "l2_norm");
  if (a.total == nullptr) throw std::invalid_argument("l2_norm: total is null");
  if (workspace_bytes < l2_norm_workspace_bytes(a.table.num_chunks))
    throw std::invalid_argument("l2_norm: workspace too small");
  auto* partials = static_cast<NormPartial*>(workspace);
  if (a.table.num_chunks > 0) {
    l2_norm_chunk_kernel<<<a.table.num_chunks, kChunkThreads, 0, stream>>>(a.buffer, a.table.chunks,
                                                                           partials);
    CUDA_CHECK_LAUNCH();
  }
  l2_norm_finalize_kernel<<<1, kFinalizeThreads, 0, stream>>>(
      partials, a.table.segment_first_chunk, a.table.num_segments, a.segment_norms, a.total);
  CUDA_CHECK_LAUNCH();
}

void adam_update(const AdamArgs& a, cudaStream_t stream) {
  require_moments(a, "adam_update");
  if (a.table.num_chunks == 0) return;
  adam_kernel<<<a.table.num_chunks, kChunkThreads, 0, stream>>>(a);
  CUDA_CHECK_LAUNCH();
}

size_t lamb_workspace_bytes(uint32_t num_chunks, uint32_t num_segments) {
  return static_cast<size_t>(num_chunks) * sizeof(LambPartial) +
         static_cast<size_t>(num_segments) * sizeof(float);
}

void lamb_update(const LambArgs& a, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  require_moments(a, "lamb_update");
  if (a.table.num_chunks == 0) return;
  if (workspace_bytes < lamb_workspace_bytes(a.table.num_chunks, a.table.num_segments))
    throw std::invalid_argument("lamb_update: workspace too small");
  auto* partials = static_cast<LambPartial*>(workspace);
  auto* ratios = reinterpret_cast<float*>(partials + a.table.num_chunks);
  lamb_moments_kernel<<<a.table.num_chunks, kChunkThreads, 0, stream>>>(a, partials);
  CUDA_CHECK_LAUNCH();
  lamb_ratio_kernel<<<1, kFinalizeThreads, 0, stream>>>(a, partials, ratios);
  CUDA_CHECK_LAUNCH();
  lamb_apply_kernel<<<a.table.num_chunks, kChunkThreads, 0, stream>>>(a, ratios);
  CUDA_CHECK_LAUNCH();
}

void update_loss_scale(const float* total, LossScaleState* state, const LossScaleConfig& config,
                       cudaStream_t stream) {
  if (total == nullptr || state == nullptr)
    throw std::invalid_argument("update_loss_scale: null pointer");
  update_loss_scale_kernel<<<1, 1, 0, stream>>>(total, state, config);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mlbert::cuda
