// Fused multi-head attention over variable-length sequences (flash-attention style), head dim 64.
// Activations are unpadded: sequence b owns token rows [cu_seqlens[b], cu_seqlens[b+1]); Q, K, V
// and the output are [total_tokens, row_stride] with head h at columns [64h, 64h+64). The forward
// keeps only the per-row log-sum-exp, and the backward recomputes the probabilities from it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "bert/cuda/dropout_bits.h"
#include "bert/cuda/types.h"
#include "bert/philox.h"

namespace mlbert::cuda {

constexpr int kAttentionHeadDim = 64;

// One params struct for the forward and the backward kernels (like flash-attention's
// Flash_fwd_params): pointers to device memory, strides in elements.
struct AttentionParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t q_row_stride = 0;
  int64_t k_row_stride = 0;
  int64_t v_row_stride = 0;
  void* out = nullptr;  // [total_tokens, out_row_stride], written with =
  int64_t out_row_stride = 0;
  // [num_heads, total_tokens] natural-log log-sum-exp of the scaled scores, written by the forward.
  float* softmax_lse = nullptr;
  const int* cu_seqlens = nullptr;  // [num_seqs + 1] on the device
  int num_seqs = 0;
  int num_heads = 0;
  int max_seqlen = 0;
  int total_tokens = 0;
  float softmax_scale = 0.125f;  // 1/sqrt(64)
  // Dropout on the probabilities, element numbering of bert::attention_dropout_element with
  // dropout_row_stride = bert::attention_dropout_row_stride(max_seqlen) (set by the launcher).
  bert::DropoutMask dropout;
  uint64_t dropout_row_stride = 0;
  // Optional, with dropout: attention_keep_bytes(total_tokens, num_seqs, num_heads, max_seqlen)
  // bytes holding the keep bits of every Philox block of the probabilities (dropout_bits.h). The
  // forward fills them, drawing the blocks itself, or with keep_bits_kernel a kernel of their own
  // fills them first and the forward reads them; the backward, given the same buffer after that
  // forward, reads them instead of drawing again (the same bits either way). Null: nothing is
  // stored and the backward draws. keep_layout is set by the launchers.
  uint8_t* keep_bits = nullptr;
  bool keep_bits_kernel = false;
  AttentionKeepLayout keep_layout;
  // Raised with kAttentionBadCuSeqlens when a sequence is empty, longer than max_seqlen or ends
  // past total_tokens (its CTAs then do nothing rather than read out of bounds). Optional.
  uint32_t* error_flags = nullptr;
};

constexpr uint32_t kAttentionBadCuSeqlens = 1u << 3;

struct AttentionBwdParams : AttentionParams {
  const void* dout = nullptr;
  int64_t dout_row_stride = 0;
  // Gradients, written with = (never accumulated): [total_tokens, d*_row_stride].
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  int64_t dq_row_stride = 0;
  int64_t dk_row_stride = 0;
  int64_t dv_row_stride = 0;
  // Scratch: [total_tokens, num_heads, 64] fp32 dQ accumulator and [num_heads, total_tokens]
  // rowsum(dO * O). Both are fully written by the backward itself.
  float* dq_accum = nullptr;
  float* softmax_d = nullptr;
};

// Throws std::invalid_argument when a pointer or stride breaks the kernels' 16-byte alignment.
void validate_attention_params(const AttentionParams& params);

void attention_forward(ComputeType type, const AttentionParams& params, cudaStream_t stream);
void attention_backward(ComputeType type, const AttentionBwdParams& params, cudaStream_t stream);

}  // namespace mlbert::cuda
