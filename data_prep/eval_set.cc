// Eval-set picking. Only the lengths of each input are read first, so the picked rows are then read
// shard by shard with read_rows and memory holds the picked samples only.
#include "data_prep/eval_set.h"

#include <stdexcept>

namespace mlbert::data {

std::vector<int64_t> eval_indexes(int64_t total, int64_t count) {
  if (total <= 0) throw std::invalid_argument("eval set: the source has no samples");
  if (count <= 0) throw std::invalid_argument("eval set: count must be positive");
  std::vector<int64_t> idx(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    // i * total is exact in a double below 2^53, and IEEE division rounds like Python's int / int.
    idx[static_cast<size_t>(i)] =
        static_cast<int64_t>(static_cast<double>(i * total) / static_cast<double>(count));
  }
  return idx;
}

EvalSetResult make_eval_set(const std::vector<std::filesystem::path>& inputs,
                            const std::filesystem::path& output, Layout layout, int64_t count,
                            const ReadOptions& read_options) {
  if (layout == Layout::kPacked) {
    throw std::invalid_argument("eval set: write it as fixed or varlen (pack it afterwards)");
  }
  // Sequence counts per input; packed inputs are read whole (their rows hold several sequences).
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (const auto& in : inputs) {
    const ShardInfo info = inspect_shard(in);
    int64_t n = info.rows;
    if (info.layout == Layout::kPacked)
      n = static_cast<int64_t>(read_shard(in, read_options).size());
    counts.push_back(n);
    total += n;
  }
  const auto picks = eval_indexes(total, count);
  ShardWriter writer(output, layout, read_options.format);
  size_t p = 0;
  int64_t base = 0;
  for (size_t f = 0; f < inputs.size(); ++f) {
    std::vector<int64_t> local;
    while (p < picks.size() && picks[p] < base + counts[f]) local.push_back(picks[p++] - base);
    if (!local.empty()) {
      std::vector<Sample> rows;
      if (inspect_shard(inputs[f]).layout == Layout::kPacked) {
        auto all = read_shard(inputs[f], read_options);
        for (int64_t i : local) rows.push_back(all[static_cast<size_t>(i)]);
      } else {
        rows = read_rows(inputs[f], local, read_options);
      }
      for (Sample& s : rows) writer.add(std::move(s));
    }
    base += counts[f];
  }
  writer.commit();
  return {total, count};
}

}  // namespace mlbert::data
