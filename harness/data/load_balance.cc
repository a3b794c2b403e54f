// Sort + snake deal within a group of ranks (see load_balance.h).
#include "harness/data/load_balance.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace mlbert::harness {

void longest_first(std::span<const int> lengths, std::vector<int>& order,
                   std::vector<int>& counts) {
  order.resize(lengths.size());
  if (lengths.empty()) return;
  int lo = lengths[0], hi = lengths[0];  // by value, not minmax_element's positions: vectorizes
  for (int length : lengths) {
    lo = std::min(lo, length);
    hi = std::max(hi, length);
  }
  if (lo < 0 || hi > 0xffff) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return lengths[a] > lengths[b]; });
    return;
  }
  // Counting sort, longest first: the start of each length's run, then every index in order.
  counts.assign(static_cast<std::size_t>(hi - lo) + 2, 0);
  for (int length : lengths) ++counts[static_cast<std::size_t>(hi - length) + 1];
  for (std::size_t k = 1; k < counts.size(); ++k) counts[k] += counts[k - 1];
  for (std::size_t i = 0; i < lengths.size(); ++i)
    order[static_cast<std::size_t>(counts[static_cast<std::size_t>(hi - lengths[i])]++)] =
        static_cast<int>(i);
}

std::vector<int> longest_first(std::span<const int> lengths) {
  std::vector<int> order, counts;
  longest_first(lengths, order, counts);
  return order;
}

std::vector<std::vector<int>> snake_deal(std::span<const int> lengths, int group_size) {
  if (group_size < 1) throw std::invalid_argument("snake deal: group size must be >= 1");
  if (lengths.size() % static_cast<std::size_t>(group_size) != 0)
    throw std::invalid_argument("snake deal: " + std::to_string(lengths.size()) +
                                " samples do not split evenly over " + std::to_string(group_size) +
                                " ranks");
  const std::vector<int> order = longest_first(lengths);
  std::vector<std::vector<int>> dealt(group_size);
  const std::size_t rows = lengths.size() / group_size;
  for (auto& d : dealt) d.reserve(rows);
  for (std::size_t row = 0; row < rows; ++row)
    for (int column = 0; column < group_size; ++column)
      dealt[snake_rank(row, column, group_size)].push_back(order[row * group_size + column]);
  return dealt;
}

std::vector<std::vector<SampleSource>> plan_group_exchange(
    const std::vector<std::vector<int>>& lengths_per_rank) {
  const int group = static_cast<int>(lengths_per_rank.size());
  std::vector<int> pooled;
  std::vector<SampleSource> origin;
  for (int r = 0; r < group; ++r) {
    if (lengths_per_rank[r].size() != lengths_per_rank[0].size())
      throw std::invalid_argument("exchange: rank " + std::to_string(r) + " has " +
                                  std::to_string(lengths_per_rank[r].size()) +
                                  " samples, rank 0 has " +
                                  std::to_string(lengths_per_rank[0].size()));
    for (int i = 0; i < static_cast<int>(lengths_per_rank[r].size()); ++i) {
      pooled.push_back(lengths_per_rank[r][i]);
      origin.push_back(SampleSource{r, i});
    }
  }
  const auto dealt = snake_deal(pooled, group);
  std::vector<std::vector<SampleSource>> plan(group);
  for (int r = 0; r < group; ++r)
    for (int index : dealt[r]) plan[r].push_back(origin[index]);
  return plan;
}

std::vector<std::vector<SampleSource>> plan_exchange(
    const std::vector<std::vector<int>>& lengths_per_rank, LoadBalancing balancing,
    int ranks_per_node) {
  const int world = static_cast<int>(lengths_per_rank.size());
  std::vector<std::vector<SampleSource>> plan(world);
  if (balancing == LoadBalancing::none) {
    for (int r = 0; r < world; ++r)
      for (int i = 0; i < static_cast<int>(lengths_per_rank[r].size()); ++i)
        plan[r].push_back(SampleSource{r, i});
    return plan;
  }
  const bool global =
      balancing == LoadBalancing::global_exchange || balancing == LoadBalancing::global_deal;
  const int group = global ? world : ranks_per_node;
  if (group < 1 || world % group != 0)
    throw std::invalid_argument("exchange: " + std::to_string(world) +
                                " ranks do not form groups of " + std::to_string(group));
  for (int first = 0; first < world; first += group) {
    const std::vector<std::vector<int>> members(lengths_per_rank.begin() + first,
                                                lengths_per_rank.begin() + first + group);
    const auto local = plan_group_exchange(members);
    for (int r = 0; r < group; ++r)
      for (const SampleSource& s : local[r])
        plan[first + r].push_back(SampleSource{first + s.rank, s.index});
  }
  return plan;
}

