// The tile geometry of the FlashAttention-2-class attention kernels (bert/cuda/
// attention_fa2_layout.h), walked on the CPU over random batches exactly as the kernels' loops
// run: every output element, log-sum-exp, dK/dV row and dQ contribution lands in bounds, once
// (dQ: once per 128-key block), from the warp and lane that computed it; every shared-memory
// address stays inside its tile's 64 data columns; and the only tiles that skip the sequence-end
// mask are those wholly inside the sequence.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bert/cuda/attention_fa2_layout.h"
#include "tests/bert_cuda/attention_walk.h"

namespace fa2_tiles_test {

namespace fa2 = mlbert::cuda::attention_fa2;
constexpr int kLanes = 32;

using mlbert::test::attention_walk::Batch;
using mlbert::test::attention_walk::Violations;

// A tile copy by `threads` threads of `rows` rows fills every (row, 16-byte chunk) once.
void check_tile_copy(int rows, int threads) {
  std::vector<int> copies(rows * fa2::kChunksPerRow, 0);
  for (int thread = 0; thread < threads; ++thread) {
    for (int i = 0; i < rows * fa2::kChunksPerRow / threads; ++i) {
      const int row = fa2::tile_copy_row(thread, i, threads);
      const int col = fa2::tile_copy_col(thread, i, threads);
      REQUIRE(row < rows);
      REQUIRE(col % 8 == 0);
      REQUIRE(col + 8 <= fa2::kHeadDim);
      ++copies[row * fa2::kChunksPerRow + col / 8];
    }
  }
  for (int c : copies) REQUIRE(c == 1);
}

// Every lane's ldmatrix row address for a pattern at (row0, col0) reads 8 elements inside rows
// [0, rows) and the 64 data columns.
void check_ldmatrix(bool a_pattern, int row0, int col0, int rows) {
  for (int lane = 0; lane < kLanes; ++lane) {
    const int at = a_pattern ? fa2::a_pattern_offset(lane, row0, col0)
                             : fa2::b_pattern_offset(lane, row0, col0);
    INFO((a_pattern ? "A" : "B") << " pattern at (" << row0 << ", " << col0 << ") lane " << lane);
    REQUIRE(at >= 0);
    REQUIRE(at / fa2::kSmemRow < rows);
    REQUIRE(at % fa2::kSmemRow + 8 <= fa2::kHeadDim);
  }
}

}  // namespace fa2_tiles_test

