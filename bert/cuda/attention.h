// Fused multi-head attention over variable-length sequences (flash-attention style), head dim 64.
// Activations are unpadded: sequence b owns token rows [cu_seqlens[b], cu_seqlens[b+1]); Q, K, V
// and the output are [total_tokens, row_stride] with head h at columns [64h, 64h+64). The forward
// keeps only the per-row log-sum-exp, and the backward recomputes the probabilities from it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "bert/cuda/dropout_bits.h"
#include "bert/cuda/types.h"
#include "bert/philox.h"

namespace mlbert::cuda {

constexpr int kAttentionHeadDim = 64;

// Which kernels run: the 64-row ones (attention_kernels.cuh), the FlashAttention-2-class ones
// (attention_fa2_*.cuh: 128-query forward CTAs, 128-key backward CTAs), or, automatically, the
// 128-row ones unless the longest sequence fits one 64-row tile. A forward and the backward given
// its keep bits must resolve to the same kernels (the two keep-bit byte orders differ), which
// attention_uses_fa2 guarantees for calls with the same max_seqlen.
enum class AttentionKernels { classic, fa2, automatic };
// Sequences up to this length fill a 64-row tile, where the 128-row kernels would leave half of
// each CTA idle: `automatic` keeps the 64-row kernels for them (a choice to revisit with timings).
constexpr int kAttentionFa2MinSeqlen = 65;
inline bool attention_uses_fa2(AttentionKernels kernels, int max_seqlen) {
  return kernels == AttentionKernels::fa2 ||
         (kernels == AttentionKernels::automatic && max_seqlen >= kAttentionFa2MinSeqlen);
}

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
  // stored and the backward draws. keep_layout is set by the launchers. The chunks' byte order
  // is the kernels' (dropout_bits.h for the 64-row ones, attention_keep_bitmap.h for fa2).
  uint8_t* keep_bits = nullptr;
  bool keep_bits_kernel = false;
  AttentionKeepLayout keep_layout;
  AttentionKernels kernels = AttentionKernels::classic;
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
  // Scratch: the fp32 dQ accumulator of attention_dq_accum_floats() and [num_heads,
  // total_tokens] rowsum(dO * O). Both are fully written by the backward itself.
  float* dq_accum = nullptr;
  float* softmax_d = nullptr;
  // dQ summed in a fixed order (the FlashAttention-2-class kernels only): each 128-key block
  // writes its partial to a plane of its own and a second kernel adds the planes in order, so
  // dQ is the same bit for bit on every run (atomics add in the order CTAs finish).
  bool deterministic_dq = false;
};

// fp32 elements of AttentionBwdParams::dq_accum: [tokens, heads, 64], or with deterministic dQ
// one such plane per 128-key block of the longest sequence. Throws std::invalid_argument for
// deterministic dQ with kernels that do not resolve to the FlashAttention-2-class ones.
size_t attention_dq_accum_floats(AttentionKernels kernels, bool deterministic_dq, int64_t tokens,
                                 int64_t heads, int max_seqlen);

// Raises the attention kernels' dynamic shared memory limits on the current device: once per
// device before its first attention call (CudaOps does it when constructed), not per launch.
void attention_configure_device();

// Throws std::invalid_argument when a pointer or stride breaks the kernels' 16-byte alignment.
void validate_attention_params(const AttentionParams& params);

void attention_forward(ComputeType type, const AttentionParams& params, cudaStream_t stream);
void attention_backward(ComputeType type, const AttentionBwdParams& params, cudaStream_t stream);

}  // namespace mlbert::cuda
