// The post-LN residual block of BERT as one fused kernel each way:
//   forward   h = dropout(x + bias); s = h + residual; out = LN(s) * gamma + beta
//   backward  d_s = LN'(d_out); d_residual = d_s; d_x = d_s * mask / (1 - p); gamma/beta/bias grads
// One warp per row with the row in registers; the column gradients use a two-stage reduction
// (per-block partials, then a per-column sum) instead of atomics, so they are deterministic. Two
// variants beside it: the forward may keep its dropout keep bits for the backward (one bit an
// element, layer_norm_layout.h), and the streaming backward (layer_norm_stream.cu) makes one pass
// over each row from registers with the next rows' loads in flight and sums the columns in the
// same launch.
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
  // Optional, with dropout: layer_norm_keep_bytes(rows, width) bytes receiving the mask's keep
  // bits (layer_norm_layout.h), for the backward to read instead of drawing them again.
  uint8_t* keep_bits = nullptr;
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
  const uint8_t* keep_bits = nullptr;  // the forward's, or null (then the mask is drawn again)
};

// One row per warp (row_kernel_config_one_row_per_warp).
void layer_norm_forward(const LayerNormForwardArgs& args, cudaStream_t stream);
// Scratch the backward needs for its column partials.
size_t layer_norm_backward_workspace_bytes(int64_t rows, int64_t width, int sm_count);
void layer_norm_backward(const LayerNormBackwardArgs& args, float* workspace,
                         size_t workspace_bytes, int sm_count, cudaStream_t stream);
// Throws std::invalid_argument naming the field a backward cannot take (null or misaligned).
void validate_layer_norm_backward(const LayerNormBackwardArgs& args);

// The streaming backward: the same results (within rounding; the same masks), one cooperative
// launch of at most kStreamBlocksPerSm resident blocks an SM whose block partials stay in the
// workspace (L2) between its two phases.
size_t layer_norm_backward_stream_workspace_bytes(int64_t rows, int64_t width, int sm_count);
void layer_norm_backward_stream(const LayerNormBackwardArgs& args, float* workspace,
                                size_t workspace_bytes, int sm_count, cudaStream_t stream);

}  // namespace mlbert::cuda
