// Dropout bits for the CUDA kernels on top of bert/philox.h, so masks equal the CPU backend's bit
// for bit. One Philox 4x32-10 call yields the keep bits of four consecutive elements (a "block");
// the attention kernels draw each block once per warp and share it between the lanes that need it
// with shuffles. Everything here except the shuffles is __host__ __device__, so the lane mapping
// is unit-tested on the CPU against bert::dropout_keep (tests/bert_cuda).
#pragma once

#include <cstdint>

#include "bert/philox.h"

namespace mlbert::cuda {

using bert::DropoutMask;

// Keep bits of Philox block `block` (elements 4*block .. 4*block + 3): bit i set when kept.
MLBERT_HOST_DEVICE uint32_t dropout_keep_nibble(const DropoutMask& mask, uint64_t block) {
  const bert::Philox4x32 r = bert::philox4x32_10(
      static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), mask.site, mask.step,
      static_cast<uint32_t>(mask.seed), static_cast<uint32_t>(mask.seed >> 32));
  return static_cast<uint32_t>(r.v[0] < mask.keep_threshold) |
         static_cast<uint32_t>(r.v[1] < mask.keep_threshold) << 1 |
         static_cast<uint32_t>(r.v[2] < mask.keep_threshold) << 2 |
         static_cast<uint32_t>(r.v[3] < mask.keep_threshold) << 3;
}

// Keep bits of the 8 consecutive elements from `element` (a multiple of 4): bit i for element + i.
// The unit of the row-wise kernels, which handle 16-byte packs of 8 elements.
MLBERT_HOST_DEVICE uint32_t dropout_keep_byte(const DropoutMask& mask, uint64_t element) {
  const uint64_t block = element >> 2;
  return dropout_keep_nibble(mask, block) | dropout_keep_nibble(mask, block + 1) << 4;
}

// ---- attention: the mapping from mma accumulator elements to Philox blocks
// ------------------------ A warp holds a 16 x 64 tile as 8 n8 accumulator tiles; lane L = 4g + t
// holds, in tile nt, the elements e = 0..3 at row g + 8 * (e >> 1), column nt * 8 + 2t + (e & 1).
// The warp needs 32 Philox blocks per tile, so every lane draws exactly one per tile and gathers
// the bits it needs.

// Forward tile: rows are queries (token indices query_token0 + row), columns keys key0 + column.
struct AttentionTileCoords {
  uint64_t query_token0 = 0;  // token index of the tile's first row (query)
  int key0 = 0;               // first key column (a multiple of 4)
  int head = 0, num_heads = 0;
  uint64_t row_stride = 0;  // bert::attention_dropout_row_stride(max_seqlen)
};

// Block lane L draws in n8 tile nt: row g + 8 * (t & 1), keys nt * 8 + 4 * (t >> 1) .. + 3.
MLBERT_HOST_DEVICE uint64_t attention_forward_lane_block(const AttentionTileCoords& c, int lane,
                                                         int nt) {
  const int group = lane >> 2, quad = lane & 3;
  const uint64_t query_token = c.query_token0 + static_cast<uint64_t>(group + 8 * (quad & 1));
  const uint64_t element = bert::attention_dropout_element(
      query_token, c.head, c.num_heads, c.row_stride, c.key0 + nt * 8 + 4 * (quad >> 1));
  return element >> 2;
}
// Lanes whose blocks hold this lane's rows g and g + 8, and the position of its two keys in them.
MLBERT_HOST_DEVICE void attention_forward_sources(int lane, int& src_row_g, int& src_row_g8,
                                                  int& shift) {
  const int group = lane >> 2, quad = lane & 3;
  src_row_g = 4 * group + (quad & 2);
  src_row_g8 = src_row_g + 1;
  shift = (quad & 1) * 2;
}
// The four bits of tile nt (e = 0..3) from the two gathered nibbles.
MLBERT_HOST_DEVICE uint32_t attention_forward_bits(uint32_t nibble_row_g, uint32_t nibble_row_g8,
                                                   int shift) {
  return ((nibble_row_g >> shift) & 3u) | ((nibble_row_g8 >> shift) & 3u) << 2;
}

// Backward tile, transposed: rows are keys key0 + row (key0 a multiple of 16), columns queries
// with token indices query_token0 + column. Lane L draws the block of query column nt * 8 + (L & 7)
// and keys 4 * (L >> 3) .. + 3.
MLBERT_HOST_DEVICE uint64_t attention_backward_lane_block(const AttentionTileCoords& c, int lane,
                                                          int nt) {
  const uint64_t query_token = c.query_token0 + static_cast<uint64_t>(nt * 8 + (lane & 7));
  const uint64_t element = bert::attention_dropout_element(query_token, c.head, c.num_heads,
                                                           c.row_stride, c.key0 + 4 * (lane >> 3));
  return element >> 2;
}
// Lanes holding (key g, queries 2t / 2t+1) and (key g+8, queries 2t / 2t+1); the bit is g & 3.
MLBERT_HOST_DEVICE void attention_backward_sources(int lane, int& src_key_g, int& src_key_g8,
                                                   int& shift) {
  const int group = lane >> 2, quad = lane & 3;
  src_key_g = (group >> 2) * 8 + 2 * quad;
  src_key_g8 = (2 + (group >> 2)) * 8 + 2 * quad;
  shift = group & 3;
}
// e0 = (key g, query 2t), e1 = (key g, query 2t+1), e2 = (key g+8, query 2t), e3 = (key g+8, 2t+1).
MLBERT_HOST_DEVICE uint32_t attention_backward_bits(uint32_t n0, uint32_t n1, uint32_t n2,
                                                    uint32_t n3, int shift) {
  return ((n0 >> shift) & 1u) | ((n1 >> shift) & 1u) << 1 | ((n2 >> shift) & 1u) << 2 |
         ((n3 >> shift) & 1u) << 3;
}

}  // namespace mlbert::cuda