TEST_CASE(
    "attention fa2 forward: every output element and log-sum-exp is stored once, by the "
    "warp that computed it") {
  using namespace fa2_tiles_test;  // NOLINT
  check_tile_copy(fa2::kFwdBlockM, fa2::kFwdThreads);
  check_tile_copy(fa2::kFwdBlockN, fa2::kFwdThreads);
  for (int warp = 0; warp < fa2::kFwdWarps; ++warp)
    for (int mt = 0; mt < fa2::kFwdMTiles; ++mt)
      for (int ks = 0; ks < fa2::kKSteps; ++ks)
        check_ldmatrix(true, fa2::fwd_tile_row0(warp, mt), ks * 16, fa2::kFwdBlockM);  // Q
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      check_ldmatrix(false, i * 16, j * 16, fa2::kFwdBlockN);  // K
      check_ldmatrix(true, i * 16, j * 16, fa2::kFwdBlockN);   // V (.trans)
    }
  // Per warp: the CTA rows whose log-sum-exp it writes (the quad's lane 0, elements 0 and 2) and
  // the (CTA row, column) of every element its store loop copies out, each one it staged itself.
  std::vector<std::vector<int>> lse_rows_of_warp(fa2::kFwdWarps);
  std::vector<std::vector<std::pair<int, int>>> stores_of_warp(fa2::kFwdWarps);
  for (int warp = 0; warp < fa2::kFwdWarps; ++warp) {
    std::set<std::pair<int, int>> staged;
    for (int mt = 0; mt < fa2::kFwdMTiles; ++mt)
      for (int nt = 0; nt < fa2::kNTiles; ++nt)
        for (int lane = 0; lane < kLanes; ++lane)
          for (int e = 0; e < 4; ++e) {
            const int row = fa2::fwd_tile_row0(warp, mt) + fa2::fragment_row(lane, e);
            const int col = nt * 8 + fa2::fragment_col(lane, e);
            REQUIRE(staged.insert({row, col}).second);
            if ((lane & 3) == 0 && nt == 0 && (e & 1) == 0) lse_rows_of_warp[warp].push_back(row);
          }
    for (int lane = 0; lane < kLanes; ++lane)
      for (int i = 0; i < fa2::kFwdStoreChunksPerLane; ++i) {
        const int row = fa2::fwd_store_row(warp, lane, i);
        const int col = fa2::fwd_store_col(lane, i);
        REQUIRE(row < fa2::kFwdBlockM);
        for (int c = col; c < col + 8; ++c) {
          INFO("warp " << warp << " lane " << lane << " row " << row << " col " << c);
          REQUIRE(staged.count({row, c}) == 1);  // staged by this very warp
          stores_of_warp[warp].push_back({row, c});
        }
      }
  }
  std::mt19937_64 rng(53);
  for (int trial = 0; trial < 40; ++trial) {
    const Batch b = mlbert::test::attention_walk::random_batch(rng, trial, 6, 3);
    const int width = b.heads * fa2::kHeadDim;
    std::vector<int> out_writes(static_cast<size_t>(b.tokens) * width, 0);
    std::vector<int> lse_writes(static_cast<size_t>(b.tokens) * b.heads, 0);
    for (size_t s = 0; s < b.lengths.size(); ++s) {
      const int start = b.starts[s], len = b.lengths[s];
      for (int head = 0; head < b.heads; ++head) {
        for (int m_block = 0; m_block < fa2::fwd_query_blocks(b.max_seqlen); ++m_block) {
          const int row0 = m_block * fa2::kFwdBlockM;
          if (row0 >= len) continue;  // the CTA returns
          for (int warp = 0; warp < fa2::kFwdWarps; ++warp) {
            if (row0 + fa2::fwd_tile_row0(warp, 0) >= len) continue;  // warp_live
            for (int row : lse_rows_of_warp[warp])
              if (row0 + row < len)
                ++lse_writes[static_cast<size_t>(head) * b.tokens + start + row0 + row];
            for (const auto& [row, col] : stores_of_warp[warp])
              if (row0 + row < len)
                ++out_writes[static_cast<size_t>(start + row0 + row) * width +
                             head * fa2::kHeadDim + col];
          }
        }
      }
    }
    // Tokens before the first sequence belong to none and are never written.
    for (int token = 0; token < b.tokens; ++token) {
      const int expected = token >= b.starts[0] ? 1 : 0;
      INFO("trial " << trial << " token " << token);
      for (int c = 0; c < width; ++c)
        REQUIRE(out_writes[static_cast<size_t>(token) * width + c] == expected);
      for (int head = 0; head < b.heads; ++head)
        REQUIRE(lse_writes[static_cast<size_t>(head) * b.tokens + token] == expected);
    }
  }
}

TEST_CASE(
    "attention fa2 forward: only the last key block is masked, and every other holds keys "
    "of the sequence only") {
  using namespace fa2_tiles_test;  // NOLINT
  for (int len = 1; len <= 600; ++len) {
    const int blocks = fa2::ceil_div_int(len, fa2::kFwdBlockN);
    for (int n_block = 0; n_block < blocks; ++n_block) {
      const int key0 = n_block * fa2::kFwdBlockN;
      const bool masked = fa2::fwd_key_block_masked(key0, len);
      bool past_end = false;
      for (int nt = 0; nt < fa2::kNTiles; ++nt)
        for (int lane = 0; lane < kLanes; ++lane)
          for (int e = 0; e < 4; ++e) past_end |= key0 + nt * 8 + fa2::fragment_col(lane, e) >= len;
      INFO("len " << len << " key block " << n_block);
      CHECK(masked == past_end);  // masked exactly where needed
      if (n_block + 1 < blocks) CHECK_FALSE(masked);
    }
  }
}

