// Sequence packing for the packed HDF5 layout: up to 3 sequences share one 512-token row, which
// cuts padding from over half the tokens to a few percent. The plan is best-fit decreasing with a
// per-row cap on the number of sequences; rows are then shuffled (seeded) so that training does not
// see them sorted by length.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data_prep/hdf5_io.h"

namespace mlbert::data {

struct PackingOptions {
  int32_t max_seq_length = 512;
  int32_t max_sequences_per_row = 3;
  int32_t shards = 1;
  int64_t seed = 12345;
  // Output shards are built in groups whose sequences fit this budget; the inputs are read once
  // for lengths, then once per group.
  int64_t memory_budget_bytes = int64_t{8} << 30;
  ReadOptions read_options;
};

struct PackingReport {
  int64_t sequences = 0, rows = 0, tokens = 0;
  std::vector<int64_t> rows_with_k;  // [k] = rows holding k sequences (index 0 unused)
  double efficiency() const;         // tokens / (rows * max_seq_length)
  double padded_efficiency() const;  // tokens / (sequences * max_seq_length), i.e. no packing
  int32_t max_seq_length = 512;
  std::string to_text() const;
  std::vector<std::filesystem::path> outputs;
  int64_t groups = 0;  // groups of output shards built at once (each reads the inputs once)
};

// Groups of sequence indexes, one group per row; every index appears exactly once.
std::vector<std::vector<int64_t>> plan_packing(const std::vector<int32_t>& lengths,
                                               int32_t max_seq_length,
                                               int32_t max_sequences_per_row);

// Reads `inputs` (fixed or varlen), packs, writes `shards` packed files into `output_dir`
// (`packed_<k>-of-<n>.hdf5`; row r of the shuffled plan goes to file r % shards) and reports the
// packing efficiency. Memory: the lengths of all sequences plus one group of output shards.
PackingReport pack(const std::vector<std::filesystem::path>& inputs,
                   const std::filesystem::path& output_dir, const PackingOptions& options);

}  // namespace mlbert::data