GlobalDeal::GlobalDeal(const Sampler& sampler, RowLengths lengths)
    : sampler_(sampler), lengths_(lengths) {
  if (lengths_.first_row.empty() ||
      lengths_.first_row.back() > static_cast<std::int64_t>(lengths_.lengths.size()))
    throw std::invalid_argument("global deal: the row lengths cover fewer rows than their shards");
  std::size_t offset = 0;
  for (std::size_t s = 0; s < sampler_.streams().size(); ++s) {
    const SampleStream& stream = sampler_.streams()[s];
    places_.push_back(stream.range_count() < lengths_.first_row.size()
                          ? std::optional(stream.in_concatenation(lengths_.first_row))
                          : std::nullopt);
    offsets_.push_back(offset);
    offset += static_cast<std::size_t>(sampler_.quotas()[s]);
  }
}

std::vector<SampleRef> GlobalDeal::operator()(int rank, std::int64_t micro_step) {
  const int world = sampler_.world();
  if (rank < 0 || rank >= world) throw std::out_of_range("global deal: rank outside the world");
  sampler_.draw_world(micro_step, draw_);
  // The pooled order of global-exchange: rank-major, each rank's batch in sampler order. Only
  // the rows' places in the length table are needed to sort (checked, here or at construction).
  const auto batch = static_cast<std::size_t>(sampler_.per_rank_batch());
  const std::size_t n = batch * static_cast<std::size_t>(world);
  pooled_rows_.resize(n);
  for (std::size_t s = 0; s < places_.size(); ++s) {
    const auto quota = static_cast<std::size_t>(sampler_.quotas()[s]);
    const std::uint64_t* index = draw_.indices[s].data();
    const SampleStream* places = places_[s] ? &*places_[s] : nullptr;
    // One run of the table (the MLPerf layouts): a sample's place is the run's start + its index.
    const bool one_run = places && places->range_count() == 1;
    const auto run_start = one_run ? static_cast<std::uint64_t>(places->at(0).row) : 0;
    for (std::size_t r = 0; r < static_cast<std::size_t>(world); ++r)
      for (std::size_t j = 0; j < quota; ++j, ++index)
        pooled_rows_[r * batch + offsets_[s] + j] =
            one_run  ? run_start + *index
            : places ? static_cast<std::uint64_t>(places->at(static_cast<std::int64_t>(*index)).row)
                     : lengths_.place(sampler_.streams()[s].at(static_cast<std::int64_t>(*index)));
  }
  // The lengths are scattered over the whole table: each is asked for a few reads ahead, so that
  // the cache misses overlap instead of queueing.
  constexpr std::size_t kAhead = 32;
  const std::uint16_t* table = lengths_.lengths.data();
  pooled_lengths_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(table + pooled_rows_[i + kAhead]);
    pooled_lengths_[i] = table[pooled_rows_[i]];
  }
  longest_first(pooled_lengths_, order_, counts_);
  // This rank's column of the snake: one sample of each row of `world` sorted samples.
  const std::size_t rows = n / static_cast<std::size_t>(world);
  std::vector<SampleRef> mine;
  mine.reserve(rows);
  for (std::size_t row = 0; row < rows; ++row) {
    const int column = snake_rank(row, rank, world);  // the snake is its own inverse
    const auto pooled = static_cast<std::size_t>(order_[row * world + column]);
    const std::size_t r = pooled / batch, place = pooled % batch;
    std::size_t s = 0;  // the stream whose quota holds `place`
    while (place >= offsets_[s] + static_cast<std::size_t>(sampler_.quotas()[s])) ++s;
    const std::uint64_t index =
        draw_.indices[s][r * static_cast<std::size_t>(sampler_.quotas()[s]) + place - offsets_[s]];
    mine.push_back(sampler_.streams()[s].at(static_cast<std::int64_t>(index)));
  }
  return mine;
}

std::vector<SampleRef> global_deal(const Sampler& sampler, const RowLengths& lengths, int rank,
                                   std::int64_t micro_step) {
  return GlobalDeal(sampler, lengths)(rank, micro_step);
}

double straggler_ratio(std::span<const std::int64_t> tokens_per_rank) {
  if (tokens_per_rank.empty()) return 1.0;
  const double total = std::accumulate(tokens_per_rank.begin(), tokens_per_rank.end(), 0.0);
  if (total <= 0) return 1.0;
  const double mean = total / static_cast<double>(tokens_per_rank.size());
  return static_cast<double>(*std::max_element(tokens_per_rank.begin(), tokens_per_rank.end())) /
         mean;
}

}  // namespace mlbert::harness
