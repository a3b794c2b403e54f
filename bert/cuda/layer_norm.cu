// Fused bias + dropout + residual + LayerNorm, forward and backward (see layer_norm.h).
#include "bert/cuda/layer_norm.h"

#include <stdexcept>
#include <string>

#include "bert/cuda/layer_norm_layout.h"
#include "bert/cuda/row_kernels.cuh"

namespace mlbert::cuda {
namespace {

using rows::kThreads;
using rows::pack_column;

template <typename T, int kPacks>
__global__ void __launch_bounds__(kThreads)
    layer_norm_fwd_kernel(const LayerNormForwardArgs a, int64_t rows_per_warp) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int width = static_cast<int>(a.width);
  const int64_t row_begin =
      (static_cast<int64_t>(blockIdx.x) * kRowWarpsPerBlock + warp) * rows_per_warp;
  const int64_t row_end = min(row_begin + rows_per_warp, a.rows);
  const T* x = static_cast<const T*>(a.x);
  const T* bias = static_cast<const T*>(a.bias);
  const T* residual = static_cast<const T*>(a.residual);
  const bert::DropoutMask dropout = bert::resolve_dropout_key(a.dropout);
  for (int64_t r = row_begin; r < row_end; ++r) {
    float s[kPacks][kElementsPerPack];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      const int64_t offset = r * width + col;
      float h[kElementsPerPack];
      rows::load_floats(x + offset, h);
      if (bias != nullptr) {
        float b[kElementsPerPack];
        rows::load_floats(bias + col, b);
#pragma unroll
        for (int i = 0; i < kElementsPerPack; ++i) h[i] += b[i];
      }
      if (dropout.enabled) {
        const uint32_t keep = dropout_keep_byte(dropout, static_cast<uint64_t>(offset));
        if (a.keep_bits != nullptr)
          a.keep_bits[layer_norm_keep_byte(r, width, col)] = static_cast<uint8_t>(keep);
#pragma unroll
        for (int i = 0; i < kElementsPerPack; ++i)
          h[i] = (keep >> i) & 1u ? h[i] * dropout.scale : 0.0f;
      }
      if (residual != nullptr) {
        float res[kElementsPerPack];
        rows::load_floats(residual + offset, res);
#pragma unroll
        for (int i = 0; i < kElementsPerPack; ++i) h[i] += res[i];
      }
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) s[p][i] = rows::round_to<T>(h[i]);
      rows::store_floats(static_cast<T*>(a.ln_input) + offset, s[p]);
    }
    float mean, rstd;
    rows::row_statistics<kPacks>(s, width, lane, a.eps, mean, rstd);
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      float g[kElementsPerPack], b[kElementsPerPack], y[kElementsPerPack];
      rows::load_floats(static_cast<const T*>(a.gamma) + col, g);
      rows::load_floats(static_cast<const T*>(a.beta) + col, b);
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) y[i] = (s[p][i] - mean) * rstd * g[i] + b[i];
      rows::store_floats(static_cast<T*>(a.out) + r * width + col, y);
    }
    if (lane == 0) {
      a.mean[r] = mean;
      a.rstd[r] = rstd;
    }
  }
}

// Registers: the backward keeps one of its three column partials (d_gamma) in registers across a
// warp's rows (32 floats at width 1024) and the other two (d_beta, d_bias) in the warp's own
// slices of shared memory, where each lane only touches its own columns. A row's normalized input
// and dy * gamma are recomputed from global memory (an L1 hit: the warp read them a moment earlier)
// in the second pass instead of being held through the row reductions. Together that lets four
// blocks fit on an SM without spilling (__launch_bounds__; 216 registers and 12.5% occupancy
// before, BENCHMARKS.md). Each block's partials are added in the same order as before.
template <typename T>
__device__ __forceinline__ void layer_norm_bwd_pack(const LayerNormBackwardArgs& a, int64_t offset,
                                                    int col, float mean, float rstd,
                                                    float (&dy)[kElementsPerPack],
                                                    float (&xhat)[kElementsPerPack],
                                                    float (&g)[kElementsPerPack]) {
  float gamma[kElementsPerPack];
  rows::load_floats(static_cast<const T*>(a.d_out) + offset, dy);
  rows::load_floats(static_cast<const T*>(a.ln_input) + offset, xhat);
  rows::load_floats(static_cast<const T*>(a.gamma) + col, gamma);
#pragma unroll
  for (int i = 0; i < kElementsPerPack; ++i) {
    xhat[i] = (xhat[i] - mean) * rstd;
    g[i] = dy[i] * gamma[i];
  }
}

