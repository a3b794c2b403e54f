// Sort + snake deal within a group of ranks (see load_balance.h).
#include "harness/load_balance.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace mlbert::harness {

std::vector<std::vector<int>> snake_deal(std::span<const int> lengths, int group_size) {
  if (group_size < 1) throw std::invalid_argument("snake deal: group size must be >= 1");
  if (lengths.size() % static_cast<std::size_t>(group_size) != 0)
    throw std::invalid_argument("snake deal: " + std::to_string(lengths.size()) +
                                " samples do not split evenly over " + std::to_string(group_size) +
                                " ranks");
  std::vector<int> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return lengths[a] > lengths[b]; });
  std::vector<std::vector<int>> dealt(group_size);
  const std::size_t rows = lengths.size() / group_size;
  for (auto& d : dealt) d.reserve(rows);
  for (std::size_t row = 0; row < rows; ++row) {
    for (int column = 0; column < group_size; ++column) {
      const int rank = row % 2 == 0 ? column : group_size - 1 - column;
      dealt[rank].push_back(order[row * group_size + column]);
    }
  }
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
  const int group = balancing == LoadBalancing::global_exchange ? world : ranks_per_node;
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

double straggler_ratio(std::span<const std::int64_t> tokens_per_rank) {
  if (tokens_per_rank.empty()) return 1.0;
  const double total = std::accumulate(tokens_per_rank.begin(), tokens_per_rank.end(), 0.0);
  if (total <= 0) return 1.0;
  const double mean = total / static_cast<double>(tokens_per_rank.size());
  return static_cast<double>(*std::max_element(tokens_per_rank.begin(), tokens_per_rank.end())) /
         mean;
}

}  // namespace mlbert::harness
