// CPU training step time with and without overlapping gradient allreduce with backward, on MPI
// ranks of one machine (run it under mpirun, e.g. `mpirun -np 2 harness_bench_overlap`).
//
// Design choice: both modes run the same model, batch and 25 MB-style buckets in the same
// process, alternating step by step so machine noise hits both alike. Baseline "no overlap": the
// buckets' MPI_Iallreduce are issued during backward but only progressed when the step waits for
// them (what a non-blocking collective does without a progress engine); "overlap": the
// communicator's progress thread drives them while backward runs. Printed: the mean step time
// of each (forward + backward + allreduce, no optimizer; the slowest rank's), the mean time ranks
// wait for communication after backward, the allreduce alone, and the ratio.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bert/cpu/cpu_ops.h"
#include "bert/model.h"
#include "common/elapsed.h"
#include "harness/comm/grad_sync.h"
#include "harness/comm/mpi_communicator.h"

using namespace mlbert;
using Clock = std::chrono::steady_clock;

namespace {

int arg(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  return fallback;
}

bert::Batch random_batch(const bert::BertConfig& config, int sequences, int length, int rank) {
  std::mt19937 rng(1234 + rank);
  bert::Batch batch;
  for (int s = 0; s < sequences; ++s) {
    std::vector<int32_t> ids(length), segments(length);
    for (int i = 0; i < length; ++i) {
      ids[i] = 1 + static_cast<int32_t>(rng() % (config.vocab_size - 1));
      segments[i] = i < length / 2 ? 0 : 1;
    }
    std::vector<int32_t> positions, labels;
    for (int i = 1; i < length; i += 7) {
      positions.push_back(i);
      labels.push_back(ids[i]);
    }
    batch.append_sequence(ids, segments, positions, labels, s % 2);
  }
  return batch;
}

// The model from the command line: a tiny preset with --layers, --hidden and --vocab.
bert::BertConfig model_config(int argc, char** argv) {
  bert::BertConfig config = bert::BertConfig::preset("tiny");
  config.num_hidden_layers = arg(argc, argv, "--layers", 4);
  config.hidden_size = arg(argc, argv, "--hidden", 256);
  config.num_attention_heads = config.hidden_size / 64;
  config.intermediate_size = 4 * config.hidden_size;
  // A small vocabulary keeps the word embeddings (whose gradient is final only at the very end of
  // backward, so it can never overlap) near bert-large's share of the parameters (~9%).
  config.vocab_size = arg(argc, argv, "--vocab", 2048);
  return config;
}

bert::ModelLimits limits_for(int sequences, int length) {
  bert::ModelLimits limits;
  limits.max_sequences = sequences;
  limits.max_tokens = static_cast<size_t>(sequences) * length;
  limits.max_masked = limits.max_tokens;
  limits.max_seqlen = length;
  return limits;
}

struct Totals {
  double step = 0, compute = 0, exposed = 0;
};

// Mean seconds over the timed steps: each mode's ([0] no overlap, [1] overlap) and the
// allreduce of all gradients alone.
struct StepTimes {
  Totals totals[2];
  double allreduce_alone = 0;
};

// What a step runs: the model on its batch, its gradients in buckets, the two communicators.
struct Workload {
  bert::CpuOps& ops;
  bert::ParameterStore& params;
  bert::Model& model;
  const bert::Batch& batch;
  const std::vector<harness::Bucket>& buckets;
  harness::MpiCommunicator& blocking;
  harness::MpiCommunicator& overlapped;
};

// `steps` timed rounds after two untimed warm-up rounds; each round runs a step of each mode,
// then the allreduce alone.
StepTimes time_steps(const Workload& w, int steps) {
  StepTimes t;
  harness::Communicator* comms[2] = {&w.blocking, &w.overlapped};
  for (int step = -2; step < steps; ++step) {  // two untimed warm-up rounds
    for (int mode = 0; mode < 2; ++mode) {
      harness::GradientSync sync(w.ops, *comms[mode], w.params.grad(), w.buckets,
                                 harness::ClippingMode::after_allreduce, 1.0);
      w.overlapped.barrier();
      const auto start = Clock::now();
      sync.begin(1.0);
      w.model.forward_backward(w.batch, bert::DropoutKey{1, static_cast<uint32_t>(step + 2)},
                               [&](size_t n) { sync.on_grad_ready(n); });
      const double compute = seconds_since(start);
      sync.finish();
      const double total = seconds_since(start);
      if (step >= 0) {
        t.totals[mode].step += total / steps;
        t.totals[mode].compute += compute / steps;
        t.totals[mode].exposed += sync.exposed_wait_seconds() / steps;
      }
    }
    w.overlapped.barrier();
    const auto start = Clock::now();
    w.blocking.allreduce(w.params.grad().data, w.params.grad().numel, harness::DataType::f32,
                         harness::ReduceOp::sum);
    if (step >= 0) t.allreduce_alone += seconds_since(start) / steps;
  }
  return t;
}

// The slowest rank sets the step time; the parts are means over the ranks.
void reduce_over_ranks(StepTimes& t, harness::MpiCommunicator& comm) {
  for (auto& mode : t.totals) {
    mode.step = comm.max(mode.step);
    mode.compute = comm.sum(mode.compute) / comm.size();
    mode.exposed = comm.sum(mode.exposed) / comm.size();
  }
  t.allreduce_alone = comm.max(t.allreduce_alone);
}

}  // namespace

