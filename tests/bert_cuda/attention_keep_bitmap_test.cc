// The keep bitmap of the FlashAttention-2-class attention kernels
// (bert/cuda/attention_keep_bitmap.h): the bytes their forward stores (or the fill kernel draws)
// must be, bit for bit, the mask bert::dropout_keep gives, read back by the forward's and the
// backward's lanes with the header's own functions. The kernels' loops are walked over random
// batches as they run them (forward: 128-query CTAs, 4 warps x two m16 tiles, 64-key blocks;
// backward: 128-key CTAs, 8 warps x 16 keys, 64-query tiles), with the chunk arithmetic the kernels
// use.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "bert/cuda/attention_fa2_layout.h"
#include "bert/cuda/attention_keep_bitmap.h"
#include "bert/cuda/dropout_bits.h"
#include "bert/philox.h"
#include "tests/bert_cuda/attention_walk.h"

namespace fa2_keep_bitmap_test {

namespace cuda = mlbert::cuda;
namespace fa2 = mlbert::cuda::attention_fa2;
using mlbert::bert::attention_dropout_element;
using mlbert::bert::attention_dropout_row_stride;
using mlbert::bert::DropoutMask;

constexpr int kLanes = 32;

// Which bit of the loaded words each nibble bit comes from, found by probing the header's
// functions one set bit at a time: forward[key_half][e] = bit of the 32-bit word; backward
// [query_half][e] = bit of the 64 bits (word 2t in bits 0-31, word 2t + 1 in 32-63).
struct NibbleSources {
  std::array<std::array<int, 4>, 2> forward{}, backward{};
};
NibbleSources probe_nibbles(int lane) {
  NibbleSources s;
  for (auto& h : s.forward) h.fill(-1);
  for (auto& h : s.backward) h.fill(-1);
  for (int half = 0; half < 2; ++half) {
    for (int bit = 0; bit < 32; ++bit) {
      const uint32_t nibble = cuda::keep_bitmap_forward_nibble(1u << bit, half, lane);
      for (int e = 0; e < 4; ++e)
        if ((nibble >> e) & 1u) {
          REQUIRE(s.forward[half][e] == -1);  // one source bit per element
          s.forward[half][e] = bit;
        }
    }
    for (int bit = 0; bit < 64; ++bit) {
      const uint32_t w0 = bit < 32 ? 1u << bit : 0u, w1 = bit >= 32 ? 1u << (bit - 32) : 0u;
      const uint32_t nibble = cuda::keep_bitmap_backward_nibble(w0, w1, half, lane);
      for (int e = 0; e < 4; ++e)
        if ((nibble >> e) & 1u) {
          REQUIRE(s.backward[half][e] == -1);
          s.backward[half][e] = bit;
        }
    }
  }
  for (int half = 0; half < 2; ++half)
    for (int e = 0; e < 4; ++e) {
      REQUIRE(s.forward[half][e] >= 0);
      REQUIRE(s.backward[half][e] >= 0);
    }
  return s;
}

using mlbert::test::attention_walk::Batch;
using mlbert::test::attention_walk::Violations;

}  // namespace fa2_keep_bitmap_test

