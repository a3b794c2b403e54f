// The length index of a set of training shards: the token count of every row, plus what each
// shard looked like when it was indexed (path, size, rows, a sampled content hash), in one small
// file beside the shards. A trainer that plans every step's deal from lengths alone reads this
// file instead of the shards, and refuses it when it no longer describes them.
//
// Design choice: the content hash is XXH3-64 of the file size and 32 blocks of 4 KiB spread
// evenly over the file (the first holds the HDF5 superblock and object headers, the last the end
// of the heaps; the whole file when it is smaller than 128 KiB). It costs 128 KiB of reads per
// shard (256 MiB for 2,048 shards, split over the ranks of a job), where hashing every byte would
// read the whole data set at every start. A shard rewritten by `data prep`/`stratify`/`pack`
// changes its size or its sampled blocks; an edit inside one unsampled block escapes it, but the
// trainer also checks every row it reads against the index's length, so the one thing the index
// is trusted for, the lengths, is verified on every sample used.
//
// File layout (little-endian):
//   "MLBLIDX\0" magic, u32 version (1), u32 shard count, u64 total rows,
//   u32 hash block bytes, u32 hash blocks;
//   per shard: u16 path bytes + path (relative to the index's directory, '/'-separated),
//              u8 layout (0 fixed, 1 varlen, 2 packed), u64 file bytes, u64 rows, u64 hash;
//   total rows x u16 row lengths (tokens; a packed row: the tokens of its sequences), shard by
//   shard; u64 XXH3-64 of every byte before it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "data_prep/hdf5_io.h"

namespace mlbert::data {

struct IndexedShard {
  std::string path;  // relative to the index's directory, '/'-separated
  Layout layout = Layout::kVarlen;
  uint64_t file_bytes = 0;
  uint64_t rows = 0;
  uint64_t content_hash = 0;
  uint64_t first_row = 0;  // of its lengths in LengthIndex::lengths (not stored: the running sum)
};

struct LengthIndex {
  std::vector<IndexedShard> shards;  // sorted by path
  std::vector<uint16_t> lengths;     // every row of every shard, in shard order

  std::span<const uint16_t> lengths_of(std::size_t shard) const {
    return {lengths.data() + shards[shard].first_row, shards[shard].rows};
  }
};

// The index file of a data path: `<dir>/lengths.index` for a directory of shards,
// `<file>.lengths.index` for a single shard file.
std::filesystem::path length_index_path(const std::filesystem::path& data);

// Every shard file of a path: the file itself, or the .hdf5/.h5 files under a directory
// (recursively), sorted. A directory a `data prep` has not finished is refused
// (unfinished_prep.h), as is the index in one by read_length_index.
std::vector<std::filesystem::path> find_shards(const std::filesystem::path& path);

// How the index names `shard`: its path relative to `root` (the index's directory), '/'-separated.
std::string indexed_path(const std::filesystem::path& root, const std::filesystem::path& shard);

// The sampled content hash of a shard file (see the design note above).
uint64_t shard_content_hash(const std::filesystem::path& path);

// Indexes `shards` (paths stored relative to `root`, the directory the index file goes to).
// `known` holds the lengths of shards the caller has just written (by path), which are then not
// read back; every other shard's lengths are read from its file.
LengthIndex build_length_index(
    const std::filesystem::path& root, const std::vector<std::filesystem::path>& shards,
    const std::map<std::filesystem::path, std::vector<int32_t>>& known = {});
// Indexes the shards under `data` (a directory or one file), for length_index_path(data).
LengthIndex build_length_index(
    const std::filesystem::path& data,
    const std::map<std::filesystem::path, std::vector<int32_t>>& known = {});

// The index's bytes, and back. Parsing checks everything (magic, version, sizes, paths, row
// counts, every length, the checksum) and throws a message naming `origin` on any problem.
std::vector<std::byte> serialize_length_index(const LengthIndex& index);
LengthIndex parse_length_index(std::span<const std::byte> bytes, const std::string& origin);

// Writes the index atomically (temporary file, fsync, rename), and reads it back.
void write_length_index(const LengthIndex& index, const std::filesystem::path& file);
LengthIndex read_length_index(const std::filesystem::path& file);

// build_length_index + write_length_index at length_index_path(data); returns the file.
std::filesystem::path index_shards(
    const std::filesystem::path& data,
    const std::map<std::filesystem::path, std::vector<int32_t>>& known = {});

}  // namespace mlbert::data