int main(int argc, char** argv) {
  harness::MpiRuntime runtime(&argc, &argv);
  const int steps = arg(argc, argv, "--steps", 12);
  const int bucket_kb = arg(argc, argv, "--bucket-kb", 2048);
  auto overlapped = harness::MpiCommunicator::world(runtime, harness::MpiProgress::thread);
  auto blocking = harness::MpiCommunicator::world(runtime, harness::MpiProgress::none);
  const int rank = overlapped->rank();

  const bert::BertConfig config = model_config(argc, argv);
  const int sequences = arg(argc, argv, "--batch", 4);
  const int length = arg(argc, argv, "--seq", 128);

  bert::CpuOps ops;
  bert::ParameterStore params(config, ops);
  params.init_truncated_normal(1);
  bert::Model model(params, limits_for(sequences, length));
  const bert::Batch batch = random_batch(config, sequences, length, rank);
  const auto buckets = harness::make_buckets(params.infos(), params.flat_size(),
                                             static_cast<size_t>(bucket_kb) * 256);

  StepTimes t = time_steps({ops, params, model, batch, buckets, *blocking, *overlapped}, steps);
  reduce_over_ranks(t, *overlapped);
  if (rank == 0) {
    std::printf(
        "step = forward + backward + gradient allreduce, %d ranks, model %lld x %lld "
        "(%.1f M parameters, %.1f MB of fp32 gradients in %zu buckets), batch %d x %d "
        "tokens, %d steps\n",
        overlapped->size(), static_cast<long long>(config.num_hidden_layers),
        static_cast<long long>(config.hidden_size), params.parameter_count() / 1e6,
        params.flat_size() * 4 / 1e6, buckets.size(), sequences, length, steps);
    std::printf("allreduce of all gradients alone: %.1f ms\n", 1e3 * t.allreduce_alone);
    const char* names[2] = {"no overlap (progress at wait)", "overlap (progress thread)"};
    for (int mode = 0; mode < 2; ++mode)
      std::printf("%-32s step %8.1f ms  (forward+backward %7.1f ms, then waiting %7.1f ms)\n",
                  names[mode], 1e3 * t.totals[mode].step, 1e3 * t.totals[mode].compute,
                  1e3 * t.totals[mode].exposed);
    std::printf("overlap / no overlap step time: %.3f (speed-up %.3fx)\n",
                t.totals[1].step / t.totals[0].step, t.totals[0].step / t.totals[1].step);
  }
  return 0;
}
