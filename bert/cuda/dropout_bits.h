// Dropout bits for the CUDA kernels on top of bert/philox.h, so masks equal the CPU backend's bit
// for bit. One Philox 4x32-10 call yields the keep bits of eight consecutive elements (a "block",
// a 16-bit word each); the attention kernels draw each block once per warp and share it between
// the lanes that need it with shuffles. Everything here except the shuffles is __host__
// __device__, so the lane mapping is unit-tested on the CPU against bert::dropout_keep
// (tests/bert_cuda).
#pragma once

#include <cstdint>

#include "bert/philox.h"

namespace mlbert::cuda {

using bert::DropoutMask;

// Keep bits of Philox block `block` (elements 8*block .. 8*block + 7): bit i set when kept.
MLBERT_HOST_DEVICE uint32_t dropout_keep_block_bits(const DropoutMask& mask, uint64_t block) {
  const bert::Philox4x32 r = bert::philox4x32_10(
      static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), mask.site, mask.step,
      static_cast<uint32_t>(mask.seed), static_cast<uint32_t>(mask.seed >> 32));
  uint32_t bits = 0;
  for (uint32_t i = 0; i < bert::kDropoutBlockElements; ++i)
    bits |= static_cast<uint32_t>(bert::dropout_word(r, i) < mask.keep_threshold) << i;
  return bits;
}

// Keep bits of the 8 consecutive elements from `element`: bit i for element + i. The unit of the
// row-wise kernels, which handle 16-byte packs of 8 elements; their packs start at multiples of 8
// (one Philox call), any other start takes the two blocks it straddles.
MLBERT_HOST_DEVICE uint32_t dropout_keep_byte(const DropoutMask& mask, uint64_t element) {
  const uint64_t block = element >> 3;
  const uint32_t offset = static_cast<uint32_t>(element & 7u);
  const uint32_t first = dropout_keep_block_bits(mask, block);
  if (offset == 0) return first;
  const uint32_t second = dropout_keep_block_bits(mask, block + 1);
  return ((first >> offset) | (second << (8u - offset))) & 0xffu;
}

// ---- attention: the mapping from mma accumulator elements to Philox blocks
// ------------------------ A warp holds a 16 x 64 tile as 8 n8 accumulator tiles; lane L = 4g + t
// holds, in tile nt, the elements e = 0..3 at row g + 8 * (e >> 1), column nt * 8 + 2t + (e & 1).
// A tile's 128 elements are 16 Philox blocks, so the warp draws the blocks of two tiles (a
// "pair", tiles 2j and 2j + 1) at once, one per lane, and each lane gathers the bits it needs.

// Forward tile: rows are queries (token indices query_token0 + row), columns keys key0 + column.
struct AttentionTileCoords {
  uint64_t query_token0 = 0;  // token index of the tile's first row (query)
  int key0 = 0;               // first key column (a multiple of 8)
  int head = 0, num_heads = 0;
  uint64_t row_stride = 0;  // bert::attention_dropout_row_stride(max_seqlen)
};

// In pair j, lane L draws tile 2j + (L >> 4), row L & 15: keys (2j + (L >> 4)) * 8 .. + 7.
MLBERT_HOST_DEVICE uint64_t attention_forward_lane_block(const AttentionTileCoords& c, int lane,
                                                         int pair) {
  const int nt = 2 * pair + (lane >> 4);
  const uint64_t query_token = c.query_token0 + static_cast<uint64_t>(lane & 15);
  const uint64_t element = bert::attention_dropout_element(query_token, c.head, c.num_heads,
                                                           c.row_stride, c.key0 + nt * 8);
  return element >> 3;
}
// Lanes whose blocks hold this lane's rows g and g + 8 of tile 2j + half, and the position of its
// two keys in them.
MLBERT_HOST_DEVICE void attention_forward_sources(int lane, int half, int& src_row_g,
                                                  int& src_row_g8, int& shift) {
  const int group = lane >> 2, quad = lane & 3;
  src_row_g = 16 * half + group;
  src_row_g8 = src_row_g + 8;
  shift = 2 * quad;
}
// The four bits of a tile (e = 0..3) from the two gathered blocks' bits.
MLBERT_HOST_DEVICE uint32_t attention_forward_bits(uint32_t bits_row_g, uint32_t bits_row_g8,
                                                   int shift) {
  return ((bits_row_g >> shift) & 3u) | ((bits_row_g8 >> shift) & 3u) << 2;
}

