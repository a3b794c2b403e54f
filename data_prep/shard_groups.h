// Output shards built a group at a time (`data stratify`, `data pack`): a first pass estimates
// each output shard's memory from the sample lengths alone, then the shards are built in groups of
// consecutive shards that fit the memory budget, each group reading its rows from the inputs once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mlbert::data {

// In-memory cost of a sequence held by a ShardWriter plus its share of the HDF5 image at commit.
inline int64_t held_bytes(int32_t length) {
  constexpr int64_t kBytesPerSample = 256;
  constexpr int64_t kBytesPerToken = 8;
  return kBytesPerSample + kBytesPerToken * length;
}

// Ranges [first, last) of consecutive shards whose bytes together fit `budget`, in order; a shard
// over the budget alone is a group of its own.
inline std::vector<std::pair<size_t, size_t>> shard_groups(const std::vector<int64_t>& shard_bytes,
                                                           int64_t budget) {
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t first = 0; first < shard_bytes.size();) {
    size_t last = first + 1;
    int64_t group_bytes = shard_bytes[first];
    while (last < shard_bytes.size() && group_bytes + shard_bytes[last] <= budget) {
      group_bytes += shard_bytes[last++];
    }
    groups.emplace_back(first, last);
    first = last;
  }
  return groups;
}

}  // namespace mlbert::data
