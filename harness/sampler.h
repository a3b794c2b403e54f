// Which training samples each rank reads in each micro-step: pure functions of (data set layout,
// seed, epoch, world size, rank), identical on every rank without communication.
//
// Design choice: an epoch is one random permutation of each sample stream, computed on the fly
// by a keyed Feistel bijection (O(1) memory, even for 156M samples), and each micro-step takes
// the next world x quota positions of every stream, rank r taking its own quota-sized slice. So
// `random` (one stream, quota = per-rank batch) is the closed rule exactly: an overall random
// order, each sample once per epoch, every global batch a contiguous slice of that order; and
// `stratified` (one stream per length bin, quotas such as 6/3/2/5) gives every rank the same
// length mix in every step.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/row_lengths.h"

namespace mlbert::harness {

// One training sample: row `row` of shard `shard` (an index into the data set's shard list).
struct SampleRef {
  std::int32_t shard = 0;
  std::int64_t row = 0;
  friend bool operator==(const SampleRef&, const SampleRef&) = default;
  friend auto operator<=>(const SampleRef&, const SampleRef&) = default;
};

// The rows one stream draws from (all rows for `random`, one length bin for `stratified`).
class SampleStream {
 public:
  // Appends rows [first_row, first_row + rows) of `shard`; adjacent ranges merge.
  void add(std::int32_t shard, std::int64_t first_row, std::int64_t rows);
  std::int64_t size() const { return total_; }
  SampleRef at(std::int64_t index) const;  // in add() order
  // A table of the range at every 2^k-th index, so at() searches a bucket, not every range
  // (the sampler builds it once; add() drops it).
  void build_lookup();

 private:
  struct Range {
    std::int32_t shard;
    std::int64_t first_row;
    std::int64_t rows;
    std::int64_t start;  // index of its first row in the stream
  };
  std::vector<Range> ranges_;
  std::int64_t total_ = 0;
  std::vector<std::uint32_t> lookup_;  // [b]: the range holding index b << lookup_shift_
  int lookup_shift_ = 0;
};

// A pseudo-random bijection of [0, n) selected by `key`: a 4-round Feistel network on the
// smallest even-bit-width power of two >= n, with cycle walking back into [0, n).
class RandomPermutation {
 public:
  RandomPermutation(std::uint64_t n, std::uint64_t key);
  std::uint64_t operator()(std::uint64_t index) const;
  // out[i] = (*this)(first + i) for i < count, computed several at a time (independent chains
  // of multiplies keep the core busy; about 5x faster than one by one).
  void map(std::uint64_t first, std::size_t count, std::uint64_t* out) const;
  std::uint64_t size() const { return n_; }

 private:
  std::uint64_t feistel(std::uint64_t x) const;  // one pass over the 2*half_bits domain
  std::uint64_t n_;
  int half_bits_;
  std::uint64_t half_mask_;
  std::uint64_t round_keys_[4];
};

// splitmix64: the mixing function behind every seed derivation here.
std::uint64_t mix64(std::uint64_t x);

class Sampler {
 public:
  // `quotas[s]` samples of stream s per rank per micro-step (their sum is the per-rank batch).
  Sampler(std::vector<SampleStream> streams, std::vector<int> quotas, int world,
          std::uint64_t seed);

  // Micro-steps in one epoch: the first stream to run out ends it (its leftovers, fewer than one
  // micro-step's worth, wait for the next epoch's permutation).
  std::int64_t micro_steps_per_epoch() const { return per_epoch_; }
  int per_rank_batch() const { return per_rank_batch_; }
  int world() const { return world_; }

  // The samples of rank `rank` in global micro-step `micro_step` (0, 1, ... across epochs),
  // stream 0's quota first.
  std::vector<SampleRef> batch(int rank, std::int64_t micro_step) const;
  // The whole world's samples of `micro_step`, rank-major: batch(0, m), then batch(1, m), ...
  // (each stream's permutation built once, not once per rank).
  std::vector<SampleRef> global_batch(std::int64_t micro_step) const;
  // The same into `out`, with `indices` as scratch: what a planner that runs every step calls,
  // so that its buffers are allocated once.
  void global_batch(std::int64_t micro_step, std::vector<SampleRef>& out,
                    std::vector<std::uint64_t>& indices) const;

 private:
  std::vector<RandomPermutation> orders(std::int64_t epoch) const;
  void append_batch(const std::vector<RandomPermutation>& orders, int rank,
                    std::int64_t step_in_epoch, std::vector<SampleRef>& out) const;

  std::vector<SampleStream> streams_;
  std::vector<int> quotas_;
  int world_;
  std::uint64_t seed_;
  int per_rank_batch_ = 0;
  std::int64_t per_epoch_ = 0;
};

}  // namespace mlbert::harness
