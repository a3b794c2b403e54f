// The CUDA kernels' dropout drawing (one Philox block per 8 elements, shared between warp lanes by
// shuffles) must reproduce bert::dropout_keep element for element, or the two backends disagree.
// The lane mapping is __host__ __device__, so a 32-lane warp is simulated here exactly as the
// kernels run it: every lane draws its block for a pair of n8 tiles, then each lane reads the
// bits of its sources.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <random>
#include <set>
#include <vector>

#include "bert/cuda/dropout_bits.h"
#include "bert/philox.h"

namespace {

using mlbert::bert::attention_dropout_element;
using mlbert::bert::attention_dropout_row_stride;
using mlbert::bert::dropout_keep;
using mlbert::bert::DropoutMask;
using mlbert::bert::make_dropout_mask;
namespace cuda = mlbert::cuda;

constexpr int kLanes = 32;
constexpr int kTiles = 8;

DropoutMask random_mask(std::mt19937_64& rng, double p) {
  return make_dropout_mask(rng(), static_cast<uint32_t>(rng() % 100000),
                           static_cast<uint32_t>(rng() % 80), p);
}

}  // namespace

TEST_CASE("dropout_keep_byte equals bert::dropout_keep for every element of a pack") {
  std::mt19937_64 rng(7);
  for (double p : {0.1, 0.5, 0.9}) {
    const DropoutMask mask = random_mask(rng, p);
    int kept = 0;
    for (int trial = 0; trial < 2000; ++trial) {
      // Packs start at multiples of 8 in the kernels; every other start is checked too.
      const uint64_t alignment_bits = trial % 4 == 0 ? 0 : 7;
      const uint64_t element = (rng() % (uint64_t{1} << 40)) & ~alignment_bits;
      const uint32_t bits = cuda::dropout_keep_byte(mask, element);
      for (int i = 0; i < 8; ++i) {
        REQUIRE(((bits >> i) & 1u) == static_cast<uint32_t>(dropout_keep(mask, element + i)));
        kept += (bits >> i) & 1u;
      }
    }
    // The keep rate follows 1 - p (16000 draws: 5 sigma is below 0.02).
    CHECK(kept / 16000.0 == Approx(1.0 - p).margin(0.02));
  }
}

TEST_CASE("attention forward: warp lanes sharing Philox blocks reproduce the per-element mask") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const DropoutMask mask = random_mask(rng, 0.1 + 0.8 * (trial % 5) / 4.0);
    cuda::AttentionTileCoords c;
    c.num_heads = 1 + static_cast<int>(rng() % 16);
    c.head = static_cast<int>(rng() % c.num_heads);
    c.query_token0 = rng() % 100000;
    c.key0 = 64 * static_cast<int>(rng() % 8);
    // The tile's keys lie inside the longest sequence, as in every tile the kernel keeps.
    const int max_seqlen = c.key0 + 64 + static_cast<int>(rng() % (512 - c.key0 - 63));
    c.row_stride = attention_dropout_row_stride(max_seqlen);
    for (int nt = 0; nt < kTiles; ++nt) {
      const int pair = nt / 2, half = nt % 2;
      std::array<uint32_t, kLanes> drawn{};
      std::set<uint64_t> blocks;
      for (int lane = 0; lane < kLanes; ++lane) {
        const uint64_t block = cuda::attention_forward_lane_block(c, lane, pair);
        blocks.insert(block);
        drawn[lane] = cuda::dropout_keep_block_bits(mask, block);
      }
      REQUIRE(blocks.size() == kLanes);  // each block drawn once per warp
      for (int lane = 0; lane < kLanes; ++lane) {
        int src_g, src_g8, shift;
        cuda::attention_forward_sources(lane, half, src_g, src_g8, shift);
        const uint32_t bits = cuda::attention_forward_bits(drawn[src_g], drawn[src_g8], shift);
        const int group = lane >> 2, quad = lane & 3;
        for (int e = 0; e < 4; ++e) {
          const uint64_t query_token = c.query_token0 + group + 8 * (e >> 1);
          const int key = c.key0 + nt * 8 + 2 * quad + (e & 1);
          const bool expected = dropout_keep(
              mask, attention_dropout_element(query_token, c.head, c.num_heads, c.row_stride, key));
          INFO("lane " << lane << " tile " << nt << " element " << e);
          REQUIRE(((bits >> e) & 1u) == static_cast<uint32_t>(expected));
        }
      }
    }
  }
}

