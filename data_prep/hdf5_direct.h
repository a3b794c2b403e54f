// The shard readers of hdf5_io.h run in the calling process: HDF5 parses the file right here. Only
// the shard reader process (shard_reader.h) and the fuzz target of the readers call these; all
// other code uses hdf5_io.h, whose readers run these in that process.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "data_prep/hdf5_io.h"

namespace mlbert::data::direct {

// One shard kept open: the file and its datasets, their shapes checked once.
class ShardReader {
 public:
  explicit ShardReader(const std::filesystem::path& path);
  ~ShardReader();
  ShardReader(ShardReader&&) noexcept;
  ShardReader& operator=(ShardReader&&) noexcept;

  const std::filesystem::path& path() const;
  Layout layout() const;
  int64_t rows() const;  // HDF5 rows
  std::vector<Sample> read_range(int64_t begin, int64_t count, const ReadOptions& options);
  std::vector<Sample> read_rows(std::span<const int64_t> rows, const ReadOptions& options);
  std::vector<PackedRow> read_packed(const ReadOptions& options);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Initializes the HDF5 library (its type tables, free lists; its error printing off) ahead of the
// first read, which otherwise does it: the shard reader process does it once, before it forks a
// process per read.
void initialize_hdf5();

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
