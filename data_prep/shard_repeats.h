// Training shards that repeat one another: the failure of training_results_v2.1#10, where a
// shuffle script wrote the same samples into every shard and accuracy stalled at 0.62. The length
// index (length_index.h) sees it without reading any token: each shard's row lengths in order, its
// size and its sampled content hash.
//
// Design choice: two strengths of finding. Shards with the same size, sampled content hash and
// row lengths are copies (the sampled hash could miss an edit inside an unsampled block, which is
// why the lengths must agree too). Shards with the same row lengths in the same order but other
// bytes are reported apart, and only from kMinRowsForLengthMatch rows and
// kMinDistinctLengthsForMatch distinct lengths on: a few rows, or rows all packed to 512 tokens,
// agree by chance.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "data_prep/length_index.h"

namespace mlbert::data {

inline constexpr std::size_t kMinRowsForLengthMatch = 64;
inline constexpr std::size_t kMinDistinctLengthsForMatch = 8;

// Shards (paths as the index names them) that repeat the first of the group.
struct ShardRepeat {
  std::vector<std::string> shards;  // two or more, in index order
  bool same_bytes = false;          // equal size and sampled content hash, not only equal lengths
  std::size_t rows = 0;
};

std::vector<ShardRepeat> find_shard_repeats(const LengthIndex& index);

}  // namespace mlbert::data
