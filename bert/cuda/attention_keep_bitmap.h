// The keep-bit layout of the FlashAttention-2-class attention kernels (attention_fa2_*.cuh): the
// same 32-byte chunks at the same places as dropout_bits.h (attention_keep_chunk: one per head,
// tile of 16 keys and tile of 16 queries of a sequence; the same buffer size), but each chunk is
// the tile's 16 x 16 keep bitmap ordered so that both kernels read what a lane needs with one
// load and no shuffles.
//
// Design choice: chunk word w (bytes 4w .. 4w + 3, little-endian) holds query rows w (bits 0-15)
// and w + 8 (bits 16-31) of the tile, bit k of a row for key k. In mma.sync's accumulator layout
// lane 4g + t holds rows g and g + 8 (the forward: rows are queries), or, in the backward's
// transposed tile, queries 2t, 2t + 1 in each n8 tile: the forward lane reads word g (4 bytes),
// the backward lane words 2t and 2t + 1 (8 bytes). A Philox block (8 keys of one query row) is
// one byte, so a warp that draws the 32 blocks of a chunk stores 32 distinct bytes.
#pragma once

#include <cstdint>

#include "bert/cuda/dropout_bits.h"

namespace mlbert::cuda {

// The byte of query row `row` (0-15) and keys 8 * key_half .. + 7 inside a chunk.
MLBERT_HOST_DEVICE int keep_bitmap_byte(int row, int key_half) {
  return (row & 7) * 4 + (row >> 3) * 2 + key_half;
}

// A forward warp draws a chunk as attention_forward_lane_block does for one pair of n8 tiles:
// lane L the block of row L & 15, keys 8 * (L >> 4) .. + 7. Where that lane stores it:
MLBERT_HOST_DEVICE int keep_bitmap_drawn_byte(int lane) {
  return keep_bitmap_byte(lane & 15, lane >> 4);
}

// The block byte `keep_bitmap_drawn_byte(lane)` of chunk (key tile, query tile) holds for a
// sequence whose first token is `sequence_start` (what a kernel filling the chunks draws).
MLBERT_HOST_DEVICE uint64_t keep_bitmap_chunk_block(uint64_t sequence_start, int head,
                                                    int num_heads, uint64_t row_stride,
                                                    int key_tile, int query_tile, int lane) {
  return attention_forward_lane_block(
      AttentionTileCoords{sequence_start + static_cast<uint64_t>(16 * query_tile), 16 * key_tile,
                          head, num_heads, row_stride},
      lane, 0);
}

// ---- forward: rows are queries, lane 4g + t holds rows g, g + 8 and keys 2t, 2t + 1 of each n8
// tile. It loads the 32-bit word at byte keep_bitmap_forward_word(lane) of a chunk, and the keep
// bits of n8 tile `key_half` (0: keys 0-7 of the chunk, 1: keys 8-15), accumulator elements
// e = 0..3 as bits 0..3, are:
MLBERT_HOST_DEVICE int keep_bitmap_forward_word(int lane) {
  return 4 * (lane >> 2);
}
MLBERT_HOST_DEVICE uint32_t keep_bitmap_forward_nibble(uint32_t word, int key_half, int lane) {
  const int shift = 8 * key_half + 2 * (lane & 3);
  return ((word >> shift) & 3u) | ((word >> (16 + shift)) & 3u) << 2;
}

// ---- backward: rows are keys, lane 4g + t holds keys g, g + 8 and queries 2t, 2t + 1 of each n8
// tile. It loads the 8 bytes at keep_bitmap_backward_words(lane) (words 2t and 2t + 1), and the
// keep bits of n8 tile `query_half` (0: queries 0-7 of the chunk, 1: queries 8-15) are:
MLBERT_HOST_DEVICE int keep_bitmap_backward_words(int lane) {
  return 8 * (lane & 3);
}
MLBERT_HOST_DEVICE uint32_t keep_bitmap_backward_nibble(uint32_t word_2t, uint32_t word_2t1,
                                                        int query_half, int lane) {
  const int shift = 16 * query_half + (lane >> 2);
  return ((word_2t >> shift) & 1u) | ((word_2t1 >> shift) & 1u) << 1 |
         ((word_2t >> (shift + 8)) & 1u) << 2 | ((word_2t1 >> (shift + 8)) & 1u) << 3;
}

}  // namespace mlbert::cuda
