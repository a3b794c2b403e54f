// The shard readers of hdf5_io.h run in the calling process: HDF5 parses the file right here. Only
// the shard reader process (shard_reader.h) and the fuzz target of the readers call these; all
// other code uses hdf5_io.h, whose readers run these in that process.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "data_prep/hdf5_io.h"

namespace mlbert::data::direct {

ShardInfo inspect_shard(const std::filesystem::path& path);
std::vector<Sample> read_shard(const std::filesystem::path& path, const ReadOptions& options);
std::vector<Sample> read_row_range(const std::filesystem::path& path, int64_t begin, int64_t count,
                                   const ReadOptions& options);
std::vector<Sample> read_rows(const std::filesystem::path& path, std::span<const int64_t> rows,
                              const ReadOptions& options);
std::vector<PackedRow> read_packed_shard(const std::filesystem::path& path,
                                         const ReadOptions& options);
std::vector<int32_t> read_lengths(const std::filesystem::path& path);

}  // namespace mlbert::data::direct
