// Helpers of the tests that walk the attention kernels' loops on the CPU: random variable-length
// batches shaped like the kernels' edge cases, and a collector of broken expectations cheap
// enough for the walks' hundreds of millions of checks (it keeps the first one's description).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace mlbert::test::attention_walk {

struct Batch {
  std::vector<int> starts, lengths;
  int tokens = 0, max_seqlen = 0, heads = 0;
};

// Up to `max_sequences` sequences of `max_heads` heads. By trial: short sequences (one or two
// 64-row tiles), any length up to past 512, or whole multiples of 128 (no boundary tile); a
// max_seqlen equal to the longest or above it; the first sequence at token 0 or after it.
inline Batch random_batch(std::mt19937_64& rng, int trial, int max_sequences, int max_heads) {
  Batch b;
  const int sequences = 1 + static_cast<int>(rng() % max_sequences);
  b.tokens = trial % 4 == 3 ? static_cast<int>(rng() % 40) : 0;
  int longest = 0;
  for (int s = 0; s < sequences; ++s) {
    const int len = trial % 3 == 0   ? 1 + static_cast<int>(rng() % 70)
                    : trial % 3 == 1 ? 1 + static_cast<int>(rng() % 600)
                                     : 128 * (1 + static_cast<int>(rng() % 4));
    b.starts.push_back(b.tokens);
    b.lengths.push_back(len);
    b.tokens += len;
    longest = std::max(longest, len);
  }
  b.max_seqlen = longest + (trial % 2 == 0 ? 0 : static_cast<int>(rng() % 130));
  b.heads = 1 + static_cast<int>(rng() % max_heads);
  return b;
}

// expect(condition, describe): counts the failures and keeps describe() of the first.
struct Violations {
  uint64_t count = 0;
  std::string first;
  template <typename Describe>
  void expect(bool ok, Describe describe) {
    if (!ok && count++ == 0) first = describe();
  }
};

}  // namespace mlbert::test::attention_walk
