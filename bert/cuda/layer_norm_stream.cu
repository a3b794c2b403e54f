// The streaming LayerNorm backward (see layer_norm.h and, for its index math, layer_norm_layout.h):
// one pass over each row from registers while the loads of the next rows are in flight, and the
// gamma/beta/bias column sums in the same launch.
#include <cooperative_groups.h>

#include <stdexcept>
#include <string>

#include "bert/cuda/dropout_bits.h"
#include "bert/cuda/layer_norm.h"
#include "bert/cuda/layer_norm_layout.h"
#include "bert/cuda/row_kernels.cuh"

namespace mlbert::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kMaxWarpsPerGroup = kStreamMaxThreadsPerGroup / kWarpSize;

// What a thread loads of one row: its pack of dy and of s, the pack's keep bits, the statistics
// (these two loaded when the row's turn comes: holding them for the rows in flight too would
// spill).
template <typename T>
struct RowLoad {
  Pack<T> dy, s;
  uint32_t keep;
  float mean, rstd;
};

template <typename T, bool kKeptBits>
__device__ __forceinline__ void load_row(const LayerNormBackwardArgs& a, int64_t row, int64_t col,
                                         bool active, RowLoad<T>& out) {
  if (row < 0 || !active) return;
  const int64_t offset = row * a.width + col;
  out.dy = load_pack_stream(static_cast<const T*>(a.d_out) + offset);
  out.s = load_pack_stream(static_cast<const T*>(a.ln_input) + offset);
  if (kKeptBits) out.keep = a.keep_bits[layer_norm_keep_byte(row, a.width, col)];
}

// The row sums of a row group: each warp's by shuffles, then the warps' in warp order through
// shared memory (double-buffered by row parity, so one named barrier a row is enough).
__device__ __forceinline__ float2 group_sum(float2 v, float2 (*slots)[kMaxWarpsPerGroup],
                                            int parity, int group, int warps_per_group) {
  v.x = warp_sum(v.x);
  v.y = warp_sum(v.y);
  if (warps_per_group == 1) return v;
  const int warp = (threadIdx.x % (warps_per_group * kWarpSize)) / kWarpSize;
  if (threadIdx.x % kWarpSize == 0) slots[parity][warp] = v;
  asm volatile("bar.sync %0, %1;" ::"r"(group + 1), "r"(warps_per_group * kWarpSize));
  float2 total = slots[parity][0];
  for (int w = 1; w < warps_per_group; ++w) {
    total.x += slots[parity][w].x;
    total.y += slots[parity][w].y;
  }
  return total;
}

template <typename T, bool kKeptBits>
__device__ __forceinline__ void backward_row(const LayerNormBackwardArgs& a,
                                             const bert::DropoutMask& dropout, int64_t row,
                                             int64_t col, bool active, const RowLoad<T>& in,
                                             float2 sums, float (&part)[kStreamSums][8]) {
  if (!active) return;
  const int64_t offset = row * a.width + col;
  const float inv_width = 1.0f / static_cast<float>(a.width);
  const float mean_g = sums.x * inv_width, mean_gx = sums.y * inv_width;
  float gamma[8], ds[8];
  rows::load_floats(static_cast<const T*>(a.gamma) + col, gamma);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float dy = to_float(in.dy.v[i]), xhat = (to_float(in.s.v[i]) - in.mean) * in.rstd;
    ds[i] = in.rstd * (dy * gamma[i] - mean_g - xhat * mean_gx);
    part[0][i] += dy * xhat;
    part[1][i] += dy;
  }
  T* d_residual = static_cast<T*>(a.d_residual);
  if (d_residual != nullptr) {
    float res[8];
    if (a.accumulate_d_residual) {
      rows::load_floats(d_residual + offset, res);
#pragma unroll
      for (int i = 0; i < 8; ++i) res[i] += ds[i];
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) res[i] = ds[i];
    }
    rows::store_floats(d_residual + offset, res);
  }
  if (dropout.enabled) {
    const uint32_t keep =
        kKeptBits ? in.keep : dropout_keep_byte(dropout, static_cast<uint64_t>(offset));
#pragma unroll
    for (int i = 0; i < 8; ++i) ds[i] = (keep >> i) & 1u ? ds[i] * dropout.scale : 0.0f;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) part[2][i] += ds[i];
  rows::store_floats(static_cast<T*>(a.d_x) + offset, ds);
}

