// The work of every rank in every step of a simulated run, from the harness's own data path: the
// Sampler draws each rank's samples from streams of sample lengths, the load balancer
// (plan_exchange, every mode) deals them, and a rank's work is its real tokens and squared tokens.
//
// Design choice: lengths live in a table per shard, so the same Sampler and SampleStream code that
// trains reads either a data set's real lengths (`mlbert data` shards) or a stated histogram (the
// MLPerf bin mix, one shard per length bin so `stratified` draws its quotas from the bins); no
// sample content is ever touched. The deal is reduced at once to what the step's timing needs: the
// slowest rank under the profile's cost and the mean over ranks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/data/sampler.h"
#include "simulate/profile.h"
#include "harness/config/system_config.h"

namespace mlbert::simulate {

struct LengthSource {
  std::string description;  // for the output's assumptions
  std::vector<std::vector<std::uint16_t>> shard_lengths;
  std::vector<harness::SampleStream> streams;  // what the run's sampler draws from
  std::vector<int> quotas;            // per stream, per rank and micro-step
  std::vector<int> eval_lengths;      // the eval set's lengths, in file order

  int length(const harness::SampleRef& s) const {
    return shard_lengths[static_cast<std::size_t>(s.shard)][static_cast<std::size_t>(s.row)];
  }
};

// The MLPerf bin mix (length_distribution.h): `rows` training samples split over one shard per
// bin in the mix's proportions, and `eval_samples` eval lengths, all drawn from `seed`.
LengthSource mlperf_bin_mix_lengths(const harness::RunSpec& run, std::int64_t rows,
                                    std::int64_t eval_samples, std::uint64_t seed);

// The real lengths of the HDF5 shards under `dir`, with the streams `mlbert train` would build
// (open_training_data); the eval lengths are `eval_samples` rows drawn from the training set.
LengthSource shard_lengths(const std::filesystem::path& dir, const harness::RunSpec& run,
                           std::int64_t eval_samples, std::uint64_t seed);

// Masked predictions of a sequence as the reference creates them: round(15% of its tokens),
// at least 1, at most `max_predictions`.
int masked_predictions(int length, int max_predictions);

// Bytes a sample takes in the exchange's serialization (data_prep/sample_codec.cc put_samples).
double exchange_bytes(int length, int max_predictions);

// One micro-step after the deal.
struct MicroStepWork {
  double slowest_tokens = 0, slowest_squares = 0, slowest_predictions = 0, slowest_sequences = 0;
  double mean_tokens = 0, mean_squares = 0, mean_predictions = 0, mean_sequences = 0;
  double exchange_bytes_per_rank = 0;  // mean serialized bytes a rank contributes
};

// Deals micro-steps [0, micro_steps) of a run on `world` ranks (`ranks_per_node` per node): the
// run's sampler (seed run.seed) and load balancing, the slowest rank by `cost`.
std::vector<MicroStepWork> deal_micro_steps(const LengthSource& lengths, const harness::RunSpec& run,
                                            int world, int ranks_per_node, const WorkCost& cost,
                                            std::int64_t micro_steps);

}  // namespace mlbert::simulate
