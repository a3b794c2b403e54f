// Warp-level fragment steps shared by both attention kernel families (attention_kernels.cuh, the
// 64-row kernels, and attention_fa2_{fwd,bwd}.cuh): a warp keeps a 16 x 64 fp32 accumulator as
// eight n8 tiles of mma.sync m16n8k16 and multiplies by 64 x 64 tiles staged in shared memory as
// [rows][64 + 8]. Both families use that one geometry (attention_fa2_layout.h; the 64-row kernels
// assert they match it), so these steps are written once: the MMA steps, the backward's softmax
// step, the dropout keep-bit gathers, and (host side) the launch and shared-memory helpers of
// both families' launchers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "bert/cuda/attention_fa2_layout.h"
#include "bert/cuda/common.cuh"
#include "bert/cuda/cuda_check.h"
#include "bert/cuda/dropout_bits.h"
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

// dV += P^T dO and dK += dS^T Q for a warp's 16 keys against a 64-query tile: `probs` holds P with
// dropout, `dscores` dS^T; `frag` is left holding dS^T's A fragments.
template <typename T>
__device__ __forceinline__ void accumulate_dv_dk(float (&dv_acc)[kNTiles][4],
                                                 float (&dk_acc)[kNTiles][4],
                                                 const float (&probs)[kNTiles][4],
                                                 const float (&dscores)[kNTiles][4], const T* sdo,
                                                 const T* sq, int lane,
                                                 uint32_t (&frag)[kNTiles / 2][4]) {
  accumulator_to_a_fragments<T>(probs, frag);
  mma_frags_times_tile<T>(dv_acc, frag, sdo, lane);
  accumulator_to_a_fragments<T>(dscores, frag);
  mma_frags_times_tile<T>(dk_acc, frag, sq, lane);
}

// The backward's softmax step for one element, in place: `st` becomes P with dropout (for dV)
// and `dpt` (dP on entry) dS^T = P * (dP' - D), unscaled, where dP' is dP with dropout.
__device__ __forceinline__ void softmax_backward_element(float prob, float& st, float& dpt,
                                                         float dsum, bool use_dropout,
                                                         uint32_t keep_bits, int bit,
                                                         float keep_scale) {
  float dprob = dpt;
  float prob_dropped = prob;
  if (use_dropout) {
    const bool keep = (keep_bits >> bit) & 1u;
    prob_dropped = keep ? prob * keep_scale : 0.0f;
    dprob = keep ? dprob * keep_scale : 0.0f;
  }
  st = prob_dropped;
  dpt = prob * (dprob - dsum);
}

// Zeroes 16 x 64 fp32 accumulators (kNTiles n8 tiles of 4 elements a lane).
template <typename... Acc>
__device__ __forceinline__ void zero_accumulators(Acc&... acc) {
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) ((acc[nt][e] = 0.0f), ...);
  }
}

// ---- dropout keep bits: bit (nt * 4 + e) for accumulator element [nt][e] of a 16 x 64 tile.

// The 4 bits of n8 tile 2 * pair + half this lane holds, gathered by shuffles from `drawn`, each
// lane's Philox block of that pair (the lane mappings are dropout_bits.h's). Forward orientation:
// rows are queries.
__device__ __forceinline__ uint32_t forward_tile_keep_bits(uint32_t drawn, int lane, int half) {
  int src_g, src_g8, shift;
  attention_forward_sources(lane, half, src_g, src_g8, shift);
  const uint32_t row_g = __shfl_sync(kFullWarpMask, drawn, src_g);
  const uint32_t row_g8 = __shfl_sync(kFullWarpMask, drawn, src_g8);
  return attention_forward_bits(row_g, row_g8, shift);
}
// Backward orientation: rows are keys, the blocks are those of the transposed tile.
__device__ __forceinline__ uint32_t backward_tile_keep_bits(uint32_t drawn, int lane, int half) {
  int src_g, src_g8, shift;
  attention_backward_sources(lane, half, src_g, src_g8, shift);
  const uint32_t b0 = __shfl_sync(kFullWarpMask, drawn, src_g);
  const uint32_t b1 = __shfl_sync(kFullWarpMask, drawn, src_g + 1);
  const uint32_t b2 = __shfl_sync(kFullWarpMask, drawn, src_g8);
  const uint32_t b3 = __shfl_sync(kFullWarpMask, drawn, src_g8 + 1);
  return attention_backward_bits(b0, b1, b2, b3, shift);
}
// The 32 bits of a tile from `nibble(pair, half)`, the 4 bits of n8 tile 2 * pair + half.
template <typename Nibble>
__device__ __forceinline__ uint32_t gather_keep_nibbles(Nibble nibble) {
  uint32_t bits = 0;
#pragma unroll
  for (int pair = 0; pair < kNTiles / 2; ++pair) {
#pragma unroll
    for (int half = 0; half < 2; ++half) bits |= nibble(pair, half) << ((2 * pair + half) * 4);
  }
  return bits;
}

// ---- launches (host)

// Launches `kernel(params)` and checks the launch.
template <typename Params>
void launch_attention(void (*kernel)(Params), dim3 grid, unsigned threads, std::size_t smem_bytes,
                      cudaStream_t stream, const Params& params) {
  kernel<<<grid, threads, smem_bytes, stream>>>(params);
  CUDA_CHECK_LAUNCH();
}
// Lets `kernel` use `bytes` of dynamic shared memory (past the 48 KiB a launch gets by default).
// Once per device, not per launch: the attribute call is a driver round trip.
template <typename Kernel>
void allow_dynamic_shared_memory(Kernel kernel, int bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

}  // namespace mlbert::cuda::attention_fa2