TEST_CASE(
    "attention fa2 backward: dK and dV rows are stored once, and every dQ element gets one "
    "add per key block from the lane that computed it") {
  using namespace fa2_tiles_test;  // NOLINT
  check_tile_copy(fa2::kBwdBlockN, fa2::kBwdThreads);
  check_tile_copy(fa2::kBwdBlockM, fa2::kBwdThreads);
  for (int warp = 0; warp < fa2::kBwdWarps; ++warp) {
    for (int ks = 0; ks < fa2::kKSteps; ++ks)
      check_ldmatrix(true, fa2::bwd_warp_key0(warp), ks * 16, fa2::kBwdBlockN);  // K, V frags
    for (int kk = 0; kk < fa2::kBwdWarps; ++kk) {
      // dQ: dS from dS^T [128 keys][64 queries], K [128 keys][64 dims] (both .trans).
      check_ldmatrix(false, kk * 16, fa2::dq_warp_query0(warp), fa2::kBwdBlockN);
      for (int dp = 0; dp < fa2::kDqWarpDims / 16; ++dp)
        check_ldmatrix(true, kk * 16, fa2::dq_warp_dim0(warp) + dp * 16, fa2::kBwdBlockN);
    }
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      check_ldmatrix(false, i * 16, j * 16, fa2::kBwdBlockM);  // Q, dO for S^T, dP^T
      check_ldmatrix(true, i * 16, j * 16, fa2::kBwdBlockM);   // Q, dO for dK, dV (.trans)
    }
  // Per warp, the (query in the 64-query tile, dim) of each element its lanes add, in the order of
  // the kernel's commit loop: staged from the accumulator's own element, read back once.
  std::vector<std::vector<std::pair<int, int>>> dq_adds_of_warp(fa2::kBwdWarps);
  for (int warp = 0; warp < fa2::kBwdWarps; ++warp) {
    std::map<int, std::pair<int, int>> slab;  // slab offset -> the element staged there
    for (int lane = 0; lane < kLanes; ++lane)
      for (int nt = 0; nt < fa2::kDqWarpDims / 8; ++nt)
        for (int e = 0; e < 4; ++e) {
          const int at = fa2::dq_stage_offset(lane, nt, e);
          REQUIRE(at >= 0);
          REQUIRE(at < fa2::kDqStageFloats);
          REQUIRE(at % fa2::kDqStageRow < fa2::kDqWarpDims);  // not the pad
          const std::pair<int, int> element{
              fa2::dq_warp_query0(warp) + fa2::fragment_row(lane, e),
              fa2::dq_warp_dim0(warp) + nt * 8 + fa2::fragment_col(lane, e)};
          REQUIRE(slab.emplace(at, element).second);
        }
    std::set<int> read;
    for (int lane = 0; lane < kLanes; ++lane)
      for (int i = 0; i < fa2::kDqVectorsPerLane; ++i) {
        const int row = fa2::dq_vector_row(lane, i), col = fa2::dq_vector_col(lane, i);
        REQUIRE(col % 4 == 0);  // 16-byte aligned in the slab and in dq_accum
        for (int c = 0; c < 4; ++c) {
          const int at = row * fa2::kDqStageRow + col + c;
          INFO("warp " << warp << " lane " << lane << " vector " << i << " element " << c);
          REQUIRE(slab.count(at) == 1);
          REQUIRE(read.insert(at).second);
          // The vector's destination is the staged element's own (query, dim).
          const std::pair<int, int> destination{fa2::dq_warp_query0(warp) + row,
                                                fa2::dq_warp_dim0(warp) + col + c};
          REQUIRE(slab.at(at) == destination);
          dq_adds_of_warp[warp].push_back(destination);
        }
      }
    REQUIRE(read.size() == slab.size());
  }
  std::mt19937_64 rng(59);
  Violations v;
  for (int trial = 0; trial < 40; ++trial) {
    const Batch b = mlbert::test::attention_walk::random_batch(rng, trial, 6, 3);
    const int width = b.heads * fa2::kHeadDim;
    const uint64_t planes = static_cast<uint64_t>(fa2::bwd_key_blocks(b.max_seqlen));
    const uint64_t plane = static_cast<uint64_t>(b.tokens) * width;
    std::vector<int> dk_writes(plane, 0), dq_adds(plane, 0), dq_sums(plane, 0);
    std::vector<int> partial_writes(planes * plane, 0);
    for (size_t s = 0; s < b.lengths.size(); ++s) {
      const int start = b.starts[s], len = b.lengths[s];
      for (int head = 0; head < b.heads; ++head) {
        for (int n_block = 0; n_block < fa2::bwd_key_blocks(b.max_seqlen); ++n_block) {
          const int key_block0 = n_block * fa2::kBwdBlockN;
          if (key_block0 >= len) continue;
          // dS^T rows written by the live warps are the rows the dQ product reads.
          int live_warps = 0;
          for (int warp = 0; warp < fa2::kBwdWarps; ++warp)
            live_warps += key_block0 + fa2::bwd_warp_key0(warp) < len;
          REQUIRE(fa2::bwd_live_key_tiles(key_block0, len) == live_warps);
          for (int query0 = 0; query0 < len; query0 += fa2::kBwdBlockM) {
            std::vector<int> tile_adds(fa2::kBwdBlockM * fa2::kHeadDim, 0);
            for (int warp = 0; warp < fa2::kBwdWarps; ++warp) {
              if (query0 + fa2::dq_warp_query0(warp) >= len) continue;
              for (const auto& [query_local, dim] : dq_adds_of_warp[warp]) {
                ++tile_adds[query_local * fa2::kHeadDim + dim];
                const int query = query0 + query_local;
                if (query >= len) continue;
                const uint64_t offset =
                    fa2::dq_partial_offset(0, start + query, head, b.heads, b.tokens, dim);
                v.expect(offset < plane, [&] { return "dQ add past the accumulator"; });
                if (offset < plane) ++dq_adds[offset];
                const uint64_t partial =
                    fa2::dq_partial_offset(n_block, start + query, head, b.heads, b.tokens, dim);
                v.expect(partial < planes * plane, [&] { return "dQ partial past its planes"; });
                if (partial < planes * plane) ++partial_writes[partial];
              }
            }
            // The 8 warps' slabs cover the 64 x 64 tile once (rows past the sequence skipped).
            for (int q = 0; q < fa2::kBwdBlockM; ++q)
              for (int d = 0; d < fa2::kHeadDim; ++d)
                v.expect(tile_adds[q * fa2::kHeadDim + d] == (query0 + (q / 16) * 16 < len ? 1 : 0),
                         [&] {
                           return "dQ tile of queries " + std::to_string(query0) + ": element (" +
                                  std::to_string(q) + ", " + std::to_string(d) + ") added " +
                                  std::to_string(tile_adds[q * fa2::kHeadDim + d]) + " times";
                         });
          }
          for (int warp = 0; warp < fa2::kBwdWarps; ++warp) {
            if (key_block0 + fa2::bwd_warp_key0(warp) >= len) continue;
            for (int lane = 0; lane < kLanes; ++lane)
              for (int i = 0; i < fa2::kBwdStoreChunksPerLane; ++i) {
                const int row = fa2::bwd_store_row(warp, lane, i);
                const int col = fa2::bwd_store_col(lane, i);
                // A warp stores only the 16 key rows it staged.
                REQUIRE(row >= fa2::bwd_warp_key0(warp));
                REQUIRE(row < fa2::bwd_warp_key0(warp) + fa2::kBwdKeysPerWarp);
                if (key_block0 + row >= len) continue;
                for (int c = col; c < col + 8; ++c)
                  ++dk_writes[static_cast<size_t>(start + key_block0 + row) * width +
                              head * fa2::kHeadDim + c];
              }
          }
        }
        // Deterministic dQ: the sum kernel reads, for each token of the sequence, the planes of
        // the sequence's key blocks, each written once, and writes each dQ element once.
        for (int x = 0; x < fa2::ceil_div_int(b.max_seqlen, fa2::kDqReduceTokens); ++x)
          for (int thread = 0; thread < fa2::kDqReduceThreads; ++thread) {
            const int token = x * fa2::kDqReduceTokens + thread / fa2::kChunksPerRow;
            if (token >= len) continue;
            const int dim = (thread % fa2::kChunksPerRow) * 8;
            for (int c = dim; c < dim + 8; ++c) {
              for (int kb = 0; kb < fa2::bwd_key_blocks(len); ++kb)
                v.expect(partial_writes[fa2::dq_partial_offset(kb, start + token, head, b.heads,
                                                               b.tokens, c)] == 1,
                         [&] {
                           return "the sum reads an unwritten partial: token " +
                                  std::to_string(start + token) + " key block " +
                                  std::to_string(kb);
                         });
              ++dq_sums[fa2::dq_partial_offset(0, start + token, head, b.heads, b.tokens, c)];
            }
          }
      }
    }
    for (size_t s = 0; s < b.lengths.size(); ++s)
      for (int token = b.starts[s]; token < b.starts[s] + b.lengths[s]; ++token)
        for (int c = 0; c < width; ++c) {
          const size_t at = static_cast<size_t>(token) * width + c;
          INFO("trial " << trial << " token " << token << " column " << c);
          REQUIRE(dk_writes[at] == 1);
          REQUIRE(dq_adds[at] == fa2::bwd_key_blocks(b.lengths[s]));
          REQUIRE(dq_sums[at] == 1);
        }
    for (int w : partial_writes) REQUIRE(w <= 1);
  }
  INFO(v.first);
  REQUIRE(v.count == 0);
}