TEST_CASE("attention backward: the transposed tile's shared draws reproduce the per-element mask") {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 200; ++trial) {
    const DropoutMask mask = random_mask(rng, 0.1 + 0.8 * (trial % 5) / 4.0);
    cuda::AttentionTileCoords c;
    c.num_heads = 1 + static_cast<int>(rng() % 16);
    c.head = static_cast<int>(rng() % c.num_heads);
    c.query_token0 = rng() % 100000;
    c.key0 = 16 * static_cast<int>(rng() % 32);  // a warp's first key: multiples of 16
    const int max_seqlen = c.key0 + 16 + static_cast<int>(rng() % (512 - c.key0 - 15));
    c.row_stride = attention_dropout_row_stride(max_seqlen);
    for (int nt = 0; nt < kTiles; ++nt) {
      const int pair = nt / 2, half = nt % 2;
      std::array<uint32_t, kLanes> drawn{};
      std::set<uint64_t> blocks;
      for (int lane = 0; lane < kLanes; ++lane) {
        const uint64_t block = cuda::attention_backward_lane_block(c, lane, pair);
        blocks.insert(block);
        drawn[lane] = cuda::dropout_keep_block_bits(mask, block);
      }
      REQUIRE(blocks.size() == kLanes);
      for (int lane = 0; lane < kLanes; ++lane) {
        int src_g, src_g8, shift;
        cuda::attention_backward_sources(lane, half, src_g, src_g8, shift);
        const uint32_t bits = cuda::attention_backward_bits(
            drawn[src_g], drawn[src_g + 1], drawn[src_g8], drawn[src_g8 + 1], shift);
        const int group = lane >> 2, quad = lane & 3;
        for (int e = 0; e < 4; ++e) {
          const int key = c.key0 + group + 8 * (e >> 1);
          const uint64_t query_token = c.query_token0 + nt * 8 + 2 * quad + (e & 1);
          const bool expected = dropout_keep(
              mask, attention_dropout_element(query_token, c.head, c.num_heads, c.row_stride, key));
          INFO("lane " << lane << " tile " << nt << " element " << e);
          REQUIRE(((bits >> e) & 1u) == static_cast<uint32_t>(expected));
        }
      }
    }
  }
}

