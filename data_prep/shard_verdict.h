// The one-line verdict `mlbert data inspect` ends with: the shard read and checked whole, and
// whether the length index beside it (what a trainer plans from) describes it as it is now.
//
// Design choice: only the index a trainer would take for this shard is consulted, its own
// `<shard>.lengths.index` or its folder's `lengths.index`; an index further up the tree is not
// searched for, since a trainer given this folder would not read it either.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "data_prep/hdf5_io.h"

namespace mlbert::data {

// `info` and `sequences` are what reading the whole shard found (it read without error).
std::string shard_verdict(const std::filesystem::path& shard, const ShardInfo& info,
                          int64_t sequences);

}  // namespace mlbert::data
