// Launch-configuration arithmetic (see launch_config.h).
#include "bert/cuda/launch_config.h"

#include "bert/cuda/layer_norm_layout.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace mlbert::cuda {

int packs_per_lane_for_width(int64_t width) {
  if (width <= 0 || width % kElementsPerPack != 0 ||
      width > 32 * kElementsPerPack * kMaxPacksPerLane)
    throw std::invalid_argument(
        "row kernels need a width that is a positive multiple of 8 and at most " +
        std::to_string(32 * kElementsPerPack * kMaxPacksPerLane) + " (got " +
        std::to_string(width) + ")");
  const int64_t packs = (width / kElementsPerPack + 31) / 32;
  int packs_per_lane = 1;
  while (packs_per_lane < packs) packs_per_lane *= 2;
  return packs_per_lane;
}

RowKernelConfig row_kernel_config(int64_t rows, int64_t width, int sm_count) {
  if (rows <= 0)
    throw std::invalid_argument("row kernels need at least one row (got " + std::to_string(rows) +
                                ")");
  if (sm_count <= 0) throw std::invalid_argument("row kernels need a positive SM count");
  RowKernelConfig config;
  config.packs_per_lane = packs_per_lane_for_width(width);
  const int64_t target_warps =
      static_cast<int64_t>(sm_count) * kRowBlocksPerSm * config.warps_per_block;
  config.rows_per_warp = std::max<int64_t>(1, (rows + target_warps - 1) / target_warps);
  config.blocks = (rows + config.rows_per_block() - 1) / config.rows_per_block();
  return config;
}

RowKernelConfig row_kernel_config_one_row_per_warp(int64_t rows, int64_t width) {
  if (rows <= 0)
    throw std::invalid_argument("row kernels need at least one row (got " + std::to_string(rows) +
                                ")");
  RowKernelConfig config;
  config.packs_per_lane = packs_per_lane_for_width(width);
  config.rows_per_warp = 1;
  config.blocks = (rows + config.warps_per_block - 1) / config.warps_per_block;
  return config;
}

size_t column_partials_bytes(const RowKernelConfig& config, int64_t width, int sums) {
  return static_cast<size_t>(config.blocks) * static_cast<size_t>(width) *
         static_cast<size_t>(sums) * sizeof(float);
}

int64_t max_row_blocks(int64_t max_rows, int sm_count) {
  if (max_rows <= 0 || sm_count <= 0)
    throw std::invalid_argument("max_row_blocks needs positive rows and SMs");
  const int64_t one_row_per_warp = (max_rows + kRowWarpsPerBlock - 1) / kRowWarpsPerBlock;
  return std::min<int64_t>(one_row_per_warp, static_cast<int64_t>(sm_count) * kRowBlocksPerSm);
}

AttentionGrid attention_grid(int max_seqlen, int heads, int64_t num_sequences) {
  if (max_seqlen <= 0 || heads <= 0 || num_sequences <= 0)
    throw std::invalid_argument("attention grid needs positive max_seqlen, heads and sequences");
  if (num_sequences > 65535)
    throw std::invalid_argument("attention: more than 65535 sequences in one call");
  AttentionGrid grid;
  grid.x = static_cast<unsigned>((max_seqlen + kAttentionBlockRows - 1) / kAttentionBlockRows);
  grid.y = static_cast<unsigned>(heads);
  grid.z = static_cast<unsigned>(num_sequences);
  return grid;
}

LayerNormStreamLayout layer_norm_stream_layout(int64_t rows, int64_t width, int max_blocks) {
  if (width <= 0 || width % kStreamColumnsPerThread != 0 ||
      width > kStreamMaxThreadsPerGroup * kStreamColumnsPerThread)
    throw std::invalid_argument(
        "the streaming LayerNorm backward needs a width that is a positive multiple of 8 and at "
        "most 1024 (got " +
        std::to_string(width) + ")");
  if (rows <= 0 || max_blocks <= 0)
    throw std::invalid_argument("the streaming LayerNorm backward needs rows and blocks (got " +
                                std::to_string(rows) + " rows, " + std::to_string(max_blocks) +
                                " blocks)");
  LayerNormStreamLayout l;
  l.rows = rows;
  l.width = width;
  const int64_t packs = width / kStreamColumnsPerThread;
  l.threads_per_group = static_cast<int>((packs + 31) / 32 * 32);
  const int64_t wanted = (rows + kStreamRowGroups - 1) / kStreamRowGroups;  // a row per group
  const int64_t blocks = std::min<int64_t>(max_blocks, wanted);
  l.rows_per_block = (rows + blocks - 1) / blocks;
  l.blocks = static_cast<int>((rows + l.rows_per_block - 1) / l.rows_per_block);  // none empty
  return l;
}

int64_t attention_busy_blocks(const int32_t* cu_seqlens, int64_t num_sequences) {
  int64_t busy = 0;
  for (int64_t s = 0; s < num_sequences; ++s) {
    const int64_t len = cu_seqlens[s + 1] - cu_seqlens[s];
    busy += (len + kAttentionBlockRows - 1) / kAttentionBlockRows;
  }
  return busy;
}

}  // namespace mlbert::cuda
