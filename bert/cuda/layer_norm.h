// The post-LN residual block of BERT as one fused kernel each way:
//   forward   h = dropout(x + bias); s = h + residual; out = LN(s) * gamma + beta
//   backward  d_s = LN'(d_out); d_residual = d_s; d_x = d_s * mask / (1 - p); gamma/beta/bias grads
// One warp per row with the row in registers; the column gradients use a two-stage reduction
// (per-block partials, then a per-column sum) instead of atomics, so they are deterministic.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "bert/cuda/types.h"
#include "bert/philox.h"

namespace mlbert::cuda {

struct LayerNormForwardArgs {
  ComputeType type = ComputeType::bf16;
  const void* x = nullptr;         // [rows, width]
  const void* bias = nullptr;      // [width], optional
  const void* residual = nullptr;  // [rows, width], optional
  const void* gamma = nullptr;
  const void* beta = nullptr;
  void* out = nullptr;       // written
  void* ln_input = nullptr;  // s, written
  float* mean = nullptr;     // [rows], written
  float* rstd = nullptr;
  bert::DropoutMask dropout;  // over h, element r * width + c
  int64_t rows = 0, width = 0;
  float eps = 1e-12f;
};

struct LayerNormBackwardArgs {
  ComputeType type = ComputeType::bf16;
  const void* d_out = nullptr;
  const void* ln_input = nullptr;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  const void* gamma = nullptr;
  void* d_x = nullptr;         // written
  void* d_residual = nullptr;  // optional; written, or added to when accumulate_d_residual
  bool accumulate_d_residual = false;
  float* d_gamma = nullptr;  // accumulated
  float* d_beta = nullptr;   // accumulated
  float* d_bias = nullptr;   // optional, accumulated
  bert::DropoutMask dropout;
  int64_t rows = 0, width = 0;
};

// One row per warp (row_kernel_config_one_row_per_warp).
void layer_norm_forward(const LayerNormForwardArgs& args, cudaStream_t stream);
// Scratch the backward needs for its column partials.
size_t layer_norm_backward_workspace_bytes(int64_t rows, int64_t width, int sm_count);
void layer_norm_backward(const LayerNormBackwardArgs& args, float* workspace,
                         size_t workspace_bytes, int sm_count, cudaStream_t stream);

}  // namespace mlbert::cuda
