// Shard discovery, the length index check, prefetching, sample exchange and eval split (see
// training_data.h).
#include "harness/data/training_data.h"

#include <sys/resource.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include "data_prep/sample_codec.h"
#include "harness/data/load_balance.h"

namespace mlbert::harness {

namespace {

// The bin of a `len_<lo>-<hi>` directory name, or -1.
int bin_of_directory(const std::filesystem::path& dir) {
  static const std::regex pattern("len_([0-9]{1,9})-([0-9]{1,9})");
  std::smatch match;
  const std::string name = dir.filename().string();
  if (!std::regex_match(name, match, pattern)) return -1;
  const int hi = std::stoi(match[2]);
  const auto it = std::find(kStratifiedBinBounds.begin(), kStratifiedBinBounds.end(), hi);
  return it == kStratifiedBinBounds.end() ? -1
                                          : static_cast<int>(it - kStratifiedBinBounds.begin());
}

int bin_of_length(std::int32_t length) {
  for (std::size_t b = 0; b < kStratifiedBinBounds.size(); ++b)
    if (length <= kStratifiedBinBounds[b]) return static_cast<int>(b);
  return -1;
}

std::string bin_name(std::size_t b) {
  const int lo = b == 0 ? 1 : kStratifiedBinBounds[b - 1] + 1;
  return "len_" + std::to_string(lo) + "-" + std::to_string(kStratifiedBinBounds[b]);
}

std::string rebuild_hint(const std::filesystem::path& data) {
  return "; rebuild it with `mlbert data index " + data.string() + "`";
}

// Reads the length index of `data` and lines it up with the shards found there: the same set of
// shards, each with the size and row count it had when indexed (the content hashes are checked
// by check_length_index, shared out over the ranks).
void load_length_index(const std::filesystem::path& data, TrainingDataset& dataset) {
  const std::filesystem::path file = data::length_index_path(data);
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw std::runtime_error(file.string() +
                             ": missing; load_balancing global-deal plans every step from the "
                             "length index of the shards: write it with `mlbert data index " +
                             data.string() + "`");
  data::LengthIndex index = data::read_length_index(file);
  const std::filesystem::path root = file.parent_path();
  std::unordered_map<std::string, std::size_t> entry_of;
  for (std::size_t e = 0; e < index.shards.size(); ++e) entry_of[index.shards[e].path] = e;
  std::vector<std::string> names;
  std::size_t matched = 0;
  for (const TrainingShard& shard : dataset.shards) {
    names.push_back(data::indexed_path(root, shard.path));
    matched += entry_of.count(names.back());
  }
  if (matched == 0)
    throw std::runtime_error(file.string() + ": none of its " +
                             std::to_string(index.shards.size()) + " shards is among the " +
                             std::to_string(dataset.shards.size()) + " under " + data.string() +
                             ": it is the length index of another data set" + rebuild_hint(data));
  std::vector<bool> used(index.shards.size(), false);
  for (std::size_t s = 0; s < dataset.shards.size(); ++s) {
    const TrainingShard& shard = dataset.shards[s];
    const auto it = entry_of.find(names[s]);
    if (it == entry_of.end())
      throw std::runtime_error(shard.path.string() + ": not in the length index " + file.string() +
                               " (a shard added after it was written, or the " +
                               "index of another data set)" + rebuild_hint(data));
    used[it->second] = true;
    const data::IndexedShard& entry = index.shards[it->second];
    const auto bytes = static_cast<std::uint64_t>(std::filesystem::file_size(shard.path));
    if (bytes != entry.file_bytes || static_cast<std::uint64_t>(shard.rows) != entry.rows)
      throw std::runtime_error(shard.path.string() + ": " + std::to_string(bytes) + " bytes and " +
                               std::to_string(shard.rows) + " rows, but the length index " +
                               file.string() + " recorded " + std::to_string(entry.file_bytes) +
                               " bytes and " + std::to_string(entry.rows) +
                               " rows: the shard changed after it was indexed (or the index is "
                               "of another data set)" +
                               rebuild_hint(data));
    dataset.indexed.push_back(entry);
  }
  for (std::size_t e = 0; e < index.shards.size(); ++e)
    if (!used[e])
      throw std::runtime_error(file.string() + ": lists shard " + index.shards[e].path +
                               ", which is not among the shards under " + data.string() +
                               " (removed or renamed since it was indexed)" + rebuild_hint(data));
  dataset.length_index = file;
  dataset.row_lengths = LengthTable(index.lengths.size());
  std::size_t next = 0;
  for (const data::IndexedShard& entry : dataset.indexed) {
    std::copy_n(index.lengths.begin() + static_cast<std::ptrdiff_t>(entry.first_row),
                static_cast<std::size_t>(entry.rows), dataset.row_lengths.data() + next);
    next += static_cast<std::size_t>(entry.rows);
  }
  for (std::size_t s = 0; s < dataset.indexed.size(); ++s)
    dataset.indexed[s].first_row = static_cast<std::uint64_t>(dataset.first_row[s]);
}

}  // namespace

void check_length_index(const TrainingDataset& data, int rank, int world) {
  if (data.length_index.empty()) return;
  for (std::size_t s = static_cast<std::size_t>(rank); s < data.shards.size();
       s += static_cast<std::size_t>(world)) {
    if (data::shard_content_hash(data.shards[s].path) != data.indexed[s].content_hash)
      throw std::runtime_error(data.shards[s].path.string() +
                               ": its content differs from when the length index " +
                               data.length_index.string() +
                               " was written (same size and rows, different sampled blocks): "
                               "the shard changed after it was indexed" +
                               rebuild_hint(data.root));
  }
}

TrainingDataset open_training_data(const std::filesystem::path& dir, const RunSpec& run) {
  TrainingDataset data;
  data.root = dir;
  const auto paths = find_shards(dir);
  if (paths.empty())
    throw std::runtime_error(dir.string() +
                             ": no HDF5 shards (*.hdf5) found; prepare data with "
                             "`mlbert data prep`");
  for (const auto& path : paths) {
    const data::ShardInfo info = data::inspect_shard(path);
    if (info.layout == data::Layout::kPacked)
      throw std::runtime_error(path.string() +
                               ": packed shards hold several sequences per row; "
                               "the trainer reads the varlen or fixed layout");
    data.shards.push_back(TrainingShard{path, info.rows});
    data.samples += info.rows;
  }
  if (data.samples == 0) throw std::runtime_error(dir.string() + ": the shards hold no samples");
  data.first_row.push_back(0);
  for (const auto& shard : data.shards)
    data.first_row.push_back(data.first_row.back() + shard.rows);
  if (run.load_balancing == LoadBalancing::global_deal) load_length_index(dir, data);

  if (run.sampler == SamplerKind::random) {
    SampleStream all;
    for (std::size_t s = 0; s < data.shards.size(); ++s)
      all.add(static_cast<std::int32_t>(s), 0, data.shards[s].rows);
    data.streams.push_back(std::move(all));
    data.quotas = {run.per_rank_batch};
    data.stream_names = {"all"};
    return data;
  }

  const std::size_t bins = kStratifiedBinBounds.size();
  data.streams.resize(bins);
  data.quotas = run.stratified_quotas;
  for (std::size_t b = 0; b < bins; ++b) data.stream_names.push_back(bin_name(b));
  const bool binned_directories =
      std::all_of(data.shards.begin(), data.shards.end(),
                  [](const auto& s) { return bin_of_directory(s.path.parent_path()) >= 0; });
  for (std::size_t s = 0; s < data.shards.size(); ++s) {
    const auto shard = static_cast<std::int32_t>(s);
    if (binned_directories) {
      data.streams[bin_of_directory(data.shards[s].path.parent_path())].add(shard, 0,
                                                                            data.shards[s].rows);
      continue;
    }
    // Not stratified on disk: bin every row by its length (from the index when there is one).
    const auto lengths =
        data.row_lengths.empty()
            ? data::read_lengths(data.shards[s].path)
            : std::vector<std::int32_t>(data.row_lengths.data() + data.first_row[s],
                                        data.row_lengths.data() + data.first_row[s + 1]);
    for (std::size_t row = 0; row < lengths.size(); ++row) {
      const int bin = bin_of_length(lengths[row]);
      if (bin < 0)
        throw std::runtime_error(data.shards[s].path.string() + ": row " + std::to_string(row) +
                                 " has " + std::to_string(lengths[row]) +
                                 " tokens, beyond the last length bin (512)");
      data.streams[bin].add(shard, static_cast<std::int64_t>(row), 1);
    }
  }
  for (std::size_t b = 0; b < bins; ++b)
    if (data.quotas[b] > 0 && data.streams[b].size() == 0)
      throw std::runtime_error(dir.string() + ": length bin " + data.stream_names[b] +
                               " has no samples but the stratified quota takes " +
                               std::to_string(data.quotas[b]) + " per batch");
  return data;
}

// ---------------------------------------------------------------------------------------------
// exchange

std::uint64_t sample_fingerprint(const data::Sample& sample) {
  const auto bytes = data::serialize_samples(std::span<const data::Sample>(&sample, 1));
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::vector<data::Sample> exchange_samples(Communicator& group, std::vector<data::Sample> local) {
  if (group.size() == 1) {  // nothing to send: the deal of one rank is its samples, sorted
    std::vector<int> lengths;
    for (const auto& s : local) lengths.push_back(s.length());
    std::vector<data::Sample> sorted;
    for (int i : longest_first(lengths)) sorted.push_back(std::move(local[i]));
    return sorted;
  }
  const auto blocks = group.allgatherv(data::serialize_samples(local));
  std::vector<std::vector<data::Sample>> pooled(blocks.size());
  std::vector<std::vector<int>> lengths(blocks.size());
  for (std::size_t r = 0; r < blocks.size(); ++r) {
    pooled[r] =
        static_cast<int>(r) == group.rank()
            ? std::move(local)
            : data::deserialize_samples(blocks[r], "samples from group rank " + std::to_string(r));
    for (const auto& s : pooled[r]) lengths[r].push_back(s.length());
  }
  const auto plan = plan_group_exchange(lengths);
  std::vector<data::Sample> mine;
  for (const SampleSource& source : plan[group.rank()])
    mine.push_back(pooled[source.rank][source.index]);
  return mine;
}

bert::Batch make_batch(std::span<const data::Sample> samples) {
  bert::Batch batch;
  std::vector<std::int32_t> segments;
  for (const auto& s : samples) {
    segments.assign(s.segment_ids.begin(), s.segment_ids.end());
    batch.append_sequence(s.input_ids, segments, s.masked_lm_positions, s.masked_lm_ids,
                          s.next_sentence_label);
  }
  return batch;
}

// ---------------------------------------------------------------------------------------------
// loader

BatchPlan sampled_batches(const Sampler& sampler, int rank) {
  return [&sampler, rank](std::int64_t micro_step) { return sampler.batch(rank, micro_step); };
}

BatchPlan dealt_batches(const Sampler& sampler, const TrainingDataset& data, int rank) {
  if (data.row_lengths.empty())
    throw std::logic_error("global-deal needs the length index of " + data.root.string());
  // The planner runs on the loader thread only, so its buffers need no lock.
  return [deal = GlobalDeal(sampler, data.lengths()), rank](std::int64_t micro_step) mutable {
    return deal(rank, micro_step);
  };
}

namespace {

// Shards a loader keeps open: half the descriptors this process may open, less a reserve for
// MPI, NCCL and the logs (one HDF5 file holds one descriptor).
std::size_t open_shard_limit(std::size_t shards) {
  rlimit limit{};
  std::size_t allowed = 64;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    allowed = limit.rlim_cur > 256 ? static_cast<std::size_t>(limit.rlim_cur - 128) / 2 : 64;
  else if (limit.rlim_cur == RLIM_INFINITY)
    allowed = shards;
  return std::max<std::size_t>(1, std::min(shards, allowed));
}

}  // namespace

BatchLoader::BatchLoader(const TrainingDataset& data, BatchPlan plan,
                         data::ReadOptions read_options, std::int64_t first_micro_step, int depth)
    : data_(data),
      plan_(std::move(plan)),
      read_options_(read_options),
      next_to_load_(first_micro_step),
      depth_(depth),
      max_open_(open_shard_limit(data.shards.size())),
      open_of_shard_(data.shards.size(), open_.end()) {
  thread_ = std::thread([this] { run(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

data::ShardReader& BatchLoader::reader(std::int32_t shard) {
  auto& slot = open_of_shard_[static_cast<std::size_t>(shard)];
  if (slot != open_.end()) {
    open_.splice(open_.begin(), open_, slot);  // most recently used first
    return slot->second;
  }
  if (open_.size() >= max_open_) {
    open_of_shard_[static_cast<std::size_t>(open_.back().first)] = open_.end();
    open_.pop_back();
  }
  open_.emplace_front(shard, data::ShardReader(data_.shards[static_cast<std::size_t>(shard)].path));
  slot = open_.begin();
  return slot->second;
}

std::vector<data::Sample> BatchLoader::load(std::int64_t micro_step) {
  const auto refs = plan_(micro_step);
  // One read per shard, rows in plan order within it.
  std::map<std::int32_t, std::vector<std::size_t>> positions_of_shard;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    if (refs[i].shard < 0 || static_cast<std::size_t>(refs[i].shard) >= data_.shards.size())
      throw std::out_of_range("loader: shard " + std::to_string(refs[i].shard) +
                              " outside the data set");
    positions_of_shard[refs[i].shard].push_back(i);
  }
  const bool indexed = !data_.row_lengths.empty();
  std::vector<data::Sample> samples(refs.size());
  for (const auto& [shard, positions] : positions_of_shard) {
    const auto& path = data_.shards[static_cast<std::size_t>(shard)].path;
    std::vector<std::int64_t> rows;
    for (std::size_t p : positions) rows.push_back(refs[p].row);
    auto read = reader(shard).read_rows(rows, read_options_);
    if (read.size() != rows.size())
      throw std::runtime_error(path.string() + ": read " + std::to_string(read.size()) +
                               " samples for " + std::to_string(rows.size()) + " rows");
    for (std::size_t k = 0; k < positions.size(); ++k) {
      if (indexed) {
        const int expected = data_.lengths().of(refs[positions[k]]);
        if (read[k].length() != expected)
          throw std::runtime_error(
              path.string() + ": row " + std::to_string(rows[k]) + " has " +
              std::to_string(read[k].length()) + " tokens but the length index " +
              data_.length_index.string() + " says " + std::to_string(expected) +
              ": the shard changed after it was indexed" + rebuild_hint(data_.root));
      }
      samples[positions[k]] = std::move(read[k]);
    }
  }
  return samples;
}

void BatchLoader::run() {
  for (;;) {
    std::int64_t step;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || static_cast<int>(ready_.size()) < depth_; });
      if (stop_) return;
      step = next_to_load_++;
    }
    try {
      auto samples = load(step);
      std::lock_guard lock(mutex_);
      ready_.push_back(std::move(samples));
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    changed_.notify_all();
  }
}

std::vector<data::Sample> BatchLoader::next() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || error_; });
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (ready_.empty() && error_) std::rethrow_exception(error_);
  auto samples = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();
  return samples;
}

