// Warp-level fragment steps shared by both attention kernel families (attention_kernels.cuh, the
// 64-row kernels, and attention_fa2_{fwd,bwd}.cuh): a warp keeps a 16 x 64 fp32 accumulator as
// eight n8 tiles of mma.sync m16n8k16 and multiplies by 64 x 64 tiles staged in shared memory as
// [rows][64 + 8]. Both families use that one geometry (attention_fa2_layout.h; the 64-row kernels
// assert they match it), so these steps are written once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "bert/cuda/attention_fa2_layout.h"
#include "bert/cuda/common.cuh"
#include "bert/cuda/mma.cuh"

namespace mlbert::cuda::attention_fa2 {

// The C layout of two adjacent n8 accumulator tiles is the A layout of one k16 step: a 16 x 64
// fp32 accumulator becomes the A fragments of the next product.
template <typename T>
__device__ __forceinline__ void accumulator_to_a_fragments(const float (&acc)[kNTiles][4],
                                                           uint32_t (&frag)[kNTiles / 2][4]) {
#pragma unroll
  for (int kk = 0; kk < kNTiles / 2; ++kk) {
    frag[kk][0] = Pair<T>::pack(acc[2 * kk][0], acc[2 * kk][1]);
    frag[kk][1] = Pair<T>::pack(acc[2 * kk][2], acc[2 * kk][3]);
    frag[kk][2] = Pair<T>::pack(acc[2 * kk + 1][0], acc[2 * kk + 1][1]);
    frag[kk][3] = Pair<T>::pack(acc[2 * kk + 1][2], acc[2 * kk + 1][3]);
  }
}

// acc[16 x 64] += frag[16 x 64] * tile, with tile a [k][n] row-major 64x64 shared tile.
template <typename T>
__device__ __forceinline__ void mma_frags_times_tile(float (&acc)[kNTiles][4],
                                                     const uint32_t (&frag)[kNTiles / 2][4],
                                                     const T* tile, int lane) {
#pragma unroll
  for (int kk = 0; kk < kNTiles / 2; ++kk) {
#pragma unroll
    for (int dp = 0; dp < kNTiles / 2; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, tile + a_pattern_offset(lane, kk * 16, dp * 16));
      mma_m16n8k16<T>(acc[2 * dp], frag[kk], b[0], b[1]);
      mma_m16n8k16<T>(acc[2 * dp + 1], frag[kk], b[2], b[3]);
    }
  }
}

}  // namespace mlbert::cuda::attention_fa2
