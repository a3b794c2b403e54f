// Load balancing of one training step across ranks, as pure functions of the sample lengths.
//
// Design choice: after the sampler has chosen each rank's samples, a group of ranks (the whole
// world for global-exchange, the ranks of one node for node-exchange, the paper's choice) pools
// its samples, sorts them by length (longest first) and deals them in snake order: row i of the
// sorted list (one sample per rank) goes left to right on even rows and right to left on odd
// rows. Every rank keeps its batch size, the group keeps its multiset of samples, and the token
// counts per rank come out nearly equal, so no rank waits on a straggler. global-deal computes
// the very deal of global-exchange without exchanging anything: the sampler is a pure function
// every rank can evaluate for the whole world, and a length index gives every sample's length,
// so each rank plans the world's deal itself and reads only its own share from the shards.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "harness/data/sampler.h"
#include "harness/config/system_config.h"

namespace mlbert::harness {

// Where a rank's sample comes from: sample `index` of rank `rank`'s sampled batch.
struct SampleSource {
  int rank = 0;
  int index = 0;
  friend bool operator==(const SampleSource&, const SampleSource&) = default;
};

// The pooled indices of `lengths` longest first, equal lengths in pooled order (a stable sort;
// a counting sort when the lengths fit 16 bits, which keeps a 16,384-sample deal well under a
// millisecond).
std::vector<int> longest_first(std::span<const int> lengths);
// The same into `order`, with `counts` as scratch.
void longest_first(std::span<const int> lengths, std::vector<int>& order, std::vector<int>& counts);

// The rank of the group that row `row` of the sorted list deals its column `column` to.
inline int snake_rank(std::size_t row, int column, int group_size) {
  return row % 2 == 0 ? column : group_size - 1 - column;
}

// The snake deal of `lengths` (a group's samples, rank-major: rank 0's, then rank 1's, ...)
// over `group_size` ranks: for each rank of the group, indices into `lengths`. Ties in length
// keep the pooled order, so every rank computes the same deal.
std::vector<std::vector<int>> snake_deal(std::span<const int> lengths, int group_size);

// The exchange plan of one step for the whole world: for each rank, the sources of the samples
// it trains on. `lengths_per_rank[r]` are the lengths of rank r's sampled batch; node groups are
// consecutive blocks of `ranks_per_node` ranks; global-deal plans as global-exchange does.
std::vector<std::vector<SampleSource>> plan_exchange(
    const std::vector<std::vector<int>>& lengths_per_rank, LoadBalancing balancing,
    int ranks_per_node);

// The same plan restricted to one group (`lengths_per_rank` holds only the group's ranks).
std::vector<std::vector<SampleSource>> plan_group_exchange(
    const std::vector<std::vector<int>>& lengths_per_rank);

// global-deal: the samples rank `rank` trains in micro-step `micro_step`, in training order. The
// world's batch comes from the sampler, each sample's length from `lengths`; the deal is
// plan_exchange(..., global_exchange, ...) of those lengths, so this rank gets exactly the samples,
// in the order, that global-exchange would hand it, and nothing is sent or received.
//
// A plan runs every micro-step on the loader thread (16,384 samples at 1,024 x 16), so the
// planner keeps what it can from step to step: the epoch's tabulated permutations, a stream of
// whole shards as places in the length table (the MLPerf layouts, consecutive shards per stream,
// are one range there: an addition per sample), and its buffers. It makes refs only of its own
// samples.
class GlobalDeal {
 public:
  // Throws if a stream of whole shards holds rows outside `lengths` (any other stream: when a
  // step draws such a row).
  GlobalDeal(const Sampler& sampler, RowLengths lengths);
  std::vector<SampleRef> operator()(int rank, std::int64_t micro_step);

 private:
  const Sampler& sampler_;
  RowLengths lengths_;
  // Per stream: its rows as places in lengths_.lengths, if it has at most a range per shard (a
  // stream of rows binned one by one is looked up through its shards instead, not copied).
  std::vector<std::optional<SampleStream>> places_;
  std::vector<std::size_t> offsets_;  // of each stream's quota in a rank's batch
  WorldDraw draw_;
  std::vector<std::uint64_t> pooled_rows_;  // pooled order: the row's place in the table
  std::vector<int> pooled_lengths_, order_, counts_;
};

// One GlobalDeal call (tests, one-off plans).
std::vector<SampleRef> global_deal(const Sampler& sampler, const RowLengths& lengths, int rank,
                                   std::int64_t micro_step);

// The straggler overhead of a step: max over ranks of tokens / mean tokens (1.0 = perfect).
double straggler_ratio(std::span<const std::int64_t> tokens_per_rank);

}  // namespace mlbert::harness
