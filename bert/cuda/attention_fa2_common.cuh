// Device helpers shared by the FlashAttention-2-class attention kernels (attention_fa2_fwd.cuh,
// attention_fa2_bwd.cuh): tile copies, fragment conversion, output staging and the dropout keep
// bits in both orientations. All index math comes from attention_fa2_layout.h and
// attention_keep_bitmap.h, which tests/bert_cuda checks on the CPU.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "bert/cuda/attention_fa2_layout.h"
#include "bert/cuda/attention_fragments.cuh"
#include "bert/cuda/attention_keep_bitmap.h"
#include "bert/cuda/common.cuh"
#include "bert/cuda/dropout_bits.h"
#include "bert/cuda/mma.cuh"

namespace mlbert::cuda::attention_fa2 {

constexpr float kLog2e = 1.4426950408889634f;

template <typename T>
__device__ __forceinline__ const T* head_base(const void* base, int64_t row_stride, int start,
                                              int head) {
  return static_cast<const T*>(base) + static_cast<int64_t>(start) * row_stride + head * kHeadDim;
}

// Copies head rows [row0, row0 + kRows) into a [kRows][kSmemRow] tile with cp.async; rows at or
// past `len` become zero (so products over them add nothing).
template <int kRows, int kThreads, typename T>
__device__ __forceinline__ void load_rows_async(T* tile, const T* gmem, int64_t row_stride,
                                                int row0, int len) {
  static_assert(kRows * kChunksPerRow % kThreads == 0);
#pragma unroll
  for (int i = 0; i < kRows * kChunksPerRow / kThreads; ++i) {
    const int row = tile_copy_row(threadIdx.x, i, kThreads);
    const int col = tile_copy_col(threadIdx.x, i, kThreads);
    const bool valid = row0 + row < len;
    const T* src = valid ? gmem + static_cast<int64_t>(row0 + row) * row_stride + col : gmem;
    cp_async_16(tile + row * kSmemRow + col, src, valid);
  }
}

// Writes a 16x64 accumulator, times `scale`, into rows row0 .. row0 + 15 of a shared tile.
template <typename T>
__device__ __forceinline__ void stage_rows(const float (&acc)[kNTiles][4], float scale0,
                                           float scale1, T* tile, int row0, int lane) {
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt) {
    const int col = nt * 8 + fragment_col(lane, 0);
    *reinterpret_cast<uint32_t*>(tile + (row0 + fragment_row(lane, 0)) * kSmemRow + col) =
        Pair<T>::pack(acc[nt][0] * scale0, acc[nt][1] * scale0);
    *reinterpret_cast<uint32_t*>(tile + (row0 + fragment_row(lane, 2)) * kSmemRow + col) =
        Pair<T>::pack(acc[nt][2] * scale1, acc[nt][3] * scale1);
  }
}

// ---- dropout keep bits: bit (nt * 4 + e) for accumulator element [nt][e] of a 16 x 64 tile.

// Forward orientation (rows are queries), drawn: each lane draws one Philox block per pair of n8
// tiles (dropout_bits.h) and gathers its bits by shuffles. With `save`, the blocks of the first
// `save_pairs` pairs are stored for the backward, pair j's chunk at save + j * pair_stride.
__device__ __forceinline__ uint32_t forward_keep_bits_drawn(const AttentionTileCoords& c,
                                                            const DropoutMask& mask, int lane,
                                                            uint8_t* save, uint32_t pair_stride,
                                                            int save_pairs) {
  uint32_t bits = 0;
#pragma unroll 1
  for (int pair = 0; pair < kNTiles / 2; ++pair) {
    const uint32_t drawn =
        dropout_keep_block_bits(mask, attention_forward_lane_block(c, lane, pair));
    if (pair < save_pairs)
      save[pair * pair_stride + keep_bitmap_drawn_byte(lane)] = static_cast<uint8_t>(drawn);
#pragma unroll
    for (int half = 0; half < 2; ++half)
      bits |= forward_tile_keep_bits(drawn, lane, half) << ((2 * pair + half) * 4);
  }
  return bits;
}

// Forward orientation, read: word[j] is the word keep_bitmap_forward_word(lane) of pair j's chunk.
__device__ __forceinline__ uint32_t forward_keep_bits_read(const uint32_t (&word)[kNTiles / 2],
                                                           int lane) {
  return gather_keep_nibbles(
      [&](int pair, int half) { return keep_bitmap_forward_nibble(word[pair], half, lane); });
}

// Backward orientation (rows are keys), drawn: the blocks of the transposed tile, shared by
// shuffles as in dropout_bits.h.
__device__ __forceinline__ uint32_t backward_keep_bits_drawn(const AttentionTileCoords& c,
                                                             const DropoutMask& mask, int lane) {
  uint32_t bits = 0;
#pragma unroll 1
  for (int pair = 0; pair < kNTiles / 2; ++pair) {
    const uint32_t drawn =
        dropout_keep_block_bits(mask, attention_backward_lane_block(c, lane, pair));
#pragma unroll
    for (int half = 0; half < 2; ++half)
      bits |= backward_tile_keep_bits(drawn, lane, half) << ((2 * pair + half) * 4);
  }
  return bits;
}

// Backward orientation, read: words[j] the 8 bytes keep_bitmap_backward_words(lane) of pair j's
// chunk.
__device__ __forceinline__ uint32_t backward_keep_bits_read(const uint2 (&words)[kNTiles / 2],
                                                            int lane) {
  return gather_keep_nibbles([&](int pair, int half) {
    return keep_bitmap_backward_nibble(words[pair].x, words[pair].y, half, lane);
  });
}

}  // namespace mlbert::cuda::attention_fa2
