// Shard repeats from a length index (see shard_repeats.h): shards are grouped by their rows'
// lengths (hashed, then compared in full), then split by size and content hash.
#include "data_prep/shard_repeats.h"

#include <xxhash.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace mlbert::data {

std::vector<ShardRepeat> find_shard_repeats(const LengthIndex& index) {
  // Shards by (rows, hash of their lengths); equal lengths are confirmed element by element.
  std::map<std::pair<uint64_t, uint64_t>, std::vector<std::size_t>> by_lengths;
  for (std::size_t s = 0; s < index.shards.size(); ++s) {
    const auto lengths = index.lengths_of(s);
    if (lengths.empty()) continue;
    const uint64_t hash = XXH3_64bits(lengths.data(), lengths.size_bytes());
    by_lengths[{index.shards[s].rows, hash}].push_back(s);
  }
  std::vector<ShardRepeat> repeats;
  for (const auto& [key, members] : by_lengths) {
    std::vector<bool> grouped(members.size(), false);
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (grouped[i]) continue;
      const auto first = index.lengths_of(members[i]);
      // Same lengths as members[i], split into copies (same bytes) and the rest.
      std::map<std::tuple<bool, uint64_t, uint64_t>, ShardRepeat> found;
      for (std::size_t j = i + 1; j < members.size(); ++j) {
        const auto other = index.lengths_of(members[j]);
        if (grouped[j] || !std::equal(first.begin(), first.end(), other.begin(), other.end()))
          continue;
        grouped[j] = true;
        const IndexedShard& a = index.shards[members[i]];
        const IndexedShard& b = index.shards[members[j]];
        const bool same_bytes = a.file_bytes == b.file_bytes && a.content_hash == b.content_hash;
        ShardRepeat& repeat =
            found[same_bytes ? std::make_tuple(true, b.file_bytes, b.content_hash)
                             : std::make_tuple(false, uint64_t{0}, uint64_t{0})];
        if (repeat.shards.empty()) repeat = {{a.path}, same_bytes, first.size()};
        repeat.shards.push_back(b.path);
      }
      const std::set<uint16_t> distinct(first.begin(), first.end());
      const bool telling = first.size() >= kMinRowsForLengthMatch &&
                           distinct.size() >= kMinDistinctLengthsForMatch;
      for (auto& [what, repeat] : found)
        if (repeat.same_bytes || telling) repeats.push_back(std::move(repeat));
    }
  }
  std::sort(repeats.begin(), repeats.end(),
            [](const ShardRepeat& a, const ShardRepeat& b) { return a.shards < b.shards; });
  return repeats;
}

}  // namespace mlbert::data
