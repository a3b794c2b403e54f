// Fused bias + dropout + residual + LayerNorm, forward and backward (see layer_norm.h).
#include "bert/cuda/layer_norm.h"

#include <stdexcept>
#include <string>

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
      if (a.dropout.enabled) {
        const uint32_t keep = dropout_keep_byte(a.dropout, static_cast<uint64_t>(offset));
#pragma unroll
        for (int i = 0; i < kElementsPerPack; ++i)
          h[i] = (keep >> i) & 1u ? h[i] * a.dropout.scale : 0.0f;
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

template <typename T, int kPacks>
__global__ void __launch_bounds__(kThreads)
    layer_norm_bwd_kernel(const LayerNormBackwardArgs a, int64_t rows_per_warp, float* partials) {
  constexpr int kSums = 3;  // d_gamma, d_beta, d_bias
  __shared__ float smem[kSums * rows::kMaxWidth];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int width = static_cast<int>(a.width);
  const float inv_width = 1.0f / static_cast<float>(width);
  const int64_t row_begin =
      (static_cast<int64_t>(blockIdx.x) * kRowWarpsPerBlock + warp) * rows_per_warp;
  const int64_t row_end = min(row_begin + rows_per_warp, a.rows);
  const T* d_out = static_cast<const T*>(a.d_out);
  const T* ln_input = static_cast<const T*>(a.ln_input);
  T* d_residual = static_cast<T*>(a.d_residual);

  float part[kSums][kPacks][kElementsPerPack];
#pragma unroll
  for (int s = 0; s < kSums; ++s)
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) part[s][p][i] = 0.0f;

  for (int64_t r = row_begin; r < row_end; ++r) {
    const float mean = a.mean[r], rstd = a.rstd[r];
    float xhat[kPacks][kElementsPerPack], g[kPacks][kElementsPerPack];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      const int64_t offset = r * width + col;
      float dy[kElementsPerPack], gamma[kElementsPerPack];
      rows::load_floats(d_out + offset, dy);
      rows::load_floats(ln_input + offset, xhat[p]);
      rows::load_floats(static_cast<const T*>(a.gamma) + col, gamma);
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) {
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
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = pack_column(p, lane);
      if (col >= width) continue;
      const int64_t offset = r * width + col;
      float ds[kElementsPerPack];
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i)
        ds[i] = rstd * (g[p][i] - mean_g - xhat[p][i] * mean_gx);
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
      if (a.dropout.enabled) {
        const uint32_t keep = dropout_keep_byte(a.dropout, static_cast<uint64_t>(offset));
#pragma unroll
        for (int i = 0; i < kElementsPerPack; ++i)
          ds[i] = (keep >> i) & 1u ? ds[i] * a.dropout.scale : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) part[2][p][i] += ds[i];
      rows::store_floats(static_cast<T*>(a.d_x) + offset, ds);
    }
  }
  rows::write_block_partials<kPacks, kSums>(part, smem, partials, width);
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

void layer_norm_forward(const LayerNormForwardArgs& a, int sm_count, cudaStream_t stream) {
  if (a.rows == 0) return;
  const RowKernelConfig config = row_kernel_config(a.rows, a.width, sm_count);
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

void layer_norm_backward(const LayerNormBackwardArgs& a, float* workspace, size_t workspace_bytes,
                         int sm_count, cudaStream_t stream) {
  if (a.rows == 0) return;
  const RowKernelConfig config = row_kernel_config(a.rows, a.width, sm_count);
  const size_t needed = column_partials_bytes(config, a.width, 3);
  if (workspace == nullptr || workspace_bytes < needed)
    throw std::invalid_argument("layer_norm backward: workspace of " +
                                std::to_string(workspace_bytes) + " bytes, needs " +
                                std::to_string(needed));
  require_aligned(a.d_out, "d_out", false);
  require_aligned(a.ln_input, "ln_input", false);
  require_aligned(a.gamma, "gamma", false);
  require_aligned(a.d_x, "d_x", false);
  require_aligned(a.d_residual, "d_residual", true);
  if (a.mean == nullptr || a.rstd == nullptr || a.d_gamma == nullptr || a.d_beta == nullptr)
    throw std::invalid_argument("layer_norm backward: mean, rstd, d_gamma and d_beta are required");
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

__global__ void column_reduce_kernel(const float* __restrict__ partials, int64_t blocks, int sums,
                                     int width, ColumnTargets targets) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= static_cast<int64_t>(sums) * width) return;
  const int s = static_cast<int>(index / width);
  float* target = s == 0 ? targets.target[0] : s == 1 ? targets.target[1] : targets.target[2];
  if (target == nullptr) return;
  const int col = static_cast<int>(index % width);
  float total = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) total += partials[(b * sums + s) * width + col];
  target[col] += total;
}

void launch_column_reduce(const float* partials, int64_t blocks, int sums, int width,
                          ColumnTargets targets, cudaStream_t stream) {
  constexpr int kReduceThreads = 256;
  const unsigned grid = ceil_div(static_cast<int64_t>(sums) * width, kReduceThreads);
  column_reduce_kernel<<<grid, kReduceThreads, 0, stream>>>(partials, blocks, sums, width, targets);
  CUDA_CHECK_LAUNCH();
}

}  // namespace rows
}  // namespace mlbert::cuda
