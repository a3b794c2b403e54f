// Shard discovery, prefetching, sample exchange and eval split (see training_data.h).
#include "harness/training_data.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>
#include <stdexcept>

#include "data_prep/sample_codec.h"
#include "harness/load_balance.h"

namespace mlbert::harness {

std::vector<std::filesystem::path> find_shards(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error(path.string() + ": does not exist");
  if (fs::is_regular_file(path, ec)) return {path};
  std::vector<fs::path> shards;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const auto ext = it->path().extension();
    if (ext == ".hdf5" || ext == ".h5") shards.push_back(it->path());
  }
  if (ec) throw std::runtime_error(path.string() + ": cannot list: " + ec.message());
  std::sort(shards.begin(), shards.end());
  return shards;
}

namespace {

// The bin of a `len_<lo>-<hi>` directory name, or -1.
int bin_of_directory(const std::filesystem::path& dir) {
  static const std::regex pattern("len_([0-9]+)-([0-9]+)");
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

}  // namespace

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
    // Not stratified on disk: bin every row by its length.
    const auto lengths = data::read_lengths(data.shards[s].path);
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

std::vector<data::Sample> exchange_samples(Communicator& group, std::vector<data::Sample> local) {
  if (group.size() == 1) return local;
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

BatchLoader::BatchLoader(const TrainingDataset& data, const Sampler& sampler, int rank,
                         data::ReadOptions read_options, std::int64_t first_micro_step, int depth)
    : data_(data),
      sampler_(sampler),
      rank_(rank),
      read_options_(read_options),
      next_to_load_(first_micro_step),
      depth_(depth) {
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

std::vector<data::Sample> BatchLoader::load(std::int64_t micro_step) const {
  const auto refs = sampler_.batch(rank_, micro_step);
  // One read per shard, rows in sampler order within it.
  std::map<std::int32_t, std::vector<std::size_t>> positions_of_shard;
  for (std::size_t i = 0; i < refs.size(); ++i) positions_of_shard[refs[i].shard].push_back(i);
  std::vector<data::Sample> samples(refs.size());
  for (const auto& [shard, positions] : positions_of_shard) {
    std::vector<std::int64_t> rows;
    for (std::size_t p : positions) rows.push_back(refs[p].row);
    auto read = data::read_rows(data_.shards[shard].path, rows, read_options_);
    if (read.size() != rows.size())
      throw std::runtime_error(data_.shards[shard].path.string() + ": read " +
                               std::to_string(read.size()) + " samples for " +
                               std::to_string(rows.size()) + " rows");
    for (std::size_t k = 0; k < positions.size(); ++k) samples[positions[k]] = std::move(read[k]);
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