template <typename T, int kPacks>
__global__ void __launch_bounds__(kThreads, kRowBlocksPerSm)
    layer_norm_bwd_kernel(const LayerNormBackwardArgs a, int64_t rows_per_warp, float* partials) {
  constexpr int kSums = 3;          // d_gamma (registers), d_beta, d_bias (shared memory)
  constexpr int kRegisterSums = 1;  // d_gamma
  __shared__ float smem[kRegisterSums * rows::kMaxWidth];
  __shared__ float warp_part[2][kRowWarpsPerBlock][rows::kMaxWidth];  // d_beta, d_bias
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int width = static_cast<int>(a.width);
  const float inv_width = 1.0f / static_cast<float>(width);
  const int64_t row_begin =
      (static_cast<int64_t>(blockIdx.x) * kRowWarpsPerBlock + warp) * rows_per_warp;
  const int64_t row_end = min(row_begin + rows_per_warp, a.rows);
  T* d_residual = static_cast<T*>(a.d_residual);
  const bert::DropoutMask dropout = bert::resolve_dropout_key(a.dropout);
  float* my_beta_part = warp_part[0][warp];
  float* my_bias_part = warp_part[1][warp];

  float part[kRegisterSums][kPacks][kElementsPerPack];
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
#pragma unroll
    for (int i = 0; i < kElementsPerPack; ++i) {
      part[0][p][i] = 0.0f;
      my_beta_part[pack_column(p, lane) + i] = 0.0f;
      my_bias_part[pack_column(p, lane) + i] = 0.0f;
    }
  }

  for (int64_t r = row_begin; r < row_end; ++r) {
    const float mean = a.mean[r], rstd = a.rstd[r];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      float dy[kElementsPerPack], xhat[kElementsPerPack], g[kElementsPerPack];
      layer_norm_bwd_pack<T>(a, r * width + col, col, mean, rstd, dy, xhat, g);
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) {
        sum_g += g[i];
        sum_gx += g[i] * xhat[i];
        part[0][p][i] += dy[i] * xhat[i];
        my_beta_part[col + i] += dy[i];
      }
    }
    const float mean_g = warp_sum(sum_g) * inv_width;
    const float mean_gx = warp_sum(sum_gx) * inv_width;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      const int64_t offset = r * width + col;
      float dy[kElementsPerPack], xhat[kElementsPerPack], g[kElementsPerPack];
      layer_norm_bwd_pack<T>(a, offset, col, mean, rstd, dy, xhat, g);
      float ds[kElementsPerPack];
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) ds[i] = rstd * (g[i] - mean_g - xhat[i] * mean_gx);
      if (d_residual != nullptr) {
        float res[kElementsPerPack];
        if (a.accumulate_d_residual) {
          rows::load_floats(d_residual + offset, res);
#pragma unroll
          for (int i = 0; i < kElementsPerPack; ++i) res[i] += ds[i];
        } else {
#pragma unroll
          for (int i = 0; i < kElementsPerPack; ++i) res[i] = ds[i];
        }
        rows::store_floats(d_residual + offset, res);
      }
      if (dropout.enabled) {
        const uint32_t keep = a.keep_bits != nullptr
                                  ? a.keep_bits[layer_norm_keep_byte(r, width, col)]
                                  : dropout_keep_byte(dropout, static_cast<uint64_t>(offset));
#pragma unroll
        for (int i = 0; i < kElementsPerPack; ++i)
          ds[i] = (keep >> i) & 1u ? ds[i] * dropout.scale : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) my_bias_part[col + i] += ds[i];
      rows::store_floats(static_cast<T*>(a.d_x) + offset, ds);
    }
  }
  // d_gamma through shared memory (it ends with a barrier, so every warp's slices are complete
  // too), then d_beta and d_bias: the warps' slices added in warp order.
  rows::write_block_partials<kPacks, kRegisterSums>(part, smem, partials, width, kSums);
  for (int s = 0; s < 2; ++s) {
    float* block_part = partials + (static_cast<int64_t>(blockIdx.x) * kSums + 1 + s) * width;
    for (int col = threadIdx.x; col < width; col += blockDim.x) {
      float total = warp_part[s][0][col];
#pragma unroll
      for (int w = 1; w < kRowWarpsPerBlock; ++w) total += warp_part[s][w][col];
      block_part[col] = total;
    }
  }
}

template <typename T>
void forward_typed(const LayerNormForwardArgs& a, const RowKernelConfig& c, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(c.blocks);
  switch (c.packs_per_lane) {
    case 1:
      layer_norm_fwd_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp);
      break;
    case 2:
      layer_norm_fwd_kernel<T, 2><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp);
      break;
    default:
      layer_norm_fwd_kernel<T, 4><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void backward_typed(const LayerNormBackwardArgs& a, const RowKernelConfig& c, float* partials,
                    cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(c.blocks);
  switch (c.packs_per_lane) {
    case 1:
      layer_norm_bwd_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp, partials);
      break;
    case 2:
      layer_norm_bwd_kernel<T, 2><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp, partials);
      break;
    default:
      layer_norm_bwd_kernel<T, 4><<<blocks, kThreads, 0, stream>>>(a, c.rows_per_warp, partials);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

void require_aligned(const void* ptr, const char* name, bool optional) {
  if (ptr == nullptr) {
    if (optional) return;
    throw std::invalid_argument(std::string("layer_norm: ") + name + " is null");
  }
  if (reinterpret_cast<uintptr_t>(ptr) % kVectorBytes != 0)
    throw std::invalid_argument(std::string("layer_norm: ") + name + " is not 16-byte aligned");
}

}  // namespace

