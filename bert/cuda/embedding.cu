// Fused embedding gather + sum + LayerNorm + dropout, forward and backward (see embedding.h).
#include "bert/cuda/embedding.h"

#include <stdexcept>
#include <string>

#include "bert/cuda/row_kernels.cuh"

namespace mlbert::cuda {
namespace {

using rows::kThreads;
using rows::pack_column;

// Token-type rows summed in shared memory per block (BERT has 2); more rows use global atomics.
constexpr int kSharedTokenTypeRows = 2;

// Reads the three ids of token t; false (and an error bit) when any is outside its table.
__device__ __forceinline__ bool read_ids(const EmbeddingTables& ids, int64_t t,
                                         uint32_t* error_flags, int lane, int32_t& word,
                                         int32_t& position, int32_t& segment) {
  word = ids.input_ids[t];
  position = ids.position_ids[t];
  segment = ids.segment_ids[t];
  uint32_t bad = 0;
  if (word < 0 || word >= ids.word_rows) bad |= kEmbeddingBadInputId;
  if (position < 0 || position >= ids.position_rows) bad |= kEmbeddingBadPositionId;
  if (segment < 0 || segment >= ids.token_type_rows) bad |= kEmbeddingBadSegmentId;
  if (bad != 0 && lane == 0 && error_flags != nullptr) atomicOr(error_flags, bad);
  return bad == 0;
}

// dst[0..8) += v with fp32 atomics (4-wide vector atomics where the architecture has them).
__device__ __forceinline__ void atomic_add_pack(float* dst, const float (&v)[kElementsPerPack]) {
#if __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(dst), make_float4(v[0], v[1], v[2], v[3]));
  atomicAdd(reinterpret_cast<float4*>(dst + 4), make_float4(v[4], v[5], v[6], v[7]));
#else
#pragma unroll
  for (int i = 0; i < kElementsPerPack; ++i) atomicAdd(dst + i, v[i]);
#endif
}

template <typename T, int kPacks>
__global__ void __launch_bounds__(kThreads)
    embedding_fwd_kernel(const EmbeddingForwardArgs a, int64_t rows_per_warp) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int width = static_cast<int>(a.hidden);
  const int64_t row_begin =
      (static_cast<int64_t>(blockIdx.x) * kRowWarpsPerBlock + warp) * rows_per_warp;
  const int64_t row_end = min(row_begin + rows_per_warp, a.tokens);
  const bert::DropoutMask dropout = bert::resolve_dropout_key(a.dropout);
  for (int64_t t = row_begin; t < row_end; ++t) {
    int32_t word, position, segment;
    const bool valid = read_ids(a.ids, t, a.error_flags, lane, word, position, segment);
    float s[kPacks][kElementsPerPack];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      float w[kElementsPerPack] = {}, pos[kElementsPerPack] = {}, typ[kElementsPerPack] = {};
      if (valid) {
        rows::load_floats(static_cast<const T*>(a.word) + static_cast<int64_t>(word) * width + col,
                          w);
        rows::load_floats(
            static_cast<const T*>(a.position) + static_cast<int64_t>(position) * width + col, pos);
        rows::load_floats(
            static_cast<const T*>(a.token_type) + static_cast<int64_t>(segment) * width + col, typ);
      }
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i)
        s[p][i] = rows::round_to<T>(w[i] + pos[i] + typ[i]);
      rows::store_floats(static_cast<T*>(a.ln_input) + t * width + col, s[p]);
    }
    float mean, rstd;
    rows::row_statistics<kPacks>(s, width, lane, a.eps, mean, rstd);
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      const int64_t offset = t * width + col;
      float g[kElementsPerPack], b[kElementsPerPack], y[kElementsPerPack];
      rows::load_floats(static_cast<const T*>(a.gamma) + col, g);
      rows::load_floats(static_cast<const T*>(a.beta) + col, b);
      const uint32_t keep =
          dropout.enabled ? dropout_keep_byte(dropout, static_cast<uint64_t>(offset)) : 0xffu;
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) {
        y[i] = (s[p][i] - mean) * rstd * g[i] + b[i];
        if (dropout.enabled) y[i] = (keep >> i) & 1u ? y[i] * dropout.scale : 0.0f;
      }
      rows::store_floats(static_cast<T*>(a.out) + offset, y);
    }
    if (lane == 0) {
      a.mean[t] = mean;
      a.rstd[t] = rstd;
    }
  }
}

