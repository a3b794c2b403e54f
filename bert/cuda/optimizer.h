// Multi-tensor optimizer kernels over the flat fp32 master buffer: per-tensor and global L2 norms
// with an inf/nan flag, Adam/AdamW, LAMB (trust ratio from per-tensor norms), the device-side
// dynamic loss-scale update, each driven by a chunk table (multi_tensor.h) resident on the device.
//
// Design choice: every reduction is two-stage and ordered (per-chunk double partials, then one
// block summing them per tensor in chunk order), so norms and trust ratios are bit-reproducible
// run to run; the elementwise updates also write the compute-precision copy of the weights in the
// same pass (no separate master -> compute cast per step).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "bert/cuda/loss_scale.h"
#include "bert/cuda/multi_tensor.h"

namespace mlbert::cuda {

enum class ComputeCopy : uint8_t { none, f16, bf16 };

struct DeviceChunkTable {
  const TensorChunk* chunks = nullptr;
  const uint32_t* segment_first_chunk = nullptr;  // [segments + 1]
  uint32_t num_chunks = 0;
  uint32_t num_segments = 0;
};

struct L2NormArgs {
  const float* buffer = nullptr;
  DeviceChunkTable table;
  float* segment_norms = nullptr;  // [segments], optional
  float* total = nullptr;          // [2]: global norm, inf/nan flag (1 or 0)
};
size_t l2_norm_workspace_bytes(uint32_t num_chunks);
void l2_norm(const L2NormArgs& args, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// Shared hyperparameters of one update. bias corrections are 1/(1 - beta^step), or 1 without.
struct MomentArgs {
  float* master = nullptr;
  float* grad = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  void* compute = nullptr;  // receives cast(master) when compute_copy != none
  ComputeCopy compute_copy = ComputeCopy::none;
  DeviceChunkTable table;
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-6f, weight_decay = 0, grad_scale = 1;
  float bias_correction1 = 1, bias_correction2 = 1;
  // Optional device loss-scale state: the update is skipped when found_inf is set, and the
  // gradients are additionally multiplied by step_unscale.
  const LossScaleState* loss_scale = nullptr;
};

struct AdamArgs : MomentArgs {
  bool decoupled_weight_decay = true;  // AdamW; false adds wd * p to the gradient (L2)
};
void adam_update(const AdamArgs& args, cudaStream_t stream);

struct LambArgs : MomentArgs {
  bool trust_ratio_without_decay = false;
};
size_t lamb_workspace_bytes(uint32_t num_chunks, uint32_t num_segments);
void lamb_update(const LambArgs& args, void* workspace, size_t workspace_bytes,
                 cudaStream_t stream);

// state = next_loss_scale(state, total[1] != 0, config), on the device.
void update_loss_scale(const float* total, LossScaleState* state, const LossScaleConfig& config,
                       cudaStream_t stream);

}  // namespace mlbert::cuda
