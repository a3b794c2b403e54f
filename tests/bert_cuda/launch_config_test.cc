// Launch arithmetic of the row kernels and the attention grids: every row and every query block
// covered exactly once, widths the kernels cannot hold rejected with a message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "bert/cuda/launch_config.h"

namespace cuda = mlbert::cuda;

TEST_CASE("row kernels: packs per lane is the smallest power of two holding the row") {
  CHECK(cuda::packs_per_lane_for_width(8) == 1);
  CHECK(cuda::packs_per_lane_for_width(256) == 1);
  CHECK(cuda::packs_per_lane_for_width(264) == 2);
  CHECK(cuda::packs_per_lane_for_width(512) == 2);
  CHECK(cuda::packs_per_lane_for_width(768) == 4);
  CHECK(cuda::packs_per_lane_for_width(1024) == 4);
  CHECK_THROWS_WITH(cuda::packs_per_lane_for_width(1032), Catch::Contains("1032"));
  CHECK_THROWS_WITH(cuda::packs_per_lane_for_width(100), Catch::Contains("multiple of 8"));
  CHECK_THROWS_AS(cuda::packs_per_lane_for_width(0), std::invalid_argument);
}

TEST_CASE("row kernels: the grid covers every row exactly once and fills a few waves") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    const int64_t rows = 1 + rng() % 20000;
    const int sm_count = 1 + static_cast<int>(rng() % 200);
    const cuda::RowKernelConfig c = cuda::row_kernel_config(rows, 1024, sm_count);
    INFO("rows " << rows << " sms " << sm_count);
    REQUIRE(c.blocks * c.rows_per_block() >= rows);
    REQUIRE((c.blocks - 1) * c.rows_per_block() < rows);
    // Never more warps than the target occupancy needs, unless every warp has a single row.
    REQUIRE((c.rows_per_warp == 1 ||
             c.blocks <= static_cast<int64_t>(sm_count) * cuda::kRowBlocksPerSm));
  }
  // BERT-large, 16 x 512 tokens on 132 SMs: 528 blocks of 4 warps, 4 rows each.
  const cuda::RowKernelConfig large = cuda::row_kernel_config(8192, 1024, 132);
  CHECK(large.packs_per_lane == 4);
  CHECK(large.rows_per_warp == 4);
  CHECK(large.blocks == 512);
  CHECK(cuda::column_partials_bytes(large, 1024, 3) == size_t{512} * 1024 * 3 * 4);
}

TEST_CASE("row kernels without partials: one row per warp, every row covered once") {
  for (int64_t rows : {1, 3, 4, 5, 8191, 8192, 8193}) {
    const cuda::RowKernelConfig c = cuda::row_kernel_config_one_row_per_warp(rows, 1024);
    INFO("rows " << rows);
    CHECK(c.rows_per_warp == 1);
    CHECK(c.packs_per_lane == 4);
    REQUIRE(c.blocks * c.rows_per_block() >= rows);
    REQUIRE((c.blocks - 1) * c.rows_per_block() < rows);
  }
  CHECK(cuda::row_kernel_config_one_row_per_warp(8192, 1024).blocks == 2048);
  CHECK_THROWS_WITH(cuda::row_kernel_config_one_row_per_warp(0, 1024),
                    Catch::Contains("at least one row"));
  CHECK_THROWS_WITH(cuda::row_kernel_config_one_row_per_warp(8, 1020),
                    Catch::Contains("multiple of 8"));
}

TEST_CASE("row kernels: max_row_blocks bounds the blocks of every row count up to the limit") {
  for (int sm_count : {1, 8, 108, 132}) {
    for (int64_t limit : {1, 3, 100, 2111, 2112, 2113, 5000, 9000}) {
      int64_t most = 0;
      for (int64_t rows = 1; rows <= limit; ++rows)
        most = std::max(most, cuda::row_kernel_config(rows, 1024, sm_count).blocks);
      INFO("sms " << sm_count << " limit " << limit);
      REQUIRE(cuda::max_row_blocks(limit, sm_count) == most);
    }
  }
}

TEST_CASE("attention grid: one CTA per 64 rows of the longest sequence, per head and sequence") {
  const cuda::AttentionGrid g = cuda::attention_grid(512, 16, 16);
  CHECK(g.x == 8);
  CHECK(g.y == 16);
  CHECK(g.z == 16);
  CHECK(cuda::attention_grid(65, 2, 3).x == 2);
  CHECK_THROWS_AS(cuda::attention_grid(0, 16, 16), std::invalid_argument);
  CHECK_THROWS_AS(cuda::attention_grid(128, 16, 70000), std::invalid_argument);
}

TEST_CASE("attention schedule: busy CTAs follow the real lengths of a variable-length batch") {
  // The paper's length quotas: 6/3/2/5 of 16 from the bins 1-128, 129-256, 257-384, 385-512.
  std::mt19937 rng(9);
  std::vector<int32_t> cu{0};
  int max_len = 0;
  const int bins[4][3] = {{6, 1, 128}, {3, 129, 256}, {2, 257, 384}, {5, 385, 512}};
  int64_t expected_busy = 0;
  for (const auto& bin : bins) {
    for (int i = 0; i < bin[0]; ++i) {
      const int len = bin[1] + static_cast<int>(rng() % (bin[2] - bin[1] + 1));
      cu.push_back(cu.back() + len);
      max_len = std::max(max_len, len);
      expected_busy += (len + 63) / 64;
    }
  }
  const int64_t busy = cuda::attention_busy_blocks(cu.data(), 16);
  CHECK(busy == expected_busy);
  const cuda::AttentionGrid g = cuda::attention_grid(max_len, 1, 16);
  CHECK(busy <= static_cast<int64_t>(g.x) * g.z);
  // Every query row r of sequence s lands in CTA x = r / 64, which the grid launches.
  for (size_t s = 0; s + 1 < cu.size(); ++s) {
    const int len = cu[s + 1] - cu[s];
    REQUIRE(static_cast<unsigned>((len - 1) / cuda::kAttentionBlockRows) < g.x);
  }
}
