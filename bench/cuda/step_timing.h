// Timing BERT-large training steps on the CUDA backend for bert_cuda_bench: the synthetic batches
// (padded, or the paper's length mix), the step's FLOPs, the device's GEMM and copy ceilings, and
// the timed loop itself.
//
// Design choice: a step is whatever training does between two optimizer updates: one or more
// micro-batches (forward + backward, gradients accumulated), then the global gradient norm and
// one LAMB update. With one micro-batch that is the bench's classic figure; with a system's
// per-GPU batch and gradient accumulation it is the step `mlbert train` runs.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bert/batch.h"
#include "bert/config.h"
#include "bert/cuda/cuda_ops.h"
#include "bert/op_profile.h"

namespace mlbert::bench {

// The sum over sequences of length^2 (what attention's work grows with).
double sum_of_squared_lengths(const bert::Batch& batch);
// The shape of a micro-batch as the simulator's kernel model takes it.
nlohmann::json batch_shape(const bert::Batch& batch);
// docs/reference.md, "Compute": 6*N_enc*s + 12*L*H*s^2 + 6*p*(H^2 + H*V) per sequence.
double step_flops(const bert::BertConfig& c, const bert::Batch& batch);
// `batch_size` sequences: each 512 long ("padded"), or the paper's per-16 length quotas 6/3/2/5
// from the bins 1-128, 129-256, 257-384, 385-512, uniform inside a bin ("mix"); 15% masked.
bert::Batch make_batch(const bert::BertConfig& c, const std::string& mix, int batch_size,
                       std::mt19937_64& rng);

// The device's ceilings, measured in the same process: an 8192^3 bf16 GEMM through cuBLASLt
// (TFLOP/s) and a device-to-device copy, bytes read + written (GB/s).
double gemm_ceiling_tflops();
double copy_bandwidth_gbs();
// Dense bf16/fp16 peak of the datasheet for a device name (0 when unknown).
double datasheet_peak_tflops(const std::string& name);

struct StepRun {
  bert::DType dtype = bert::DType::bf16;
  cuda::CudaOpsOptions options;            // variants; the workspace limits come from the batches
  std::vector<bert::Batch> micro_batches;  // one step: all of them, then the optimizer once
  int steps = 10, warmup = 3, breakdown = 0;
  uint64_t seed = 1234;
};

struct StepTiming {
  double wall_ms = 0, fwd_bwd_ms = 0, optimizer_ms = 0;  // medians over the timed steps
  double loss = 0;                                       // the last micro-batch's
  size_t allocations_during_steps = 0;
  int skipped_warmup = 0, skipped_timed = 0;  // steps the fp16 scaler skipped (overflow)
  double final_loss_scale = 1;                // fp16: the device scaler's scale after the run
  std::string fusion;                         // which cuBLASLt epilogues ran fused
  std::string tuning;                         // how the GEMM algorithms were chosen
  std::string graphs;                         // how many steps were recorded and replayed
  bert::FamilyTotals breakdown;               // --breakdown: the op-by-op steps
};

// Times run.steps steps after run.warmup, then run.breakdown more op by op (not in the figures).
StepTiming time_steps(const bert::BertConfig& config, const StepRun& run);

}  // namespace mlbert::bench