TEST_CASE("attention keep bits: the bytes the forward saves are the blocks the backward draws") {
  // (and the blocks a kernel of their own draws into the same bytes)
  // Walks the kernels' loops (forward: 64-query CTAs of four 16-row warps over 64-key blocks;
  // backward: 64-key CTAs of four 16-key warps over 64-query blocks; each warp a pair of n8 tiles
  // at a time, skipping tiles that start past the sequence) over random batches, and checks that
  // every byte the forward stores lies inside the buffer, is stored once, and holds the block the
  // backward's lane reading it would have drawn, and that the backward reads only stored bytes.
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 60; ++trial) {
    const int sequences = 1 + static_cast<int>(rng() % 9);
    std::vector<int> starts, lengths;
    int tokens = 0, longest = 0;
    for (int s = 0; s < sequences; ++s) {
      const int len =
          trial % 3 == 0 ? 1 + static_cast<int>(rng() % 40) : 1 + static_cast<int>(rng() % 512);
      starts.push_back(tokens);
      lengths.push_back(len);
      tokens += len;
      longest = std::max(longest, len);
    }
    const int max_seqlen = longest + (trial % 2 == 0 ? 0 : static_cast<int>(rng() % 100));
    const int heads = 1 + static_cast<int>(rng() % 4);
    const cuda::AttentionKeepLayout layout =
        cuda::attention_keep_layout(tokens, sequences, max_seqlen);
    const uint64_t bytes = cuda::attention_keep_bytes(tokens, sequences, heads, max_seqlen);
    std::vector<int64_t> stored(bytes, -1);  // the block each byte holds
    cuda::AttentionTileCoords c;
    c.num_heads = heads;
    c.row_stride = attention_dropout_row_stride(max_seqlen);
    uint64_t writes = 0, reads = 0;
    for (int s = 0; s < sequences; ++s) {
      const int start = starts[s], len = lengths[s];
      for (int head = 0; head < heads; ++head) {
        c.head = head;
        for (int warp_q0 = 0; warp_q0 < len; warp_q0 += 16) {  // forward warps
          c.query_token0 = static_cast<uint64_t>(start + warp_q0);
          for (int key0 = 0; key0 < len; key0 += 64) {
            c.key0 = key0;
            for (int pair = 0; pair < 4 && key0 + 16 * pair < len; ++pair) {
              const uint64_t chunk = cuda::attention_keep_chunk(layout, head, s, start,
                                                                key0 / 16 + pair, warp_q0 / 16);
              for (int lane = 0; lane < kLanes; ++lane) {
                const uint64_t at = chunk + cuda::attention_keep_forward_byte(lane);
                REQUIRE(at < bytes);
                REQUIRE(stored[at] == -1);
                stored[at] =
                    static_cast<int64_t>(cuda::attention_forward_lane_block(c, lane, pair));
                ++writes;
                // A kernel filling the chunk on its own draws the same block into that byte.
                REQUIRE(stored[at] == static_cast<int64_t>(cuda::attention_keep_chunk_block(
                                          static_cast<uint64_t>(start), head, heads, c.row_stride,
                                          key0 / 16 + pair, warp_q0 / 16,
                                          cuda::attention_keep_forward_byte(lane))));
              }
            }
          }
        }
        for (int warp_k0 = 0; warp_k0 < len; warp_k0 += 16) {  // backward warps
          c.key0 = warp_k0;
          for (int query0 = 0; query0 < len; query0 += 64) {
            c.query_token0 = static_cast<uint64_t>(start + query0);
            for (int pair = 0; pair < 4 && query0 + 16 * pair < len; ++pair) {
              const uint64_t chunk = cuda::attention_keep_chunk(layout, head, s, start,
                                                                warp_k0 / 16, query0 / 16 + pair);
              for (int lane = 0; lane < kLanes; ++lane) {
                const uint64_t at = chunk + static_cast<uint64_t>(lane);
                INFO("sequence " << s << " head " << head << " keys " << warp_k0 << " queries "
                                 << query0 << " pair " << pair << " lane " << lane);
                REQUIRE(at < bytes);
                REQUIRE(stored[at] ==
                        static_cast<int64_t>(cuda::attention_backward_lane_block(c, lane, pair)));
                ++reads;
              }
            }
          }
        }
      }
    }
    REQUIRE(reads == writes);
    REQUIRE(writes > 0);
  }
}

TEST_CASE("attention keep bits: chunks step as the kernels step through them") {
  // The forward kernel finds chunk (kt, qt) as chunk (0, qt) + kt x query_tiles x 32 and the
  // backward as chunk (kt, 0) + qt x 32; the fill kernel calls attention_keep_chunk itself. A
  // layout that placed chunks otherwise would pass the test above and break both kernels.
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 40; ++trial) {
    const int sequences = 1 + static_cast<int>(rng() % 6);
    std::vector<int> starts, lengths;
    int tokens = static_cast<int>(rng() % 40);  // the first sequence need not start at token 0
    int longest = 0;
    for (int s = 0; s < sequences; ++s) {
      const int len = 1 + static_cast<int>(rng() % 300);
      starts.push_back(tokens);
      lengths.push_back(len);
      tokens += len;
      longest = std::max(longest, len);
    }
    const int max_seqlen = longest + static_cast<int>(rng() % 50);
    const int heads = 1 + static_cast<int>(rng() % 3);
    const cuda::AttentionKeepLayout layout =
        cuda::attention_keep_layout(tokens, sequences, max_seqlen);
    const uint64_t key_step = layout.query_tiles * 32u;
    for (int head = 0; head < heads; ++head) {
      for (int s = 0; s < sequences; ++s) {
        const int tiles = (lengths[s] + 15) / 16;
        const uint64_t first = cuda::attention_keep_chunk(layout, head, s, starts[s], 0, 0);
        for (int kt = 0; kt < tiles; ++kt) {
          for (int qt = 0; qt < tiles; ++qt) {
            INFO("trial " << trial << " head " << head << " sequence " << s << " key tile " << kt
                          << " query tile " << qt);
            const uint64_t chunk = cuda::attention_keep_chunk(layout, head, s, starts[s], kt, qt);
            CHECK(chunk ==
                  first + static_cast<uint64_t>(kt) * key_step + static_cast<uint64_t>(qt) * 32u);
            CHECK(chunk % 32u == 0);
            CHECK(chunk + 32u <= cuda::attention_keep_bytes(tokens, sequences, heads, max_seqlen));
          }
        }
      }
    }
  }
}
