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

#include "harness/data/row_lengths.h"

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
  std::size_t range_count() const { return ranges_.size(); }  // after merging
  SampleRef at(std::int64_t index) const;                     // in add() order
  // The same stream over the concatenation of its shards' rows, as one shard 0: index i maps to
  // row first_row[at(i).shard] + at(i).row (first_row: where each shard starts, plus the total at
  // the end). Ranges that meet there merge, so a stream of whole consecutive shards is one range.
  // Throws for a range outside first_row's shards.
  SampleStream in_concatenation(std::span<const std::int64_t> first_row) const;
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
  friend class TabulatedPermutation;
  std::uint64_t feistel(std::uint64_t x) const;  // one pass over the 2*half_bits domain
  std::uint64_t n_;
  int half_bits_;
  std::uint64_t half_mask_;
  std::uint64_t round_keys_[4];
};

// A RandomPermutation with its round functions tabulated, for a caller that maps many indices of
// one permutation (a planner that draws the world's batch every micro-step of an epoch).
//
// A Feistel round's function reads only the right half-word, so each of the four rounds is a
// table of 2^half_bits half-words (4 x 32 KiB for the MLPerf set's 156.7M rows), and map() runs
// one round over every index before the next, so that the cache holds one round's table. The
// values are RandomPermutation::map's, about 2.5x faster per index (harness_bench_straggler),
// after a build of 4 x 2^half_bits round evaluations (about 0.1 ms for the MLPerf set). Domains
// past 2^32, whose half-words do not fit 16 bits, are mapped without tables.
class TabulatedPermutation {
 public:
  explicit TabulatedPermutation(const RandomPermutation& order);
  // As RandomPermutation::map. It works in buffers of this object: one thread at a time.
  void map(std::uint64_t first, std::size_t count, std::uint64_t* out);
  bool tabulated() const { return !rounds_.empty(); }

 private:
  RandomPermutation order_;
  std::vector<std::uint16_t> rounds_;  // round k's function at [k << half_bits, (k + 1) << ...)
  std::vector<std::uint16_t> left_, right_;
  std::vector<std::uint32_t> slot_;  // where each index still walking its cycle goes in `out`
};

// splitmix64: the mixing function behind every seed derivation here.
std::uint64_t mix64(std::uint64_t x);

// What a caller that draws the world's batch of one sampler every micro-step keeps from one to
// the next: the epoch's permutations with their round tables (rebuilt when the epoch changes)
// and the draw.
struct WorldDraw {
  std::int64_t epoch = -1;
  std::vector<TabulatedPermutation> orders;         // per stream
  std::vector<std::vector<std::uint64_t>> indices;  // per stream, see Sampler::draw_world
};

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
  const std::vector<SampleStream>& streams() const { return streams_; }
  const std::vector<int>& quotas() const { return quotas_; }

  // The samples of rank `rank` in global micro-step `micro_step` (0, 1, ... across epochs),
  // stream 0's quota first.
  std::vector<SampleRef> batch(int rank, std::int64_t micro_step) const;
  // The whole world's samples of `micro_step`, rank-major: batch(0, m), then batch(1, m), ...
  // (each stream's permutation built once, not once per rank).
  std::vector<SampleRef> global_batch(std::int64_t micro_step) const;
  // The same as indices into the streams, for a planner that needs refs of only a few of them:
  // sample j of stream s in rank r's batch (its place in batch(r, m) is j plus the quotas of the
  // streams before s) is streams()[s].at(draw.indices[s][r * quotas()[s] + j]). `draw` keeps the
  // epoch's tabulated permutations from call to call.
  void draw_world(std::int64_t micro_step, WorldDraw& draw) const;

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
