// Building blocks of the warp-per-row kernels (LayerNorm, embeddings): a row's packs in registers,
// LayerNorm statistics by warp shuffles, and the deterministic two-stage column reduction used for
// gamma/beta/bias gradients (per-block partials in a fixed warp order, then a per-column sum over
// blocks in an order fixed by the launch shape, so results do not depend on scheduling).
#pragma once

#include <cstdint>

#include "bert/cuda/common.cuh"
#include "bert/cuda/dropout_bits.h"
#include "bert/cuda/launch_config.h"

namespace mlbert::cuda::rows {

constexpr int kThreads = kRowWarpsPerBlock * kWarpSize;
constexpr int kMaxWidth = kWarpSize * kElementsPerPack * kMaxPacksPerLane;

// Column of the first element of pack p of this lane.
__device__ __forceinline__ int pack_column(int p, int lane) {
  return (p * kWarpSize + lane) * kElementsPerPack;
}

template <typename T>
__device__ __forceinline__ void load_floats(const T* src, float (&dst)[kElementsPerPack]) {
  const Pack<T> pack = load_pack(src);
#pragma unroll
  for (int i = 0; i < kElementsPerPack; ++i) dst[i] = to_float(pack.v[i]);
}

template <typename T>
__device__ __forceinline__ void store_floats(T* dst, const float (&src)[kElementsPerPack]) {
  Pack<T> pack;
#pragma unroll
  for (int i = 0; i < kElementsPerPack; ++i) pack.v[i] = from_float<T>(src[i]);
  store_pack(dst, pack);
}

// Rounds to T and back: values that are stored in T are used in their stored form, so the forward
// and the backward (which reads them back) see the same numbers.
template <typename T>
__device__ __forceinline__ float round_to(float x) {
  return to_float(from_float<T>(x));
}

// mean and rstd of the valid packs of a row held by one warp (two passes over registers).
template <int kPacks>
__device__ __forceinline__ void row_statistics(const float (&x)[kPacks][kElementsPerPack],
                                               int width, int lane, float eps, float& mean,
                                               float& rstd) {
  float sum = 0.0f;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (pack_column(p, lane) < width) {
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) sum += x[p][i];
    }
  }
  mean = warp_sum(sum) / static_cast<float>(width);
  float squares = 0.0f;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (pack_column(p, lane) < width) {
#pragma unroll
      for (int i = 0; i < kElementsPerPack; ++i) {
        const float d = x[p][i] - mean;
        squares += d * d;
      }
    }
  }
  rstd = rsqrtf(warp_sum(squares) / static_cast<float>(width) + eps);
}

// Adds each warp's register partials (kSums vectors over the row width) into this block's slice
// of `partials` ([blocks][sums_per_block][width], the first kSums of them), warp by warp in a
// fixed order.
template <int kPacks, int kSums>
__device__ __forceinline__ void write_block_partials(
    const float (&part)[kSums][kPacks][kElementsPerPack], float* smem, float* partials, int width,
    int sums_per_block = kSums) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  for (int w = 0; w < kRowWarpsPerBlock; ++w) {
    if (warp == w) {
#pragma unroll
      for (int s = 0; s < kSums; ++s) {
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
          const int col = pack_column(p, lane);
          if (col < width) {
#pragma unroll
            for (int i = 0; i < kElementsPerPack; ++i) {
              float& slot = smem[s * width + col + i];
              slot = (w == 0 ? 0.0f : slot) + part[s][p][i];
            }
          }
        }
      }
    }
    __syncthreads();
  }
  float* block_partials = partials + static_cast<int64_t>(blockIdx.x) * sums_per_block * width;
  for (int i = threadIdx.x; i < kSums * width; i += blockDim.x) block_partials[i] = smem[i];
}

// Second stage: targets[s][col] += sum over blocks of partials[block][s][col], in an order fixed by
// the launch shape (8 interleaved slices of the blocks, then the slices in order; layer_norm.cu).
// Targets with a null pointer are skipped.
struct ColumnTargets {
  float* target[3] = {nullptr, nullptr, nullptr};
};
void launch_column_reduce(const float* partials, int64_t blocks, int sums, int width,
                          ColumnTargets targets, cudaStream_t stream);

}  // namespace mlbert::cuda::rows