template <typename T, int kPacks>
__global__ void __launch_bounds__(kThreads)
    embedding_bwd_kernel(const EmbeddingBackwardArgs a, int64_t rows_per_warp, float* partials) {
  constexpr int kSums = 2;  // d_gamma, d_beta
  __shared__ float smem[kSums * rows::kMaxWidth];
  __shared__ float smem_type[kSharedTokenTypeRows * rows::kMaxWidth];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int width = static_cast<int>(a.hidden);
  const float inv_width = 1.0f / static_cast<float>(width);
  const bool shared_types = a.ids.token_type_rows <= kSharedTokenTypeRows;
  if (shared_types) {
    for (int i = threadIdx.x; i < kSharedTokenTypeRows * width; i += blockDim.x)
      smem_type[i] = 0.0f;
    __syncthreads();
  }
  const int64_t row_begin =
      (static_cast<int64_t>(blockIdx.x) * kRowWarpsPerBlock + warp) * rows_per_warp;
  const int64_t row_end = min(row_begin + rows_per_warp, a.tokens);
  const bert::DropoutMask dropout = bert::resolve_dropout_key(a.dropout);

  float part[kSums][kPacks][kElementsPerPack];
#pragma unroll
  for (int s = 0; s < kSums; ++s)
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) part[s][p][i] = 0.0f;

  for (int64_t t = row_begin; t < row_end; ++t) {
    int32_t word, position, segment;
    const bool valid = read_ids(a.ids, t, a.error_flags, lane, word, position, segment);
    const float mean = a.mean[t], rstd = a.rstd[t];
    float xhat[kPacks][kElementsPerPack], g[kPacks][kElementsPerPack];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      const int64_t offset = t * width + col;
      float dy[kElementsPerPack], gamma[kElementsPerPack];
      rows::load_floats(static_cast<const T*>(a.d_out) + offset, dy);
      rows::load_floats(static_cast<const T*>(a.ln_input) + offset, xhat[p]);
      rows::load_floats(static_cast<const T*>(a.gamma) + col, gamma);
      const uint32_t keep =
          dropout.enabled ? dropout_keep_byte(dropout, static_cast<uint64_t>(offset)) : 0xffu;
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) {
        if (dropout.enabled) dy[i] = (keep >> i) & 1u ? dy[i] * dropout.scale : 0.0f;
        xhat[p][i] = (xhat[p][i] - mean) * rstd;
        g[p][i] = dy[i] * gamma[i];
        sum_g += g[p][i];
        sum_gx += g[p][i] * xhat[p][i];
        part[0][p][i] += dy[i] * xhat[p][i];
        part[1][p][i] += dy[i];
      }
    }
    const float mean_g = warp_sum(sum_g) * inv_width;
    const float mean_gx = warp_sum(sum_gx) * inv_width;
    if (!valid) continue;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      float ds[kElementsPerPack];
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i)
        ds[i] = rstd * (g[p][i] - mean_g - xhat[p][i] * mean_gx);
      atomic_add_pack(a.d_word + static_cast<int64_t>(word) * width + col, ds);
      atomic_add_pack(a.d_position + static_cast<int64_t>(position) * width + col, ds);
      if (shared_types) {
#pragma unroll
        for (int i = 0; i < kElementsPerPack; ++i)
          atomicAdd(&smem_type[segment * width + col + i], ds[i]);
      } else {
        atomic_add_pack(a.d_token_type + static_cast<int64_t>(segment) * width + col, ds);
      }
    }
  }
  if (shared_types) {
    __syncthreads();
    for (int i = threadIdx.x; i < a.ids.token_type_rows * width; i += blockDim.x) {
      if (smem_type[i] != 0.0f) atomicAdd(a.d_token_type + i, smem_type[i]);
    }
  }
  rows::write_block_partials<kPacks, kSums>(part, smem, partials, width);
}

template <typename T>
void forward_typed(const EmbeddingForwardArgs& a, const RowKernelConfig& c, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(c.blocks);
  switch (c.packs_per_lane) {
    case 1:
      embedding_fwd_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp);
      break;
    case 2:
      embedding_fwd_kernel<T, 2><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp);
      break;
    default:
      embedding_fwd_kernel<T, 4><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void backward_typed(const EmbeddingBackwardArgs& a, const RowKernelConfig& c, float* partials,
                    cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(c.blocks);
  switch (c.packs_per_lane) {
    case 1:
      embedding_bwd_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp, partials);
      break;
    case 2:
      embedding_bwd_kernel<T, 2><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp, partials);
      break;
    default:
      embedding_bwd_kernel<T, 4><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp, partials);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

void require_ids(const EmbeddingTables& ids) {
  if (ids.input_ids == nullptr || ids.position_ids == nullptr || ids.segment_ids == nullptr)
    throw std::invalid_argument("embedding: input_ids, position_ids and segment_ids are required");
  if (ids.word_rows <= 0 || ids.position_rows <= 0 || ids.token_type_rows <= 0)
    throw std::invalid_argument("embedding: empty table");
}

}  // namespace

void embedding_forward(const EmbeddingForwardArgs& a, int sm_count, cudaStream_t stream) {
  if (a.tokens == 0) return;
  require_ids(a.ids);
  const RowKernelConfig config = row_kernel_config(a.tokens, a.hidden, sm_count);
  if (a.type == ComputeType::f16)
    forward_typed<__half>(a, config, stream);
  else
    forward_typed<__nv_bfloat16>(a, config, stream);
}

size_t embedding_backward_workspace_bytes(int64_t tokens, int64_t hidden, int sm_count) {
  if (tokens == 0) return 0;
  return column_partials_bytes(row_kernel_config(tokens, hidden, sm_count), hidden, 2);
}

void embedding_backward(const EmbeddingBackwardArgs& a, float* workspace, size_t workspace_bytes,
                        int sm_count, cudaStream_t stream) {
  if (a.tokens == 0) return;
  require_ids(a.ids);
  const RowKernelConfig config = row_kernel_config(a.tokens, a.hidden, sm_count);
  const size_t needed = column_partials_bytes(config, a.hidden, 2);
  if (workspace == nullptr || workspace_bytes < needed)
    throw std::invalid_argument("embedding backward: workspace of " +
                                std::to_string(workspace_bytes) + " bytes, needs " +
                                std::to_string(needed));
  if (a.d_word == nullptr || a.d_position == nullptr || a.d_token_type == nullptr ||
      a.d_gamma == nullptr || a.d_beta == nullptr)
    throw std::invalid_argument(
        "embedding backward: every table and LayerNorm gradient is required");
  if (a.type == ComputeType::f16)
    backward_typed<__half>(a, config, workspace, stream);
  else
    backward_typed<__nv_bfloat16>(a, config, workspace, stream);
  rows::ColumnTargets targets;
  targets.target[0] = a.d_gamma;
  targets.target[1] = a.d_beta;
  rows::launch_column_reduce(workspace, config.blocks, 2, static_cast<int>(a.hidden), targets,
                             stream);
}

}  // namespace mlbert::cuda
