// The trainer's data path: shard discovery, the sampler's streams, the length index, a background
// prefetch thread, the per-step sample exchange for load balancing, batch assembly and the eval
// set.
//
// Design choice: every rank knows the whole data set layout (shard row counts only, cheap) and
// computes which rows it reads from the pure Sampler, so no rank ever waits on another to know its
// samples; the only communication is the optional exchange of the already-loaded samples inside a
// group (the node for node-exchange), which serializes them (data_prep/sample_codec.h) and
// all-gathers the bytes. With global-deal a rank also knows every row's length (the length index),
// plans the world's deal on the prefetch thread and reads its own share straight from the shards,
// which stay open.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bert/batch.h"
#include "data_prep/hdf5_io.h"
#include "data_prep/length_index.h"
#include "data_prep/sample.h"
#include "harness/comm/communicator.h"
#include "harness/data/load_balance.h"
#include "harness/data/sampler.h"
#include "harness/config/system_config.h"

namespace mlbert::harness {

struct TrainingShard {
  std::filesystem::path path;
  std::int64_t rows = 0;
};

struct TrainingDataset {
  std::filesystem::path root;
  std::vector<TrainingShard> shards;  // sorted by path
  std::vector<SampleStream> streams;  // one per sampler stream
  std::vector<int> quotas;            // per stream, per rank and micro-step
  std::vector<std::string> stream_names;
  std::int64_t samples = 0;
  std::vector<std::int64_t> first_row;  // per shard, plus the total: rows before it
  // global-deal: the length index, with its entries and lengths in the order of `shards`.
  std::filesystem::path length_index;
  std::vector<data::IndexedShard> indexed;
  LengthTable row_lengths;  // every row, shard by shard (empty without an index)

  RowLengths lengths() const { return RowLengths{first_row, row_lengths.span()}; }
};

// The length bins of stratified sampling (docs/reference.md, "The paper's techniques"): 1-128,
// 129-256, 257-384, 385-512.
inline const std::vector<std::int32_t> kStratifiedBinBounds = {128, 256, 384, 512};

// Finds the HDF5 shards under `dir` (recursively) and builds the streams the run's sampler draws
// from: `random`: one stream of every row; `stratified`: one stream per length bin, from the
// `len_<lo>-<hi>` directories `mlbert data stratify` writes, or else from the rows' lengths.
// With load_balancing global-deal it also reads the length index (data::length_index_path) and
// checks that it lists exactly these shards with their sizes and row counts. Throws with the
// directory, shard or index named when there is no usable data.
TrainingDataset open_training_data(const std::filesystem::path& dir, const RunSpec& run);

// The content hashes of the length index, checked for the shards s with s % world == rank (so a
// job reads each shard's sampled blocks once); throws naming the first shard that changed.
void check_length_index(const TrainingDataset& data, int rank, int world);

using data::find_shards;

// A sample's identity (XXH3-64 of its serialized form): what test dumps compare across runs.
std::uint64_t sample_fingerprint(const data::Sample& sample);

// Load balancing of one micro-batch inside `group`: all-gather the group's samples, sort by
// length, snake-deal (load_balance.h), keep this rank's share.
std::vector<data::Sample> exchange_samples(Communicator& group, std::vector<data::Sample> local);

// The model's unpadded batch of `samples`.
bert::Batch make_batch(std::span<const data::Sample> samples);

// What one rank reads in each micro-step, as a function of the micro-step.
using BatchPlan = std::function<std::vector<SampleRef>(std::int64_t micro_step)>;
// The rank's sampled batch (none, node-exchange, global-exchange).
BatchPlan sampled_batches(const Sampler& sampler, int rank);
// The rank's share of the global deal (global-deal); `data` must hold the length index.
BatchPlan dealt_batches(const Sampler& sampler, const TrainingDataset& data, int rank);

// Reads this rank's micro-batches ahead of use on a background thread: plans each micro-step
// (BatchPlan), reads its rows grouped per shard from shards kept open (up to a limit set by the
// process's file-descriptor limit, least recently used closed first), and, with a length index,
// checks every sample's length against it.
class BatchLoader {
 public:
  BatchLoader(const TrainingDataset& data, BatchPlan plan, data::ReadOptions read_options,
              std::int64_t first_micro_step, int depth = 4);
  BatchLoader(const TrainingDataset& data, const Sampler& sampler, int rank,
              data::ReadOptions read_options, std::int64_t first_micro_step, int depth = 4)
      : BatchLoader(data, sampled_batches(sampler, rank), read_options, first_micro_step, depth) {}
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The samples of the next micro-step (plan order). Rethrows a read error of the thread.
  std::vector<data::Sample> next();
  // Seconds next() spent waiting for the thread (data loading not hidden behind compute).
  double wait_seconds() const { return wait_seconds_; }

 private:
  void run();
  std::vector<data::Sample> load(std::int64_t micro_step);
  data::ShardReader& reader(std::int32_t shard);

  const TrainingDataset& data_;
  BatchPlan plan_;
  data::ReadOptions read_options_;
  std::int64_t next_to_load_;
  int depth_;
  // Open shards (loader thread only): most recently used first.
  std::size_t max_open_;
  std::list<std::pair<std::int32_t, data::ShardReader>> open_;
  std::vector<std::list<std::pair<std::int32_t, data::ShardReader>>::iterator> open_of_shard_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<data::Sample>> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  double wait_seconds_ = 0;
  std::thread thread_;
};

// This rank's part of the eval set, as model batches: rank r evaluates samples
// [r*N/W, (r+1)*N/W) so counts summed over ranks cover each of the N samples once.
struct EvalShare {
  std::vector<bert::Batch> batches;
  std::int64_t total_samples = 0;  // N
  std::int64_t local_samples = 0;
};
EvalShare load_eval_share(const std::filesystem::path& eval_data, int rank, int world,
                          int batch_size, std::int64_t expected_samples,
                          const data::ReadOptions& read_options);

}  // namespace mlbert::harness
