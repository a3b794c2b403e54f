// Stratification: reads each input shard, routes its samples to per-(bin, shard) writers, commits
// all writers at the end (each a temp file + rename).
#include "data_prep/stratify.h"

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace mlbert::data {

namespace {
// In-memory cost of a sample held by a ShardWriter plus its share of the HDF5 image at commit.
constexpr int64_t kBytesPerSample = 256;
constexpr int64_t kBytesPerToken = 8;
}  // namespace

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
  const auto shards = static_cast<size_t>(o.shards_per_bin);
  StratifyResult result;
  result.samples_per_bin.assign(bins, 0);
  result.samples_per_shard.assign(bins, std::vector<int64_t>(shards, 0));

  // Pass 1: lengths only. Every sample gets its output shard (bin, round-robin index), and every
  // output shard its estimated in-memory size.
  std::vector<std::vector<uint32_t>> placement(inputs.size());  // bin * shards + shard in bin
  std::vector<int64_t> shard_bytes(bins * shards, 0);
  for (size_t f = 0; f < inputs.size(); ++f) {
    if (inspect_shard(inputs[f]).layout == Layout::kPacked) {
      throw std::runtime_error(inputs[f].string() + ": stratify takes fixed or varlen shards");
    }
    const auto lengths = read_lengths(inputs[f]);
    placement[f].reserve(lengths.size());
    for (size_t r = 0; r < lengths.size(); ++r) {
      const int b = bin_of(lengths[r], o.upper_bounds);
      if (b < 0) {
        throw std::runtime_error(inputs[f].string() + ": row " + std::to_string(r) +
                                 " has length " + std::to_string(lengths[r]) +
                                 ", beyond the last bin bound " +
                                 std::to_string(o.upper_bounds.back()));
      }
      const auto bi = static_cast<size_t>(b);
      const auto s = static_cast<size_t>(result.samples_per_bin[bi] % o.shards_per_bin);
      ++result.samples_per_bin[bi];
      ++result.samples_per_shard[bi][s];
      const size_t id = bi * shards + s;
      placement[f].push_back(static_cast<uint32_t>(id));
      shard_bytes[id] += kBytesPerSample + kBytesPerToken * lengths[r];
    }
  }

  // Pass 2, in groups of output shards that fit the memory budget: read the rows of those shards
  // from every input (in input order, so each shard keeps the input order), then commit the group.
  for (size_t first = 0; first < shard_bytes.size();) {
    size_t last = first + 1;
    int64_t group_bytes = shard_bytes[first];
    while (last < shard_bytes.size() && group_bytes + shard_bytes[last] <= o.memory_budget_bytes) {
      group_bytes += shard_bytes[last++];
    }
    std::vector<std::unique_ptr<ShardWriter>> writers;
    for (size_t id = first; id < last; ++id) {
      const size_t b = id / shards, s = id % shards;
      const int32_t lo = b == 0 ? 1 : o.upper_bounds[b - 1] + 1, hi = o.upper_bounds[b];
      const auto path =
          stratified_shard_path(output, lo, hi, static_cast<int32_t>(s), o.shards_per_bin);
      std::error_code ec;
      std::filesystem::create_directories(path.parent_path(), ec);
      if (ec) {
        throw std::runtime_error(path.parent_path().string() +
                                 ": cannot create bin directory: " + ec.message());
      }
      writers.push_back(std::make_unique<ShardWriter>(path, o.layout, o.read_options.format));
    }
    for (size_t f = 0; f < inputs.size(); ++f) {
      std::vector<int64_t> rows;
      for (size_t r = 0; r < placement[f].size(); ++r) {
        const size_t id = placement[f][r];
        if (id >= first && id < last) rows.push_back(static_cast<int64_t>(r));
      }
      if (rows.empty()) continue;
      std::vector<Sample> samples = read_rows(inputs[f], rows, o.read_options);
      for (size_t k = 0; k < rows.size(); ++k) {
        const size_t id = placement[f][static_cast<size_t>(rows[k])];
        if (bin_of(samples[k].length(), o.upper_bounds) != static_cast<int>(id / shards)) {
          throw std::runtime_error(inputs[f].string() + ": row " + std::to_string(rows[k]) +
                                   " changed length between passes");
        }
        writers[id - first]->add(std::move(samples[k]));
      }
    }
    for (auto& w : writers) {
      w->commit();
      result.outputs.push_back(w->path());
    }
    ++result.groups;
    first = last;
  }
  return result;
}

}  // namespace mlbert::data
