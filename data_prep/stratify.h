// The paper's offline step: split samples by real length into bins (MLPerf BERT: 1-128, 129-256,
// 257-384, 385-512) and shard each bin separately into N balanced files, so a sampler can take a
// fixed quota from every bin for every batch.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data_prep/hdf5_io.h"

namespace mlbert::data {

struct StratifyOptions {
  std::vector<int32_t> upper_bounds = {128, 256, 384, 512};  // bin k holds (bound[k-1], bound[k]]
  int32_t shards_per_bin = 1;
  Layout layout = Layout::kVarlen;
  ReadOptions read_options;
  // Output shards are built in groups that fit this many bytes of memory; each group reads its rows
  // from every input once. A budget above the data size reads every input exactly once.
  int64_t memory_budget_bytes = int64_t{8} << 30;
};

struct StratifyResult {
  std::vector<int64_t> samples_per_bin;
  std::vector<std::vector<int64_t>> samples_per_shard;  // [bin][shard]
  std::vector<std::filesystem::path> outputs;
  int64_t groups = 0;  // groups of output shards built at once (each reads every input once)
};

// Bin index of a real length, or -1 when it exceeds the last bound.
int bin_of(int32_t length, const std::vector<int32_t>& upper_bounds);
// `<output>/len_<lo>-<hi>/part_<k>-of-<n>.hdf5`
std::filesystem::path stratified_shard_path(const std::filesystem::path& output, int32_t lo,
                                            int32_t hi, int32_t shard, int32_t shards);

// Samples keep their input order within a bin and are dealt round-robin to the bin's shards, so the
// shards of a bin differ by at most one sample. Memory is bounded by `memory_budget_bytes` (plus
// the per-row lengths), not by the data: a first pass reads only lengths.
StratifyResult stratify(const std::vector<std::filesystem::path>& inputs,
                        const std::filesystem::path& output, const StratifyOptions& options);

}  // namespace mlbert::data
