// The index math of the streaming LayerNorm backward and of the LayerNorm forward's keep bits, run
// on the CPU through the same functions the kernels loop with (bert/cuda/layer_norm_layout.h):
// which rows each block's row groups handle and in what order their loads are issued, which
// columns each thread owns, which block partials the final sum reads, and where each pack's keep
// bits are stored.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "bert/cuda/dropout_bits.h"
#include "bert/cuda/layer_norm_layout.h"

namespace {

namespace cuda = mlbert::cuda;
namespace bert = mlbert::bert;

// Shapes with the edge cases: fewer rows than groups, a partial last block, BERT-large's widths.
const std::vector<std::tuple<int64_t, int64_t, int>> kShapes = {
    {1, 8, 264},     {3, 1024, 264}, {5003, 1024, 264}, {8192, 1024, 264}, {300, 768, 7},
    {76, 1024, 216}, {97, 128, 3},   {2048, 40, 264},   {1000, 1024, 1}};

}  // namespace

TEST_CASE(
    "streaming LayerNorm backward: each row is handled once, by one row group of one block, "
    "loaded before it is processed and in a ring slot no other row in flight holds") {
  for (const auto& [rows, width, max_blocks] : kShapes) {
    INFO(rows << " rows x " << width << ", at most " << max_blocks << " blocks");
    const cuda::LayerNormStreamLayout l = cuda::layer_norm_stream_layout(rows, width, max_blocks);
    REQUIRE(l.blocks >= 1);
    REQUIRE(l.blocks <= max_blocks);
    REQUIRE(l.threads_per_group % 32 == 0);
    REQUIRE(l.threads() <= cuda::kStreamMaxThreads);
    std::vector<int> handled(static_cast<size_t>(rows), 0);
    for (int block = 0; block < l.blocks; ++block) {
      REQUIRE(cuda::stream_iterations(l, block, 0) > 0);  // no block without rows
      for (int group = 0; group < cuda::kStreamRowGroups; ++group) {
        const int64_t iterations = cuda::stream_iterations(l, block, group);
        for (const bool kept : {false, true}) {
          const int prefetch = cuda::stream_prefetch_rows(kept);
          std::map<int, int64_t> slot_holds;  // slot -> iteration loaded into it, not processed yet
          std::set<int64_t> loaded, processed;
          auto load = [&](int64_t i, int slot) {
            if (i >= iterations) return;  // the kernel's stream_row gives -1: nothing loaded
            REQUIRE(slot_holds.count(slot) == 0);  // a row still in flight keeps its slot
            REQUIRE(slot == i % (prefetch + 1));
            slot_holds[slot] = i;
            loaded.insert(i);
          };
          auto process = [&](int64_t i, int slot) {
            REQUIRE(slot_holds.count(slot) == 1);
            REQUIRE(slot_holds[slot] == i);  // the slot holds this very row
            slot_holds.erase(slot);
            REQUIRE(processed.insert(i).second);
            if (!kept) return;  // count each row once, whichever ring the kernel uses
            const int64_t row = cuda::stream_row(l, block, group, i);
            REQUIRE(row >= 0);
            REQUIRE(row < rows);
            if (i > 0) REQUIRE(row > cuda::stream_row(l, block, group, i - 1));
            ++handled[static_cast<size_t>(row)];
          };
          if (prefetch == 1)
            cuda::stream_rows<1>(iterations, load, process);
          else
            cuda::stream_rows<2>(iterations, load, process);
          REQUIRE(static_cast<int64_t>(processed.size()) == iterations);
          REQUIRE(loaded.size() == processed.size());
        }
        REQUIRE(cuda::stream_row(l, block, group, iterations) == -1);
      }
    }
    for (int64_t r = 0; r < rows; ++r) REQUIRE(handled[static_cast<size_t>(r)] == 1);
  }
}

TEST_CASE("streaming LayerNorm backward: the threads of a row group own each column once") {
  for (const auto& [rows, width, max_blocks] : kShapes) {
    INFO("width " << width);
    const cuda::LayerNormStreamLayout l = cuda::layer_norm_stream_layout(rows, width, max_blocks);
    std::vector<int> owner(static_cast<size_t>(width), 0);
    for (int t = 0; t < l.threads_per_group; ++t) {
      const int64_t col = cuda::stream_column(t);
      if (col >= width) continue;  // idle columns of the last warp
      REQUIRE(col % 8 == 0);
      for (int i = 0; i < 8; ++i) ++owner[static_cast<size_t>(col + i)];
    }
    for (int count : owner) REQUIRE(count == 1);
  }
  CHECK_THROWS_WITH(cuda::layer_norm_stream_layout(10, 1032, 4), Catch::Contains("got 1032"));
  CHECK_THROWS_AS(cuda::layer_norm_stream_layout(10, 12, 4), std::invalid_argument);
  CHECK_THROWS_AS(cuda::layer_norm_stream_layout(0, 1024, 4), std::invalid_argument);
}