// ---------------------------------------------------------------------------------------------
// eval

EvalShare load_eval_share(const std::filesystem::path& eval_data, int rank, int world,
                          int batch_size, std::int64_t expected_samples,
                          const data::ReadOptions& read_options) {
  const auto paths = find_shards(eval_data);
  if (paths.empty()) throw std::runtime_error(eval_data.string() + ": no HDF5 eval shard found");
  std::vector<data::Sample> all;
  for (const auto& path : paths) {
    auto samples = data::read_shard(path, read_options);
    all.insert(all.end(), std::make_move_iterator(samples.begin()),
               std::make_move_iterator(samples.end()));
  }
  const auto total = static_cast<std::int64_t>(all.size());
  if (total != expected_samples)
    throw std::runtime_error(eval_data.string() + ": the eval set has " + std::to_string(total) +
                             " samples but run.eval.eval_samples is " +
                             std::to_string(expected_samples));
  EvalShare share;
  share.total_samples = total;
  const std::int64_t begin = total * rank / world, end = total * (rank + 1) / world;
  share.local_samples = end - begin;
  for (std::int64_t first = begin; first < end; first += batch_size) {
    const std::int64_t last = std::min(end, first + batch_size);
    share.batches.push_back(make_batch(
        std::span<const data::Sample>(all.data() + first, static_cast<std::size_t>(last - first))));
  }
  return share;
}

}  // namespace mlbert::harness