// A row's sums sum_g = sum dy * gamma and sum_gx = sum dy * gamma * xhat over this thread's pack.
template <typename T>
__device__ __forceinline__ float2 pack_sums(const LayerNormBackwardArgs& a, int64_t col,
                                            bool active, const RowLoad<T>& in) {
  float2 v = make_float2(0.0f, 0.0f);
  if (!active) return v;
  float gamma[8];
  rows::load_floats(static_cast<const T*>(a.gamma) + col, gamma);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float g = to_float(in.dy.v[i]) * gamma[i];
    v.x += g;
    v.y += g * (to_float(in.s.v[i]) - in.mean) * in.rstd;
  }
  return v;
}

// The block's partials: its row groups' in group order, into partials once.
__device__ __forceinline__ void write_block_partials(const LayerNormStreamLayout& l, int group,
                                                     int t, const float (&part)[kStreamSums][8],
                                                     float* smem, float* partials) {
  const int64_t col = stream_column(t);
  const bool active = col < l.width;
  for (int g = 1; g < kStreamRowGroups; ++g) {
    if (group == g && active) {
#pragma unroll
      for (int s = 0; s < kStreamSums; ++s)
#pragma unroll
        for (int i = 0; i < 8; ++i) smem[((g - 1) * kStreamSums + s) * l.width + col + i] = part[s][i];
    }
  }
  __syncthreads();
  if (group != 0 || !active) return;
#pragma unroll
  for (int s = 0; s < kStreamSums; ++s)
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      float total = part[s][i];
      for (int g = 1; g < kStreamRowGroups; ++g)
        total += smem[((g - 1) * kStreamSums + s) * l.width + col + i];
      partials[stream_partial_index(l.width, blockIdx.x, s, col + i)] = total;
    }
}

// After the grid barrier: column groups of 32 over the blocks, slices in order.
__device__ __forceinline__ void reduce_columns(const LayerNormStreamLayout& l,
                                               const LayerNormBackwardArgs& a,
                                               const float* partials, float* slice_totals) {
  const int slices = blockDim.x / kWarpSize, slice = threadIdx.x / kWarpSize;
  for (int64_t g = blockIdx.x; g < stream_reduce_groups(l.width); g += gridDim.x) {
    const int64_t c = stream_reduce_column(l.width, g, threadIdx.x);
    float total = 0.0f;
    if (c >= 0)
      stream_reduce_blocks(l.blocks, slices, slice, [&](int b) {
        total += partials[stream_partial_index(l.width, b, static_cast<int>(c / l.width),
                                               c % l.width)];
      });
    slice_totals[threadIdx.x] = total;
    __syncthreads();
    if (slice == 0 && c >= 0) {
      float sum = 0.0f;
      for (int y = 0; y < slices; ++y) sum += slice_totals[y * kWarpSize + threadIdx.x];
      const int s = static_cast<int>(c / l.width);
      float* target = s == 0 ? a.d_gamma : s == 1 ? a.d_beta : a.d_bias;
      if (target != nullptr) target[c % l.width] += sum;
    }
    __syncthreads();
  }
}