void layer_norm_forward(const LayerNormForwardArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  const RowKernelConfig config = row_kernel_config_one_row_per_warp(a.rows, a.width);
  require_aligned(a.x, "x", false);
  require_aligned(a.bias, "bias", true);
  require_aligned(a.residual, "residual", true);
  require_aligned(a.gamma, "gamma", false);
  require_aligned(a.beta, "beta", false);
  require_aligned(a.out, "out", false);
  require_aligned(a.ln_input, "ln_input", false);
  if (a.mean == nullptr || a.rstd == nullptr)
    throw std::invalid_argument("layer_norm: mean/rstd is null");
  if (a.type == ComputeType::f16)
    forward_typed<__half>(a, config, stream);
  else
    forward_typed<__nv_bfloat16>(a, config, stream);
}

size_t layer_norm_backward_workspace_bytes(int64_t rows, int64_t width, int sm_count) {
  if (rows == 0) return 0;
  return column_partials_bytes(row_kernel_config(rows, width, sm_count), width, 3);
}

void validate_layer_norm_backward(const LayerNormBackwardArgs& a) {
  require_aligned(a.d_out, "d_out", false);
  require_aligned(a.ln_input, "ln_input", false);
  require_aligned(a.gamma, "gamma", false);
  require_aligned(a.d_x, "d_x", false);
  require_aligned(a.d_residual, "d_residual", true);
  if (a.mean == nullptr || a.rstd == nullptr || a.d_gamma == nullptr || a.d_beta == nullptr)
    throw std::invalid_argument("layer_norm backward: mean, rstd, d_gamma and d_beta are required");
}

void layer_norm_backward(const LayerNormBackwardArgs& a, float* workspace, size_t workspace_bytes,
                         int sm_count, cudaStream_t stream) {
  if (a.rows == 0) return;
  const RowKernelConfig config = row_kernel_config(a.rows, a.width, sm_count);
  const size_t needed = column_partials_bytes(config, a.width, 3);
  if (workspace == nullptr || workspace_bytes < needed)
    throw std::invalid_argument("layer_norm backward: workspace of " +
                                std::to_string(workspace_bytes) + " bytes, needs " +
                                std::to_string(needed));
  validate_layer_norm_backward(a);
  if (a.type == ComputeType::f16)
    backward_typed<__half>(a, config, workspace, stream);
  else
    backward_typed<__nv_bfloat16>(a, config, workspace, stream);
  rows::ColumnTargets targets;
  targets.target[0] = a.d_gamma;
  targets.target[1] = a.d_beta;
  targets.target[2] = a.d_bias;
  rows::launch_column_reduce(workspace, config.blocks, 3, static_cast<int>(a.width), targets,
                             stream);
}

// ---------------------------------------------------------------------------------------------
// Second stage of the column reductions (shared with the embedding backward).

namespace rows {

// A block of 32 columns x kReduceSlices slices: slice y sums the partials of blocks y, y + S,
// y + 2S, ... in that order, then slice 0 adds the S slice totals in slice order. The order is
// fixed by the launch shape alone, never by scheduling, and the work spreads over
// sums * width / 32 blocks instead of one thread walking every block of a column.
constexpr int kReduceColumns = 32;
constexpr int kReduceSlices = 8;

__global__ void __launch_bounds__(kReduceColumns* kReduceSlices)
    column_reduce_kernel(const float* __restrict__ partials, int64_t blocks, int sums, int width,
                         ColumnTargets targets) {
  __shared__ float slice_totals[kReduceSlices][kReduceColumns];
  const int cx = threadIdx.x % kReduceColumns, slice = threadIdx.x / kReduceColumns;
  const int64_t index = static_cast<int64_t>(blockIdx.x) * kReduceColumns + cx;
  const bool valid = index < static_cast<int64_t>(sums) * width;
  const int s = valid ? static_cast<int>(index / width) : 0;
  const int col = valid ? static_cast<int>(index % width) : 0;
  float total = 0.0f;
  if (valid) {
#pragma unroll 4
    for (int64_t b = slice; b < blocks; b += kReduceSlices)
      total += partials[(b * sums + s) * width + col];
  }
  slice_totals[slice][cx] = total;
  __syncthreads();
  if (slice != 0 || !valid) return;
  float* target = s == 0 ? targets.target[0] : s == 1 ? targets.target[1] : targets.target[2];
  if (target == nullptr) return;
  float sum = 0.0f;
#pragma unroll
  for (int y = 0; y < kReduceSlices; ++y) sum += slice_totals[y][cx];
  target[col] += sum;
}

void launch_column_reduce(const float* partials, int64_t blocks, int sums, int width,
                          ColumnTargets targets, cudaStream_t stream) {
  const unsigned grid = ceil_div(static_cast<int64_t>(sums) * width, kReduceColumns);
  column_reduce_kernel<<<grid, kReduceColumns * kReduceSlices, 0, stream>>>(partials, blocks, sums,
                                                                            width, targets);
  CUDA_CHECK_LAUNCH();
}

}  // namespace rows
}  // namespace mlbert::cuda
