// Length tables, the sampler and the load balancer per simulated micro-step (see workload.h).
#include "simulate/workload.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "data_prep/hdf5_io.h"
#include "harness/data/length_distribution.h"
#include "harness/data/load_balance.h"
#include "harness/data/training_data.h"

namespace mlbert::simulate {

LengthSource mlperf_bin_mix_lengths(const harness::RunSpec& run, std::int64_t rows,
                                    std::int64_t eval_samples, std::uint64_t seed) {
  LengthSource source;
  source.description = std::string("sample lengths: ") + harness::kMlperfBinMixDescription + " (" +
                       std::to_string(rows) + " training samples, one table per bin)";
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> per_bin(harness::kMlperfBinMix.size());
  for (std::size_t b = 0; b < harness::kMlperfBinMix.size(); ++b) {
    per_bin[b] = std::llround(static_cast<double>(rows) * harness::kMlperfBinMix[b]);
    std::vector<std::uint16_t> table(static_cast<std::size_t>(per_bin[b]));
    for (auto& length : table)
      length = static_cast<std::uint16_t>(harness::mlperf_length_in_bin(static_cast<int>(b), rng));
    source.shard_lengths.push_back(std::move(table));
  }
  switch (run.sampler) {
    case harness::SamplerKind::random: {
      harness::SampleStream all;
      for (std::size_t b = 0; b < per_bin.size(); ++b)
        all.add(static_cast<std::int32_t>(b), 0, per_bin[b]);
      source.streams.push_back(std::move(all));
      source.quotas.push_back(run.per_rank_batch);
      break;
    }
    case harness::SamplerKind::stratified: {
      if (run.stratified_quotas.size() != per_bin.size())
        throw std::invalid_argument("simulate: the MLPerf bin mix has " +
                                    std::to_string(per_bin.size()) +
                                    " bins but run.sampler.quotas has " +
                                    std::to_string(run.stratified_quotas.size()) + " entries");
      for (std::size_t b = 0; b < per_bin.size(); ++b) {
        harness::SampleStream bin;
        bin.add(static_cast<std::int32_t>(b), 0, per_bin[b]);
        source.streams.push_back(std::move(bin));
      }
      source.quotas = run.stratified_quotas;
      break;
    }
  }
  std::mt19937_64 eval_rng(harness::mix64(seed ^ 0xe7a1u));
  source.eval_lengths.resize(static_cast<std::size_t>(eval_samples));
  for (int& length : source.eval_lengths) length = harness::mlperf_random_length(eval_rng);
  return source;
}

LengthSource shard_lengths(const std::filesystem::path& dir, const harness::RunSpec& run,
                           std::int64_t eval_samples, std::uint64_t seed) {
  const harness::TrainingDataset data = open_training_data(dir, run);
  LengthSource source;
  source.description = "sample lengths: the " + std::to_string(data.samples) +
                       " samples of the shards under " + dir.string() + " (" +
                       std::to_string(data.shards.size()) +
                       " shards); eval lengths drawn from them";
  std::vector<std::int64_t> first_row;  // of each shard in the whole set
  std::int64_t total = 0;
  for (const harness::TrainingShard& shard : data.shards) {
    const std::vector<std::int32_t> lengths = data::read_lengths(shard.path);
    std::vector<std::uint16_t> table(lengths.size());
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      if (lengths[i] < 1 || lengths[i] > 65535)
        throw std::runtime_error(shard.path.string() + ": row " + std::to_string(i) +
                                 " has length " + std::to_string(lengths[i]));
      table[i] = static_cast<std::uint16_t>(lengths[i]);
    }
    first_row.push_back(total);
    total += static_cast<std::int64_t>(table.size());
    source.shard_lengths.push_back(std::move(table));
  }
  source.streams = data.streams;
  source.quotas = data.quotas;
  if (total < 1) throw std::runtime_error(dir.string() + ": no training samples");
  const harness::RandomPermutation order(static_cast<std::uint64_t>(total), harness::mix64(seed ^ 0xe7a1u));
  for (std::int64_t i = 0; i < eval_samples; ++i) {
    const auto row = static_cast<std::int64_t>(order(static_cast<std::uint64_t>(i % total)));
    const auto shard = std::upper_bound(first_row.begin(), first_row.end(), row) - 1;
    const auto s = static_cast<std::size_t>(shard - first_row.begin());
    source.eval_lengths.push_back(
        source.shard_lengths[s][static_cast<std::size_t>(row - first_row[s])]);
  }
  return source;
}

int masked_predictions(int length, int max_predictions) {
  const int p = static_cast<int>(std::lround(length * 0.15));
  return std::clamp(p, 1, max_predictions);
}

double exchange_bytes(int length, int max_predictions) {
  // count header share ignored; per sample: 2 x u32 sizes + i8 label, i32 ids + i8 segments per
  // token, i32 position + i32 id per prediction.
  return 9.0 + 5.0 * length + 8.0 * masked_predictions(length, max_predictions);
}

std::vector<MicroStepWork> deal_micro_steps(const LengthSource& lengths, const harness::RunSpec& run,
                                            int world, int ranks_per_node, const WorkCost& cost,
                                            std::int64_t micro_steps) {
  const harness::Sampler sampler(lengths.streams, lengths.quotas, world,
                        static_cast<std::uint64_t>(run.seed));
  std::vector<std::vector<int>> sampled(static_cast<std::size_t>(world));
  std::vector<MicroStepWork> out;
  out.reserve(static_cast<std::size_t>(micro_steps));
  for (std::int64_t m = 0; m < micro_steps; ++m) {
    double bytes = 0;
    for (int r = 0; r < world; ++r) {
      auto& mine = sampled[static_cast<std::size_t>(r)];
      mine.clear();
      for (const harness::SampleRef& s : sampler.batch(r, m)) {
        mine.push_back(lengths.length(s));
        bytes += exchange_bytes(mine.back(), run.max_predictions_per_seq);
      }
    }
    const auto plan = plan_exchange(sampled, run.load_balancing, ranks_per_node);
    MicroStepWork work;
    double slowest = -1, total_tokens = 0, total_squares = 0, total_predictions = 0;
    double total_sequences = 0;
    for (int r = 0; r < world; ++r) {
      double tokens = 0, squares = 0, predictions = 0;
      for (const harness::SampleSource& s : plan[static_cast<std::size_t>(r)]) {
        const double length =
            sampled[static_cast<std::size_t>(s.rank)][static_cast<std::size_t>(s.index)];
        tokens += length;
        squares += length * length;
        predictions += masked_predictions(static_cast<int>(length), run.max_predictions_per_seq);
      }
      const double sequences = static_cast<double>(plan[static_cast<std::size_t>(r)].size());
      total_tokens += tokens;
      total_squares += squares;
      total_predictions += predictions;
      total_sequences += sequences;
      const double seconds = cost.seconds(tokens, squares);
      if (seconds > slowest) {
        slowest = seconds;
        work.slowest_tokens = tokens;
        work.slowest_squares = squares;
        work.slowest_predictions = predictions;
        work.slowest_sequences = sequences;
      }
    }
    work.mean_tokens = total_tokens / world;
    work.mean_squares = total_squares / world;
    work.mean_predictions = total_predictions / world;
    work.mean_sequences = total_sequences / world;
    // Global-deal moves no samples: every rank reads its own share of the same deal.
    work.exchange_bytes_per_rank =
        run.load_balancing == harness::LoadBalancing::global_deal ? 0 : bytes / world;
    out.push_back(work);
  }
  return out;
}

}  // namespace mlbert::simulate
