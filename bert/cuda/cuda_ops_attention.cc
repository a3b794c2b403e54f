// CudaOps' attention: the checks of its arguments, the keep-bit buffers, and dispatch to the
// 64-row or FlashAttention-2-class kernels (attention.h).
#include "bert/cuda/cuda_ops.h"

#include <algorithm>
#include <string>

#include "bert/cuda/attention.h"
#include "bert/cuda/cuda_check.h"
#include "bert/cuda/cuda_ops_checks.h"

namespace mlbert::cuda {

using namespace ops_checks;

// ---- attention ----------------------------------------------------------------------------------

namespace {
// Rows of q, k, v and their gradients: bert::AttentionForwardParams::qkv_row_stride, hidden when 0.
size_t qkv_row_stride_of(const char* op, int64_t stride, size_t hidden) {
  require(stride == 0 || stride >= static_cast<int64_t>(hidden), op,
          "qkv_row_stride must be 0 or at least heads * head_dim");
  return stride == 0 ? hidden : static_cast<size_t>(stride);
}

AttentionParams attention_common(const char* op, DType ct, const Tensor& q, const Tensor& k,
                                 const Tensor& v, const Tensor& cu_seqlens, const Tensor& lse,
                                 int64_t tokens, int64_t num_sequences, int64_t heads,
                                 int64_t head_dim, int max_seqlen, float scale,
                                 const bert::DropoutMask& dropout, uint32_t* error_flags,
                                 int64_t qkv_row_stride) {
  require(
      head_dim == kAttentionHeadDim, op,
      "the CUDA attention kernels support head_dim 64 only (got " + std::to_string(head_dim) + ")");
  require(tokens > 0 && num_sequences > 0 && heads > 0 && max_seqlen > 0, op,
          "tokens, num_sequences, heads and max_seqlen must be positive");
  const size_t hidden = static_cast<size_t>(heads * head_dim);
  const size_t T = static_cast<size_t>(tokens);
  const size_t qkv_stride = qkv_row_stride_of(op, qkv_row_stride, hidden);
  require_tensor(q, ct, (T - 1) * qkv_stride + hidden, op, "q");
  require_tensor(k, ct, (T - 1) * qkv_stride + hidden, op, "k");
  require_tensor(v, ct, (T - 1) * qkv_stride + hidden, op, "v");
  require_tensor(cu_seqlens, DType::i32, static_cast<size_t>(num_sequences) + 1, op, "cu_seqlens");
  require_tensor(lse, DType::f32, static_cast<size_t>(heads) * T, op, "softmax_lse");
  AttentionParams a;
  a.q = q.data;
  a.k = k.data;
  a.v = v.data;
  a.q_row_stride = a.k_row_stride = a.v_row_stride = static_cast<int64_t>(qkv_stride);
  a.out_row_stride = static_cast<int64_t>(hidden);
  a.softmax_lse = lse.as<float>();
  a.cu_seqlens = cu_seqlens.as<const int>();
  a.num_seqs = static_cast<int>(num_sequences);
  a.num_heads = static_cast<int>(heads);
  a.max_seqlen = max_seqlen;
  a.total_tokens = static_cast<int>(tokens);
  a.softmax_scale = scale;
  a.dropout = dropout;
  a.error_flags = error_flags;
  return a;
}
}  // namespace

const char* attention_dropout_bits_name(AttentionDropoutBits mode) {
  switch (mode) {
    case AttentionDropoutBits::drawn_twice:
      return "drawn-twice";
    case AttentionDropoutBits::forward_keeps:
      return "forward-keeps";
    case AttentionDropoutBits::kernel_keeps:
      return "kernel-keeps";
  }
  return "?";
}

AttentionDropoutBits parse_attention_dropout_bits(const std::string& name) {
  for (AttentionDropoutBits mode :
       {AttentionDropoutBits::drawn_twice, AttentionDropoutBits::forward_keeps,
        AttentionDropoutBits::kernel_keeps})
    if (name == attention_dropout_bits_name(mode)) return mode;
  throw std::invalid_argument("attention dropout bits '" + name +
                              "' is not drawn-twice, forward-keeps or kernel-keeps");
}

const char* attention_kernels_name(AttentionKernels kernels) {
  switch (kernels) {
    case AttentionKernels::classic:
      return "classic";
    case AttentionKernels::fa2:
      return "fa2";
    case AttentionKernels::automatic:
      return "auto";
  }
  return "?";
}

AttentionKernels parse_attention_kernels(const std::string& name) {
  for (AttentionKernels kernels :
       {AttentionKernels::classic, AttentionKernels::fa2, AttentionKernels::automatic})
    if (name == attention_kernels_name(kernels)) return kernels;
  throw std::invalid_argument("attention kernels '" + name + "' is not classic, fa2 or auto");
}

size_t attention_saved_bytes(AttentionDropoutBits mode, int64_t tokens, int64_t num_sequences,
                             int64_t heads, int max_seqlen) {
  if (mode == AttentionDropoutBits::drawn_twice || tokens <= 0 || num_sequences <= 0 ||
      max_seqlen <= 0)
    return 0;
  const uint64_t bytes = attention_keep_bytes(tokens, num_sequences, heads, max_seqlen);
  // The attention kernels address the buffer with 32-bit byte offsets; refused here, when the
  // model sizes its buffers, rather than at the first training step.
  if (bytes > UINT32_MAX)
    throw std::invalid_argument(
        "CudaOps: the attention dropout keep bits of " + std::to_string(tokens) + " tokens in " +
        std::to_string(num_sequences) + " sequences (" + std::to_string(bytes) +
        " bytes a layer) exceed the kernels' 4 GiB of byte offsets; run with attention dropout "
        "bits " +
        attention_dropout_bits_name(AttentionDropoutBits::drawn_twice));
  return static_cast<size_t>(bytes);
}

size_t CudaOps::attention_saved_bytes(int64_t tokens, int64_t num_sequences, int64_t heads,
                                      int max_seqlen) const {
  return cuda::attention_saved_bytes(options_.attention_dropout_bits, tokens, num_sequences, heads,
                                     max_seqlen);
}

namespace {
// The keep-bit buffer of an attention call: `saved` when this backend keeps bits and the call has
// dropout, else null (the backward then draws them).
uint8_t* attention_keep_buffer(const CudaOps& ops, const char* op, const Tensor& saved,
                               const bert::DropoutMask& dropout, int64_t tokens,
                               int64_t num_sequences, int64_t heads, int max_seqlen) {
  const size_t bytes = ops.attention_saved_bytes(tokens, num_sequences, heads, max_seqlen);
  if (!saved.defined() || !dropout.enabled || bytes == 0) return nullptr;
  require_tensor(saved, DType::i32, (bytes + sizeof(int32_t) - 1) / sizeof(int32_t), op, "saved");
  return static_cast<uint8_t*>(saved.data);
}
}  // namespace

void CudaOps::attention_forward(const bert::AttentionForwardParams& p) {
  const char* op = "attention_forward";
  const DType ct = options_.compute_dtype;
  if (p.tokens == 0) return;
  AttentionParams a =
      attention_common(op, ct, p.q, p.k, p.v, p.cu_seqlens, p.softmax_lse, p.tokens,
                       p.num_sequences, p.heads, p.head_dim, p.max_seqlen, p.scale,
                       attention_mask(op, p.dropout), error_flags_, p.qkv_row_stride);
  require_tensor(p.out, ct, static_cast<size_t>(p.tokens * p.heads * p.head_dim), op, "out");
  a.out = p.out.data;
  a.keep_bits = attention_keep_buffer(*this, op, p.saved, p.dropout, p.tokens, p.num_sequences,
                                      p.heads, p.max_seqlen);
  a.keep_bits_kernel = options_.attention_dropout_bits == AttentionDropoutBits::kernel_keeps;
  a.kernels = options_.attention_kernels;
  cuda::attention_forward(type_, a, stream_);
}

void CudaOps::attention_backward(const bert::AttentionBackwardParams& p) {
  const char* op = "attention_backward";
  const DType ct = options_.compute_dtype;
  if (p.tokens == 0) return;
  AttentionBwdParams a;
  static_cast<AttentionParams&>(a) =
      attention_common(op, ct, p.q, p.k, p.v, p.cu_seqlens, p.softmax_lse, p.tokens,
                       p.num_sequences, p.heads, p.head_dim, p.max_seqlen, p.scale,
                       attention_mask(op, p.dropout), error_flags_, p.qkv_row_stride);
  const size_t elems = static_cast<size_t>(p.tokens * p.heads * p.head_dim);
  const size_t strided =
      static_cast<size_t>((p.tokens - 1) * a.q_row_stride + p.heads * p.head_dim);
  require_tensor(p.out, ct, elems, op, "out");
  require_tensor(p.d_out, ct, elems, op, "d_out");
  require_tensor(p.d_q, ct, strided, op, "d_q");
  require_tensor(p.d_k, ct, strided, op, "d_k");
  require_tensor(p.d_v, ct, strided, op, "d_v");
  a.out = p.out.data;
  a.dout = p.d_out.data;
  a.dout_row_stride = a.out_row_stride;
  a.dq = p.d_q.data;
  a.dk = p.d_k.data;
  a.dv = p.d_v.data;
  a.dq_row_stride = a.dk_row_stride = a.dv_row_stride = a.q_row_stride;
  a.keep_bits = attention_keep_buffer(*this, op, p.saved, p.dropout, p.tokens, p.num_sequences,
                                      p.heads, p.max_seqlen);
  a.kernels = options_.attention_kernels;
  a.deterministic_dq = options_.attention_deterministic_dq;
  // Deterministic dQ keeps a partial per 128-key block: more than the workspace's
  // attention_backward_scratch_bytes, grown at the first such call.
  const size_t dq_bytes = align_up(
      attention_dq_accum_floats(a.kernels, a.deterministic_dq, p.tokens, p.heads, p.max_seqlen) *
      sizeof(float));
  const size_t d_bytes = align_up(static_cast<size_t>(p.tokens * p.heads) * sizeof(float));
  char* base = static_cast<char*>(
      scratch(std::max(attention_backward_scratch_bytes(p.tokens, p.heads), dq_bytes + d_bytes)));
  a.dq_accum = reinterpret_cast<float*>(base);
  a.softmax_d = reinterpret_cast<float*>(base + dq_bytes);
  cuda::attention_backward(type_, a, stream_);
}

}  // namespace mlbert::cuda