// Backward tile, transposed: rows are keys key0 + row (key0 a multiple of 16), columns queries
// with token indices query_token0 + column. In pair j, lane L draws tile nt = 2j + (L >> 4):
// query column nt * 8 + (L & 7), keys key0 + 8 * ((L >> 3) & 1) .. + 7.
MLBERT_HOST_DEVICE uint64_t attention_backward_lane_block(const AttentionTileCoords& c, int lane,
                                                          int pair) {
  const int nt = 2 * pair + (lane >> 4);
  const uint64_t query_token = c.query_token0 + static_cast<uint64_t>(nt * 8 + (lane & 7));
  const uint64_t element = bert::attention_dropout_element(
      query_token, c.head, c.num_heads, c.row_stride, c.key0 + 8 * ((lane >> 3) & 1));
  return element >> 3;
}
// Lanes holding (keys 0-7, queries 2t / 2t+1) and (keys 8-15, queries 2t / 2t+1) of tile
// 2j + half; the bit of key g (or g + 8) is g.
MLBERT_HOST_DEVICE void attention_backward_sources(int lane, int half, int& src_key_g,
                                                   int& src_key_g8, int& shift) {
  const int group = lane >> 2, quad = lane & 3;
  src_key_g = 16 * half + 2 * quad;
  src_key_g8 = src_key_g + 8;
  shift = group;
}
// e0 = (key g, query 2t), e1 = (key g, query 2t+1), e2 = (key g+8, query 2t), e3 = (key g+8, 2t+1).
MLBERT_HOST_DEVICE uint32_t attention_backward_bits(uint32_t b0, uint32_t b1, uint32_t b2,
                                                    uint32_t b3, int shift) {
  return ((b0 >> shift) & 1u) | ((b1 >> shift) & 1u) << 1 | ((b2 >> shift) & 1u) << 2 |
         ((b3 >> shift) & 1u) << 3;
}

// ---- attention: keep bits the forward saves for the backward ------------------------------------
// The backward's Philox draws were a fifth of its time on the H200 (BENCHMARKS.md, "CUDA
// backend"), so the forward, which draws every block anyway, can store each block's 8 keep bits
// (one byte) and the backward reads them instead of drawing again: the same bits, so the same
// gradients. The bytes are laid out for both kernels' warps: a 32-byte chunk per (head, tile of 16
// keys, tile of 16 queries) of a sequence, tiles counted from the sequence's first token. A
// forward warp's pair of n8 tiles (16 queries x 16 keys) is one chunk, as is a backward warp's
// (16 keys x 16 queries), so each pair's 32 lanes store or load one whole chunk.
//
// Chunk (head, sequence s starting at token `start`, key tile kt, query tile qt) is number
//   (head * key_slots + start / 16 + s + kt) * query_tiles + qt,
// key_slots = tokens / 16 + sequences and query_tiles = ceil(max_seqlen / 16): a sequence of len
// tokens uses key slots start / 16 + s .. start / 16 + s + ceil(len / 16) - 1, which end before
// the next sequence's first (its start / 16 is at least this one's + floor(len / 16)).
struct AttentionKeepLayout {
  uint64_t key_slots = 0;
  uint64_t query_tiles = 0;
};
MLBERT_HOST_DEVICE AttentionKeepLayout attention_keep_layout(int64_t tokens, int64_t sequences,
                                                             int max_seqlen) {
  return AttentionKeepLayout{static_cast<uint64_t>(tokens / 16 + sequences),
                             (static_cast<uint64_t>(max_seqlen) + 15u) / 16u};
}
MLBERT_HOST_DEVICE uint64_t attention_keep_bytes(int64_t tokens, int64_t sequences, int64_t heads,
                                                 int max_seqlen) {
  const AttentionKeepLayout l = attention_keep_layout(tokens, sequences, max_seqlen);
  return static_cast<uint64_t>(heads) * l.key_slots * l.query_tiles * 32u;
}
// Byte offset of chunk (head, sequence, key tile, query tile); key_tile < ceil(len / 16) and
// query_tile < ceil(len / 16) of the sequence.
MLBERT_HOST_DEVICE uint64_t attention_keep_chunk(const AttentionKeepLayout& l, int head,
                                                 int sequence, int sequence_start, int key_tile,
                                                 int query_tile) {
  const uint64_t slot = static_cast<uint64_t>(sequence_start / 16) +
                        static_cast<uint64_t>(sequence) + static_cast<uint64_t>(key_tile);
  return ((static_cast<uint64_t>(head) * l.key_slots + slot) * l.query_tiles +
          static_cast<uint64_t>(query_tile)) *
         32u;
}
// Inside a chunk, the block of query q (mod 16) and keys 8h .. 8h + 7 (h = 0, 1) is byte
// (q >> 3) * 16 + h * 8 + (q & 7). The backward's lane L draws exactly byte L of its pair's chunk
// (attention_backward_lane_block); the forward's lane L draws query L & 15, keys half L >> 4.
MLBERT_HOST_DEVICE int attention_keep_forward_byte(int lane) {
  return ((lane & 15) >> 3) * 16 + (lane >> 4) * 8 + (lane & 7);
}
// The block byte `lane` of chunk (key tile, query tile) holds, for a sequence whose first token is
// `sequence_start`: what a kernel that fills the chunks on its own draws (one warp a chunk), the
// block of the backward's lane `lane` in the first pair of a warp starting at that chunk.
MLBERT_HOST_DEVICE uint64_t attention_keep_chunk_block(uint64_t sequence_start, int head,
                                                       int num_heads, uint64_t row_stride,
                                                       int key_tile, int query_tile, int lane) {
  return attention_backward_lane_block(
      AttentionTileCoords{sequence_start + static_cast<uint64_t>(16 * query_tile), 16 * key_tile,
                          head, num_heads, row_stride},
      lane, 0);
}

}  // namespace mlbert::cuda