TEST_CASE(
    "attention fa2 backward: a tile skips the mask only when its 16 keys and 64 queries all "
    "lie inside the sequence") {
  using namespace fa2_tiles_test;  // NOLINT
  for (int len = 1; len <= 600; ++len) {
    for (int key_block0 = 0; key_block0 < len; key_block0 += fa2::kBwdBlockN) {
      for (int warp = 0; warp < fa2::kBwdWarps; ++warp) {
        const int warp_key0 = key_block0 + fa2::bwd_warp_key0(warp);
        if (warp_key0 >= len) continue;
        for (int query0 = 0; query0 < len; query0 += fa2::kBwdBlockM) {
          bool past_end = false;
          for (int nt = 0; nt < fa2::kNTiles; ++nt)
            for (int lane = 0; lane < kLanes; ++lane)
              for (int e = 0; e < 4; ++e)
                past_end |= warp_key0 + fa2::fragment_row(lane, e) >= len ||
                            query0 + nt * 8 + fa2::fragment_col(lane, e) >= len;
          INFO("len " << len << " keys " << warp_key0 << " queries " << query0);
          CHECK(fa2::bwd_tile_masked(warp_key0, query0, len) == past_end);
        }
      }
    }
  }
}

TEST_CASE("attention fa2: the shared-memory budgets hold every tile the kernels carve") {
  using namespace fa2_tiles_test;  // NOLINT
  // Forward: Q [128] + K, V [2][64] rows of kSmemRow compute-type elements.
  CHECK(fa2::kFwdSmemBytes == (128 + 2 * 64 + 2 * 64) * fa2::kSmemRow * 2);
  // Backward: K, V [128]; Q, dO [2][64]; log-sum-exp and rowsum [2][64] floats; dQ slabs.
  CHECK(fa2::kBwdSmemBytes == (2 * 128 + 4 * 64) * fa2::kSmemRow * 2 + 4 * 64 * 4 +
                                  fa2::kBwdWarps * fa2::kDqStageFloats * 4);
  // Both fit an sm_80 SM's 163 KiB of opt-in shared memory (the forward twice, for 2 CTAs).
  CHECK(2 * fa2::kFwdSmemBytes <= 163 * 1024);
  CHECK(fa2::kBwdSmemBytes <= 163 * 1024);
  // The dQ slabs are 16-byte aligned: the float section starts after whole 16-byte tiles.
  CHECK(((2 * 128 + 4 * 64) * fa2::kSmemRow * 2 + 4 * 64 * 4) % 16 == 0);
  CHECK(fa2::kDqStageFloats * 4 % 16 == 0);
}
