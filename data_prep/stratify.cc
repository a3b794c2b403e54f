// Stratification: reads each input shard, routes its samples to per-(bin, shard) writers, commits
// all writers at the end (each a temp file + rename).
#include "data_prep/stratify.h"

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace mlbert::data {

int bin_of(int32_t length, const std::vector<int32_t>& upper_bounds) {
  for (size_t k = 0; k < upper_bounds.size(); ++k) {
    if (length <= upper_bounds[k]) return static_cast<int>(k);
  }
  return -1;
}

std::filesystem::path stratified_shard_path(const std::filesystem::path& output, int32_t lo,
                                            int32_t hi, int32_t shard, int32_t shards) {
  char dir[64], name[64];
  std::snprintf(dir, sizeof dir, "len_%03d-%03d", lo, hi);
  std::snprintf(name, sizeof name, "part_%05d-of-%05d.hdf5", shard, shards);
  return output / dir / name;
}

StratifyResult stratify(const std::vector<std::filesystem::path>& inputs,
                        const std::filesystem::path& output, const StratifyOptions& o) {
  if (o.upper_bounds.empty()) throw std::invalid_argument("stratify: no bins");
  for (size_t k = 0; k < o.upper_bounds.size(); ++k) {
    if (o.upper_bounds[k] < 1 || (k > 0 && o.upper_bounds[k] <= o.upper_bounds[k - 1])) {
      throw std::invalid_argument("stratify: bin bounds must be positive and increasing");
    }
  }
  if (o.shards_per_bin < 1) throw std::invalid_argument("stratify: shards per bin must be >= 1");
  const size_t bins = o.upper_bounds.size();
  StratifyResult result;
  result.samples_per_bin.assign(bins, 0);
  result.samples_per_shard.assign(bins,
                                  std::vector<int64_t>(static_cast<size_t>(o.shards_per_bin), 0));
  std::vector<std::vector<std::unique_ptr<ShardWriter>>> writers(bins);
  for (size_t b = 0; b < bins; ++b) {
    const int32_t lo = b == 0 ? 1 : o.upper_bounds[b - 1] + 1, hi = o.upper_bounds[b];
    std::error_code ec;
    std::filesystem::create_directories(stratified_shard_path(output, lo, hi, 0, 1).parent_path(),
                                        ec);
    if (ec) {
      throw std::runtime_error(output.string() + ": cannot create bin directory: " + ec.message());
    }
    for (int32_t s = 0; s < o.shards_per_bin; ++s) {
      writers[b].push_back(
          std::make_unique<ShardWriter>(stratified_shard_path(output, lo, hi, s, o.shards_per_bin),
                                        o.layout, o.read_options.format));
    }
  }
  for (const auto& in : inputs) {
    for (Sample& s : read_shard(in, o.read_options)) {
      const int b = bin_of(s.length(), o.upper_bounds);
      if (b < 0) {
        throw std::runtime_error(in.string() + ": a sample of length " +
                                 std::to_string(s.length()) + " exceeds the last bin bound " +
                                 std::to_string(o.upper_bounds.back()));
      }
      const auto bi = static_cast<size_t>(b);
      const auto shard = static_cast<size_t>(result.samples_per_bin[bi] % o.shards_per_bin);
      writers[bi][shard]->add(std::move(s));
      ++result.samples_per_bin[bi];
      ++result.samples_per_shard[bi][shard];
    }
  }
  for (auto& bin : writers) {
    for (auto& w : bin) {
      w->commit();
      result.outputs.push_back(w->path());
    }
  }
  return result;
}

}  // namespace mlbert::data
