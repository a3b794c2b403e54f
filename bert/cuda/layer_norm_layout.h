// Index math of the streaming LayerNorm backward (layer_norm_stream.cu) and of the dropout keep
// bits the LayerNorm forward keeps for its backward: plain __host__ __device__ functions that the
// kernels loop with and the unit tests run on the CPU.
//
// Design choice: a thread owns one 16-byte pack (8 columns) of every row its row group handles, so
// its column partials (d_gamma, d_beta, d_bias: 24 floats) stay in registers over all of its
// block's rows; a block is kStreamRowGroups such groups working on interleaved rows of one
// contiguous chunk. The blocks are all resident at once (a cooperative launch): each writes its
// partials once, and after a grid-wide barrier every block sums a slice of the columns over the
// blocks in an order fixed by the launch shape, so the sums do not depend on scheduling.
#pragma once

#include <cstdint>

#include "bert/philox.h"

#if defined(__CUDACC__)
#define MLBERT_UNROLL _Pragma("unroll")
#else
#define MLBERT_UNROLL
#endif

namespace mlbert::cuda {

constexpr int kStreamRowGroups = 2;         // rows a block works on at once
constexpr int kStreamColumnsPerThread = 8;  // one 16-byte pack of fp16/bf16
constexpr int kStreamMaxThreadsPerGroup = 1024 / kStreamColumnsPerThread;  // width <= 1024
constexpr int kStreamMaxThreads = kStreamRowGroups * kStreamMaxThreadsPerGroup;
constexpr int kStreamBlocksPerSm = 2;  // 16 warps an SM at width 1024, each 2 rows ahead
// Rows after the current one whose loads are in flight: 2 when the mask comes from the forward's
// keep bits, 1 when it is drawn again (its Philox rounds take the registers of the second).
MLBERT_HOST_DEVICE constexpr int stream_prefetch_rows(bool kept_bits) {
  return kept_bits ? 2 : 1;
}
constexpr int kStreamSums = 3;            // d_gamma, d_beta, d_bias
constexpr int kStreamReduceColumns = 32;  // one warp of columns per slice in the final sum

struct LayerNormStreamLayout {
  int64_t rows = 0, width = 0;
  int blocks = 0;             // all resident at once
  int threads_per_group = 0;  // width / 8 rounded up to a whole warp
  int64_t rows_per_block = 0;
  int threads() const { return threads_per_group * kStreamRowGroups; }
};

// The launch for rows x width (width a positive multiple of 8 up to 1024) on at most `max_blocks`
// resident blocks: as many blocks as have work, up to that limit. Throws std::invalid_argument.
LayerNormStreamLayout layer_norm_stream_layout(int64_t rows, int64_t width, int max_blocks);

// The row that row group `group` of block `block` handles in its iteration `i` (0, 1, ...): the
// block's chunk [block * rows_per_block, ...) taken group by group, interleaved; -1 past its share.
MLBERT_HOST_DEVICE int64_t stream_row(const LayerNormStreamLayout& l, int block, int group,
                                      int64_t i) {
  const int64_t begin = static_cast<int64_t>(block) * l.rows_per_block;
  const int64_t end = begin + l.rows_per_block < l.rows ? begin + l.rows_per_block : l.rows;
  const int64_t row = begin + group + i * kStreamRowGroups;
  return row < end ? row : -1;
}

// Iterations of row group `group` of block `block` (rows it handles).
MLBERT_HOST_DEVICE int64_t stream_iterations(const LayerNormStreamLayout& l, int block, int group) {
  const int64_t begin = static_cast<int64_t>(block) * l.rows_per_block;
  const int64_t end = begin + l.rows_per_block < l.rows ? begin + l.rows_per_block : l.rows;
  const int64_t first = begin + group;
  return first < end ? (end - first + kStreamRowGroups - 1) / kStreamRowGroups : 0;
}

// The order a thread of a row group visits its `iterations` rows, with the rows after the current
// one in flight: load(j, slot) for j < prefetch first, then for each i: load(i + prefetch, slot)
// (iterations past the group's share load nothing: stream_row gives -1) and process(i, slot),
// row j always in slot j % (prefetch + 1) (a compile-time index once the kernel unrolls it).
#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
template <int kPrefetch, typename Load, typename Process>
MLBERT_HOST_DEVICE void stream_rows(int64_t iterations, Load&& load, Process&& process) {
  constexpr int kRing = kPrefetch + 1;
  MLBERT_UNROLL
  for (int k = 0; k < kPrefetch; ++k) load(k, k);
  for (int64_t i = 0; i < iterations; i += kRing) {
    MLBERT_UNROLL
    for (int k = 0; k < kRing; ++k) {
      if (i + k < iterations) {
        load(i + k + kPrefetch, (k + kPrefetch) % kRing);
        process(i + k, k);
      }
    }
  }
}

// First column of thread `t` of a row group (the thread holds columns [c, c + 8) when c < width).
MLBERT_HOST_DEVICE int64_t stream_column(int t) {
  return static_cast<int64_t>(t) * kStreamColumnsPerThread;
}

// The block partials: [blocks][kStreamSums][width] floats, sum s of column c of block b.
MLBERT_HOST_DEVICE int64_t stream_partial_index(int64_t width, int block, int sum, int64_t column) {
  return (static_cast<int64_t>(block) * kStreamSums + sum) * width + column;
}

// The final sum: the kStreamSums * width columns in groups of 32, each group taken by one block at
// a time (group g by block g, g + blocks, ...). In a block, thread t sums column 32 g + t % 32 over
// the blocks t / 32, t / 32 + S, t / 32 + 2 S, ... (S = its warps, the slices), then the slices'
// totals are added in slice order.
MLBERT_HOST_DEVICE int64_t stream_reduce_groups(int64_t width) {
  return (kStreamSums * width + kStreamReduceColumns - 1) / kStreamReduceColumns;
}
// Column (sum * width + column) of thread t's slice in column group g, or -1 past the columns.
MLBERT_HOST_DEVICE int64_t stream_reduce_column(int64_t width, int64_t group, int t) {
  const int64_t c = group * kStreamReduceColumns + t % kStreamReduceColumns;
  return c < kStreamSums * width ? c : -1;
}
// The blocks whose partial of a column slice `slice` of `slices` adds, in its order.
#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
template <typename Visit>
MLBERT_HOST_DEVICE void stream_reduce_blocks(int blocks, int slices, int slice, Visit&& visit) {
  for (int b = slice; b < blocks; b += slices) visit(b);
}

// ---- the forward's dropout keep bits (LayerNormForwardParams::saved) ----------------------------
// Element e = row * width + column of the dropout's [rows, width] tensor is bit e % 8 of byte
// e / 8; a pack of 8 columns starting at a multiple of 8 is exactly one byte (one Philox block).
MLBERT_HOST_DEVICE int64_t layer_norm_keep_byte(int64_t row, int64_t width, int64_t column) {
  return (row * width + column) >> 3;
}
MLBERT_HOST_DEVICE int64_t layer_norm_keep_bytes(int64_t rows, int64_t width) {
  return (rows * width + 7) / 8;
}

}  // namespace mlbert::cuda