// kKeptBits: the mask's bits come from the forward's keep bits (no Philox code, so registers are
// left for a second row in flight); else they are drawn again.
template <typename T, bool kKeptBits>
__global__ void __launch_bounds__(kStreamMaxThreads, kStreamBlocksPerSm)
    layer_norm_bwd_stream_kernel(const LayerNormBackwardArgs a, const LayerNormStreamLayout l,
                                 float* partials) {
  constexpr int kPrefetch = stream_prefetch_rows(kKeptBits);
  constexpr int kRing = kPrefetch + 1;  // the row being computed and the rows in flight (slots)
  __shared__ float2 row_slots[kStreamRowGroups][2][kMaxWarpsPerGroup];
  __shared__ float smem[(kStreamRowGroups - 1) * kStreamSums * 1024];
  const bert::DropoutMask dropout = bert::resolve_dropout_key(a.dropout);
  const int group = threadIdx.x / l.threads_per_group, t = threadIdx.x % l.threads_per_group;
  const int warps_per_group = l.threads_per_group / kWarpSize;
  const int64_t col = stream_column(t);
  const bool active = col < l.width;
  const int64_t iterations = stream_iterations(l, blockIdx.x, group);
  float part[kStreamSums][8] = {};
  RowLoad<T> ring[kRing];
  stream_rows<kPrefetch>(
      iterations,
      [&](int64_t i, int slot) {
        load_row<T, kKeptBits>(a, stream_row(l, blockIdx.x, group, i), col, active, ring[slot]);
      },
      [&](int64_t i, int slot) {
        const int64_t row = stream_row(l, blockIdx.x, group, i);
        ring[slot].mean = a.mean[row];
        ring[slot].rstd = a.rstd[row];
        const float2 sums = group_sum(pack_sums(a, col, active, ring[slot]), row_slots[group],
                                      static_cast<int>(i & 1), group, warps_per_group);
        backward_row<T, kKeptBits>(a, dropout, row, col, active, ring[slot], sums, part);
      });
  write_block_partials(l, group, t, part, smem, partials);
  cg::this_grid().sync();
  reduce_columns(l, a, partials, smem);
}

template <typename T, bool kKeptBits>
void launch(const LayerNormBackwardArgs& a, int sm_count, float* partials, size_t bytes,
            cudaStream_t stream) {
  const auto kernel = layer_norm_bwd_stream_kernel<T, kKeptBits>;
  int per_sm = 0;
  const LayerNormStreamLayout probe = layer_norm_stream_layout(a.rows, a.width, 1);
  CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, probe.threads(), 0));
  if (per_sm < 1)
    throw std::runtime_error("layer_norm backward (streaming): no block fits on an SM");
  const int resident = sm_count * (per_sm < kStreamBlocksPerSm ? per_sm : kStreamBlocksPerSm);
  LayerNormStreamLayout l = layer_norm_stream_layout(a.rows, a.width, resident);
  if (bytes < static_cast<size_t>(l.blocks) * kStreamSums * a.width * sizeof(float))
    throw std::invalid_argument("layer_norm backward (streaming): workspace of " +
                                std::to_string(bytes) + " bytes is too small");
  void* args[] = {const_cast<LayerNormBackwardArgs*>(&a), &l, &partials};
  CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), l.blocks,
                                         l.threads(), args, 0, stream));
}

}  // namespace

size_t layer_norm_backward_stream_workspace_bytes(int64_t rows, int64_t width, int sm_count) {
  if (rows == 0) return 0;
  const LayerNormStreamLayout l =
      layer_norm_stream_layout(rows, width, sm_count * kStreamBlocksPerSm);
  return static_cast<size_t>(l.blocks) * kStreamSums * static_cast<size_t>(width) * sizeof(float);
}

void layer_norm_backward_stream(const LayerNormBackwardArgs& a, float* workspace,
                                size_t workspace_bytes, int sm_count, cudaStream_t stream) {
  if (a.rows == 0) return;
  validate_layer_norm_backward(a);
  const bool kept = a.keep_bits != nullptr && a.dropout.enabled;
  if (a.type == ComputeType::f16) {
    if (kept)
      launch<__half, true>(a, sm_count, workspace, workspace_bytes, stream);
    else
      launch<__half, false>(a, sm_count, workspace, workspace_bytes, stream);
  } else if (kept) {
    launch<__nv_bfloat16, true>(a, sm_count, workspace, workspace_bytes, stream);
  } else {
    launch<__nv_bfloat16, false>(a, sm_count, workspace, workspace_bytes, stream);
  }
}

}  // namespace mlbert::cuda