TEST_CASE(
    "attention fa2 keep bitmap: the forward's stored bytes are read back as the per-element "
    "mask by forward and backward lanes") {
  using namespace fa2_keep_bitmap_test;  // NOLINT
  // Walks the forward kernel's stores (forward-keeps: each live m16 tile draws a pair of n8 tiles
  // per lane and stores it) and the fill kernel's (kernel-keeps: one warp a chunk) over random
  // batches: every byte lands inside the buffer, once, and both hold the same Philox block. Then
  // every element the forward's lanes (kernel-keeps) or the backward's lanes read, in their
  // kernels' loops, must be dropout_keep of that element bit for bit (the bits come from real
  // Philox draws of the stored blocks), taken from the byte of its own block and its own bit.
  std::mt19937_64 rng(47);
  std::array<NibbleSources, kLanes> nibbles;
  for (int lane = 0; lane < kLanes; ++lane) nibbles[lane] = probe_nibbles(lane);
  uint64_t forward_reads = 0, backward_reads = 0;
  Violations v;
  for (int trial = 0; trial < 40; ++trial) {
    const Batch b = mlbert::test::attention_walk::random_batch(rng, trial, 4, 2);
    const DropoutMask mask =
        mlbert::bert::make_dropout_mask(rng(), static_cast<uint32_t>(rng() % 1000),
                                        static_cast<uint32_t>(rng() % 70), 0.1 + 0.4 * (trial % 3));
    const uint64_t row_stride = attention_dropout_row_stride(b.max_seqlen);
    const cuda::AttentionKeepLayout layout =
        cuda::attention_keep_layout(b.tokens, static_cast<int64_t>(b.lengths.size()), b.max_seqlen);
    const uint64_t bytes = cuda::attention_keep_bytes(
        b.tokens, static_cast<int64_t>(b.lengths.size()), b.heads, b.max_seqlen);
    const uint32_t pair_stride = static_cast<uint32_t>(layout.query_tiles) * 32u;
    std::vector<int64_t> block_of(bytes, -1);  // the Philox block each stored byte holds
    std::vector<uint8_t> buffer(bytes, 0);
    auto load32 = [&](uint64_t at) {
      uint32_t w = 0;
      v.expect(at + 4 <= bytes, [&] { return "a load past the buffer"; });
      if (at + 4 > bytes) return w;
      std::memcpy(&w, &buffer[at], 4);  // little-endian, as the GPU loads it
      for (uint64_t i = at; i < at + 4; ++i)
        v.expect(block_of[i] != -1, [&] { return "a read of a byte never stored"; });
      return w;
    };
    for (int s = 0; s < static_cast<int>(b.lengths.size()); ++s) {
      const int start = b.starts[s], len = b.lengths[s];
      for (int head = 0; head < b.heads; ++head) {
        auto expected = [&](int query, int key) {
          return mlbert::bert::dropout_keep(
              mask, attention_dropout_element(static_cast<uint64_t>(start + query), head, b.heads,
                                              row_stride, key));
        };
        auto describe = [&](const char* what, int query, int key, int lane) {
          return std::string(what) + ": trial " + std::to_string(trial) + " sequence " +
                 std::to_string(s) + " head " + std::to_string(head) + " query " +
                 std::to_string(query) + " key " + std::to_string(key) + " lane " +
                 std::to_string(lane);
        };
        // The forward kernel's loops: CTAs, live warps and m16 tiles, key blocks, pairs in the
        // sequence; `visit` gets each pair's chunk as the kernel computes it.
        auto walk_forward = [&](auto visit) {
          for (int row0 = 0; row0 < len; row0 += fa2::kFwdBlockM)
            for (int warp = 0; warp < fa2::kFwdWarps; ++warp) {
              if (row0 + fa2::fwd_tile_row0(warp, 0) >= len) continue;
              const uint64_t keep_chunks = cuda::attention_keep_chunk(
                  layout, head, s, start, 0, (row0 + fa2::fwd_tile_row0(warp, 0)) / 16);
              for (int mt = 0; mt < fa2::kFwdMTiles; ++mt) {
                const int tile_row0 = row0 + fa2::fwd_tile_row0(warp, mt);
                if (tile_row0 >= len) continue;
                for (int key0 = 0; key0 < len; key0 += fa2::kFwdBlockN) {
                  const uint64_t keep_block =
                      keep_chunks + static_cast<uint64_t>(key0 / 16) * pair_stride;
                  const int keep_pairs = std::min(4, fa2::ceil_div_int(len - key0, 16));
                  for (int pair = 0; pair < keep_pairs; ++pair) {
                    const uint64_t chunk = keep_block + mt * 32u + pair * pair_stride;
                    REQUIRE(chunk == cuda::attention_keep_chunk(layout, head, s, start,
                                                                key0 / 16 + pair, tile_row0 / 16));
                    visit(chunk, tile_row0, key0, pair);
                  }
                }
              }
            }
        };
        // forward-keeps: each lane stores its drawn block, once, inside the buffer.
        walk_forward([&](uint64_t chunk, int tile_row0, int key0, int pair) {
          const cuda::AttentionTileCoords c{static_cast<uint64_t>(start + tile_row0), key0, head,
                                            b.heads, row_stride};
          for (int lane = 0; lane < kLanes; ++lane) {
            const uint64_t at = chunk + cuda::keep_bitmap_drawn_byte(lane);
            const uint64_t block = cuda::attention_forward_lane_block(c, lane, pair);
            v.expect(at < bytes && block_of[at] == -1, [&] {
              return describe("store out of bounds or twice", tile_row0, key0, lane);
            });
            if (at >= bytes) continue;
            block_of[at] = static_cast<int64_t>(block);
            buffer[at] = static_cast<uint8_t>(cuda::dropout_keep_block_bits(mask, block));
            // The fill kernel (one warp a chunk) draws the same block into that byte.
            v.expect(
                cuda::keep_bitmap_chunk_block(static_cast<uint64_t>(start), head, b.heads,
                                              row_stride, key0 / 16 + pair, tile_row0 / 16,
                                              lane) == block,
                [&] { return describe("fill kernel's block differs", tile_row0, key0, lane); });
          }
        });
        // kernel-keeps' forward reads: every element of the sequence, the element's own bit.
        walk_forward([&](uint64_t chunk, int tile_row0, int key0, int pair) {
          for (int lane = 0; lane < kLanes; ++lane) {
            const int g = lane >> 2, t = lane & 3;
            const uint64_t at = chunk + cuda::keep_bitmap_forward_word(lane);
            const uint32_t word = load32(at);
            for (int half = 0; half < 2; ++half) {
              const uint32_t nibble = cuda::keep_bitmap_forward_nibble(word, half, lane);
              for (int e = 0; e < 4; ++e) {
                const int query = tile_row0 + g + 8 * (e >> 1);
                const int key = key0 + 16 * pair + half * 8 + 2 * t + (e & 1);
                if (query >= len || key >= len) continue;
                v.expect(((nibble >> e) & 1u) == static_cast<uint32_t>(expected(query, key)),
                         [&] { return describe("forward read", query, key, lane); });
                const int bit = nibbles[lane].forward[half][e];
                const uint64_t element = attention_dropout_element(
                    static_cast<uint64_t>(start + query), head, b.heads, row_stride, key);
                v.expect(at + bit / 8 < bytes &&
                             block_of[at + bit / 8] == static_cast<int64_t>(element >> 3) &&
                             bit % 8 == static_cast<int>(element & 7),
                         [&] { return describe("forward read's byte or bit", query, key, lane); });
                ++forward_reads;
              }
            }
          }
        });
        // The backward's reads: warps of 16 keys, tiles of 64 queries, pairs in the sequence.
        for (int warp_key0 = 0; warp_key0 < len; warp_key0 += fa2::kBwdKeysPerWarp) {
          const uint64_t saved_keys =
              cuda::attention_keep_chunk(layout, head, s, start, warp_key0 / 16, 0);
          for (int query0 = 0; query0 < len; query0 += fa2::kBwdBlockM) {
            for (int pair = 0; pair < 4 && query0 + 16 * pair < len; ++pair) {
              for (int lane = 0; lane < kLanes; ++lane) {
                const int g = lane >> 2, t = lane & 3;
                const uint64_t at = saved_keys + cuda::keep_bitmap_backward_words(lane) +
                                    static_cast<uint64_t>(query0 / 16 + pair) * 32u;
                v.expect(at % 8 == 0, [&] {
                  return describe("unaligned 8-byte load", query0, warp_key0, lane);
                });
                const uint32_t w0 = load32(at), w1 = load32(at + 4);
                for (int half = 0; half < 2; ++half) {
                  const uint32_t nibble = cuda::keep_bitmap_backward_nibble(w0, w1, half, lane);
                  for (int e = 0; e < 4; ++e) {
                    const int key = warp_key0 + g + 8 * (e >> 1);
                    const int query = query0 + 16 * pair + half * 8 + 2 * t + (e & 1);
                    if (query >= len || key >= len) continue;
                    v.expect(((nibble >> e) & 1u) == static_cast<uint32_t>(expected(query, key)),
                             [&] { return describe("backward read", query, key, lane); });
                    const int bit = nibbles[lane].backward[half][e];
                    const uint64_t element = attention_dropout_element(
                        static_cast<uint64_t>(start + query), head, b.heads, row_stride, key);
                    v.expect(
                        at + bit / 8 < bytes &&
                            block_of[at + bit / 8] == static_cast<int64_t>(element >> 3) &&
                            bit % 8 == static_cast<int>(element & 7),
                        [&] { return describe("backward read's byte or bit", query, key, lane); });
                    ++backward_reads;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  INFO(v.first);
  REQUIRE(v.count == 0);
  // Every element of every sequence was read once in each orientation.
  CHECK(forward_reads == backward_reads);
  CHECK(forward_reads > 100000);
}

TEST_CASE("attention fa2 keep bitmap: a drawing warp stores its 32 blocks in 32 distinct bytes") {
  using namespace fa2_keep_bitmap_test;  // NOLINT
  std::set<int> bytes;
  for (int lane = 0; lane < kLanes; ++lane) {
    const int byte = cuda::keep_bitmap_drawn_byte(lane);
    CHECK(byte >= 0);
    CHECK(byte < 32);
    bytes.insert(byte);
    // Lane L draws row L & 15, keys 8 * (L >> 4): its byte is that row's and half's.
    CHECK(byte == cuda::keep_bitmap_byte(lane & 15, lane >> 4));
  }
  CHECK(bytes.size() == 32);
}