TEST_CASE(
    "streaming LayerNorm backward: the final sum reads every block's partial of every column "
    "once, in an order fixed by the launch shape") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const auto& [rows, width, max_blocks] : kShapes) {
    INFO(rows << " rows x " << width);
    const cuda::LayerNormStreamLayout l = cuda::layer_norm_stream_layout(rows, width, max_blocks);
    const int64_t columns = cuda::kStreamSums * width;
    std::vector<float> partials(static_cast<size_t>(l.blocks * columns));
    for (float& p : partials) p = dist(rng);
    // Block partials as the kernel writes them: each (block, sum, column) at its own index.
    std::set<int64_t> written;
    for (int b = 0; b < l.blocks; ++b)
      for (int s = 0; s < cuda::kStreamSums; ++s)
        for (int64_t c = 0; c < width; ++c)
          REQUIRE(written.insert(cuda::stream_partial_index(width, b, s, c)).second);
    REQUIRE(static_cast<int64_t>(written.size()) == l.blocks * columns);
    REQUIRE(*written.rbegin() == l.blocks * columns - 1);
    // The kernel's second phase: block x of the grid takes column groups x, x + grid, ...; in it,
    // thread t (slice t / 32 of threads / 32) adds its column over the blocks of its slice.
    auto final_sums = [&](int grid) {
      const int slices = l.threads() / 32;
      std::vector<int> reads(partials.size(), 0);
      std::vector<float> sums(static_cast<size_t>(columns), 0.0f);
      std::vector<int> summed(static_cast<size_t>(columns), 0);
      for (int x = 0; x < grid; ++x)
        for (int64_t g = x; g < cuda::stream_reduce_groups(width); g += grid) {
          std::vector<float> slice_totals(static_cast<size_t>(l.threads()), 0.0f);
          for (int t = 0; t < l.threads(); ++t) {
            const int64_t c = cuda::stream_reduce_column(width, g, t);
            if (c < 0) continue;
            cuda::stream_reduce_blocks(l.blocks, slices, t / 32, [&](int b) {
              const int64_t at =
                  cuda::stream_partial_index(width, b, static_cast<int>(c / width), c % width);
              ++reads[static_cast<size_t>(at)];
              slice_totals[static_cast<size_t>(t)] += partials[static_cast<size_t>(at)];
            });
          }
          for (int t = 0; t < 32; ++t) {
            const int64_t c = cuda::stream_reduce_column(width, g, t);
            if (c < 0) continue;
            for (int y = 0; y < slices; ++y)
              sums[static_cast<size_t>(c)] += slice_totals[static_cast<size_t>(y * 32 + t)];
            ++summed[static_cast<size_t>(c)];
          }
        }
      for (int count : reads) REQUIRE(count == 1);
      for (int count : summed) REQUIRE(count == 1);
      return sums;
    };
    const std::vector<float> sums = final_sums(l.blocks);
    for (int64_t c = 0; c < columns; ++c) {
      double want = 0;
      for (int b = 0; b < l.blocks; ++b)
        want += partials[static_cast<size_t>(
            cuda::stream_partial_index(width, b, static_cast<int>(c / width), c % width))];
      REQUIRE(sums[static_cast<size_t>(c)] == Approx(want).margin(1e-4));
    }
    // The order depends on the launch shape only: the same partials give the same bits.
    CHECK(final_sums(l.blocks) == sums);
  }
}

TEST_CASE(
    "LayerNorm keep bits: each pack's byte holds the mask's keep bits for its 8 elements, the "
    "same as bert::dropout_keep draws, and no two packs share a byte") {
  std::mt19937_64 rng(9);
  int64_t kept = 0, elements = 0;
  for (const auto& [rows, width] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 8}, {7, 1024}, {33, 768}, {300, 40}, {1000, 1024}}) {
    INFO(rows << " x " << width);
    const bert::DropoutMask mask =
        bert::make_dropout_mask(rng(), static_cast<uint32_t>(rng()), 5, 0.1);
    std::vector<uint8_t> bits(static_cast<size_t>(cuda::layer_norm_keep_bytes(rows, width)));
    std::vector<int> stores(bits.size(), 0);
    // The forward: row r, pack at column col (a multiple of 8), as its lanes store them.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < width; col += 8) {
        const int64_t at = cuda::layer_norm_keep_byte(r, width, col);
        REQUIRE(at >= 0);
        REQUIRE(at < static_cast<int64_t>(bits.size()));
        ++stores[static_cast<size_t>(at)];
        bits[static_cast<size_t>(at)] = static_cast<uint8_t>(
            cuda::dropout_keep_byte(mask, static_cast<uint64_t>(r * width + col)));
      }
    for (int count : stores) REQUIRE(count == 1);
    // The backward's reading: element e's bit, exactly the mask's draw.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c) {
        const uint8_t byte =
            bits[static_cast<size_t>(cuda::layer_norm_keep_byte(r, width, c & ~7))];
        const bool keep = (byte >> (c & 7)) & 1;
        REQUIRE(keep == bert::dropout_keep(mask, static_cast<uint64_t>(r * width + c)));
        kept += keep;
        ++elements;
      }
  }
  CHECK(kept > elements * 0.85);  // p = 0.1 drops some, keeps most
  CHECK(kept < elements * 0.95);
}
