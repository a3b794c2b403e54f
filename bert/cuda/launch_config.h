// Launch-configuration arithmetic of the row-wise kernels (LayerNorm, embeddings, cross-entropy)
// and of the attention grids: pure host functions, unit-tested without a GPU.
//
// Design choice: a row of up to 1024 features is held by ONE warp in registers (each lane owns
// `packs_per_lane` 16-byte packs of 8 elements), so a row is read once and every reduction is a
// warp shuffle; blocks stack several warps and several rows per warp so the grid is a few waves of
// the device, which also bounds the two-stage column-reduction partials.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlbert::cuda {

constexpr int kElementsPerPack = 8;  // 16 bytes of fp16/bf16
// Rows up to 32 * 8 * 4 = 1024 features (BERT-large): 8 packs per lane would make the backward
// keep 192 fp32 column partials per thread and spill.
constexpr int kMaxPacksPerLane = 4;
constexpr int kRowWarpsPerBlock = 4;
constexpr int kRowBlocksPerSm = 4;  // target resident blocks per SM for memory-bound row kernels

struct RowKernelConfig {
  int packs_per_lane = 0;  // template instance: 1, 2, 4 or 8
  int warps_per_block = kRowWarpsPerBlock;
  int64_t rows_per_warp = 0;
  int64_t blocks = 0;
  int64_t rows_per_block() const { return rows_per_warp * warps_per_block; }
};

// Throws std::invalid_argument when width is not a positive multiple of 8 or exceeds 2048.
int packs_per_lane_for_width(int64_t width);
RowKernelConfig row_kernel_config(int64_t rows, int64_t width, int sm_count);
// For a row kernel without column partials (the LayerNorm forward): one row per warp, so the
// device has as many warps in flight as the rows allow (row_kernel_config's few waves left the
// H200 under one wave at 16 x 512 tokens; BENCHMARKS.md).
RowKernelConfig row_kernel_config_one_row_per_warp(int64_t rows, int64_t width);
// Bytes of fp32 column partials a two-stage column reduction of `sums` vectors needs.
size_t column_partials_bytes(const RowKernelConfig& config, int64_t width, int sums);
// The most blocks row_kernel_config gives for any row count in [1, max_rows] (the block count is
// not monotonic in the rows: it grows until every warp has one row, then each warp takes more).
int64_t max_row_blocks(int64_t max_rows, int sm_count);

// Attention grids: forward over (query blocks, heads, sequences), backward over key blocks.
struct AttentionGrid {
  unsigned x = 0, y = 0, z = 0;
};
constexpr int kAttentionBlockRows = 64;
AttentionGrid attention_grid(int max_seqlen, int heads, int64_t num_sequences);
// CTAs that do work (the rest exit at once) and the fraction of launched CTAs that do: how much a
// length mix wastes compared with a padded batch.
int64_t attention_busy_blocks(const int32_t* cu_seqlens, int64_t num_sequences);

}  // namespace mlbert::cuda
