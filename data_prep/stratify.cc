// Stratification: a first pass places every sample in its (bin, shard) from the lengths alone;
// then the output shards are built group by group within the memory budget (shard_groups.h), each
// committed as a temp file + rename.
#include "data_prep/stratify.h"

#include "data_prep/length_index.h"
#include "data_prep/shard_groups.h"

#include <cstdio>
#include <map>
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

namespace {

void check_options(const StratifyOptions& o) {
  if (o.upper_bounds.empty()) throw std::invalid_argument("stratify: no bins");
  for (size_t k = 0; k < o.upper_bounds.size(); ++k) {
    if (o.upper_bounds[k] < 1 || (k > 0 && o.upper_bounds[k] <= o.upper_bounds[k - 1])) {
      throw std::invalid_argument("stratify: bin bounds must be positive and increasing");
    }
  }
  if (o.shards_per_bin < 1) throw std::invalid_argument("stratify: shards per bin must be >= 1");
}

// Where every input sample goes, from its length: output shard bin * shards + shard in bin.
struct Placement {
  std::vector<std::vector<uint32_t>> shard_of;  // [input][row]
  std::vector<int64_t> shard_bytes;             // each output shard's estimated memory
};

// Pass 1, lengths only: each sample's bin, dealt round-robin to the bin's shards (counted in
// `result`).
Placement place_samples(const std::vector<std::filesystem::path>& inputs, const StratifyOptions& o,
                        StratifyResult& result) {
  const auto shards = static_cast<size_t>(o.shards_per_bin);
  Placement placement;
  placement.shard_of.resize(inputs.size());
  placement.shard_bytes.assign(o.upper_bounds.size() * shards, 0);
  for (size_t f = 0; f < inputs.size(); ++f) {
    if (inspect_shard(inputs[f]).layout == Layout::kPacked) {
      throw std::runtime_error(inputs[f].string() + ": stratify takes fixed or varlen shards");
    }
    const auto lengths = read_lengths(inputs[f]);
    placement.shard_of[f].reserve(lengths.size());
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
      placement.shard_of[f].push_back(static_cast<uint32_t>(id));
      placement.shard_bytes[id] += held_bytes(lengths[r]);
    }
  }
  return placement;
}

// Writers of output shards [first, last), their bin directories created.
std::vector<std::unique_ptr<ShardWriter>> open_writers(const std::filesystem::path& output,
                                                       const StratifyOptions& o, size_t first,
                                                       size_t last) {
  const auto shards = static_cast<size_t>(o.shards_per_bin);
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
  return writers;
}

}  // namespace

StratifyResult stratify(const std::vector<std::filesystem::path>& inputs,
                        const std::filesystem::path& output, const StratifyOptions& o) {
  check_options(o);
  const auto shards = static_cast<size_t>(o.shards_per_bin);
  StratifyResult result;
  result.samples_per_bin.assign(o.upper_bounds.size(), 0);
  result.samples_per_shard.assign(o.upper_bounds.size(), std::vector<int64_t>(shards, 0));
  const Placement placement = place_samples(inputs, o, result);

  // Pass 2, group by group: the rows of the group's shards from every input (in input order, so
  // each shard keeps the input order), then the group committed.
  std::map<std::filesystem::path, std::vector<int32_t>> lengths_of_shard;  // for the length index
  for (const auto& [first, last] : shard_groups(placement.shard_bytes, o.memory_budget_bytes)) {
    auto writers = open_writers(output, o, first, last);
    for (size_t f = 0; f < inputs.size(); ++f) {
      const std::vector<uint32_t>& shard_of = placement.shard_of[f];
      std::vector<int64_t> rows;
      for (size_t r = 0; r < shard_of.size(); ++r) {
        if (shard_of[r] >= first && shard_of[r] < last) rows.push_back(static_cast<int64_t>(r));
      }
      if (rows.empty()) continue;
      std::vector<Sample> samples = read_rows(inputs[f], rows, o.read_options);
      for (size_t k = 0; k < rows.size(); ++k) {
        const size_t id = shard_of[static_cast<size_t>(rows[k])];
        if (bin_of(samples[k].length(), o.upper_bounds) != static_cast<int>(id / shards)) {
          throw std::runtime_error(inputs[f].string() + ": row " + std::to_string(rows[k]) +
                                   " changed length between passes");
        }
        lengths_of_shard[writers[id - first]->path()].push_back(samples[k].length());
        writers[id - first]->add(std::move(samples[k]));
      }
    }
    for (auto& w : writers) {
      w->commit();
      result.outputs.push_back(w->path());
    }
    ++result.groups;
  }
  index_shards(output, lengths_of_shard);
  return result;
}

}  // namespace mlbert::data
