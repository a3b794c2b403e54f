// CudaOps' LayerNorm and embeddings: the checks of their arguments, the LayerNorm keep-bit buffer
// and the choice of backward (layer_norm.h), and dispatch to the embedding kernels (embedding.h).
#include "bert/cuda/cuda_ops.h"

#include <algorithm>
#include <string>

#include "bert/cuda/cuda_check.h"
#include "bert/cuda/cuda_ops_checks.h"
#include "bert/cuda/embedding.h"
#include "bert/cuda/layer_norm.h"
#include "bert/cuda/layer_norm_layout.h"

namespace mlbert::cuda {

using namespace ops_checks;

namespace {

// The LayerNorm that ends both layer_norm_forward and embedding_forward: gamma and beta of
// `width`, the output and the normalized input of rows x width, and per-row mean and rstd.
template <class Params>
void require_normalization_tensors(const Params& p, DType ct, size_t rows, size_t width,
                                   const char* op) {
  require_tensor(p.gamma, ct, width, op, "gamma");
  require_tensor(p.beta, ct, width, op, "beta");
  require_tensor(p.out, ct, rows * width, op, "out");
  require_tensor(p.ln_input, ct, rows * width, op, "ln_input");
  require_tensor(p.mean, DType::f32, rows, op, "mean");
  require_tensor(p.rstd, DType::f32, rows, op, "rstd");
}

template <class Args, class Params>
void set_normalization_tensors(Args& a, const Params& p) {
  a.gamma = p.gamma.data;
  a.beta = p.beta.data;
  a.out = p.out.data;
  a.ln_input = p.ln_input.data;
  a.mean = p.mean.template as<float>();
  a.rstd = p.rstd.template as<float>();
}

}  // namespace

// ---- LayerNorm, embeddings ----------------------------------------------------------------------

void CudaOps::layer_norm_forward(const bert::LayerNormForwardParams& p) {
  const char* op = "layer_norm_forward";
  const DType ct = options_.compute_dtype;
  const size_t R = p.rows, W = p.width;
  require(p.rows >= 0 && p.width > 0, op, "rows must be non-negative and width positive");
  require_tensor(p.x, ct, R * W, op, "x");
  if (p.bias.defined()) require_tensor(p.bias, ct, W, op, "bias");
  if (p.residual.defined()) require_tensor(p.residual, ct, R * W, op, "residual");
  require_normalization_tensors(p, ct, R, W, op);
  LayerNormForwardArgs a;
  a.type = type_;
  a.x = p.x.data;
  a.bias = p.bias.defined() ? p.bias.data : nullptr;
  a.residual = p.residual.defined() ? p.residual.data : nullptr;
  set_normalization_tensors(a, p);
  a.dropout = kernel_mask(p.dropout);
  a.rows = p.rows;
  a.width = p.width;
  a.eps = p.eps;
  a.keep_bits = layer_norm_keep_buffer(op, p.saved, p.dropout, p.rows, p.width);
  cuda::layer_norm_forward(a, stream_);
}

size_t CudaOps::layer_norm_saved_bytes(int64_t rows, int64_t width) const {
  if (!options_.layer_norm_keep_bits || rows <= 0 || width <= 0) return 0;
  return static_cast<size_t>(layer_norm_keep_bytes(rows, width));
}

// The keep-bit buffer of a LayerNorm call: `saved` when this backend keeps bits and the call has
// dropout, else null (the backward then draws the mask).
uint8_t* CudaOps::layer_norm_keep_buffer(const char* op, const Tensor& saved,
                                         const bert::DropoutMask& dropout, int64_t rows,
                                         int64_t width) const {
  const size_t bytes = layer_norm_saved_bytes(rows, width);
  if (!saved.defined() || !dropout.enabled || bytes == 0) return nullptr;
  require_tensor(saved, DType::i32, (bytes + sizeof(int32_t) - 1) / sizeof(int32_t), op, "saved");
  return static_cast<uint8_t*>(saved.data);
}

void CudaOps::layer_norm_backward(const bert::LayerNormBackwardParams& p) {
  const char* op = "layer_norm_backward";
  const DType ct = options_.compute_dtype;
  const size_t R = p.rows, W = p.width;
  require(p.rows >= 0 && p.width > 0, op, "rows must be non-negative and width positive");
  require_tensor(p.d_out, ct, R * W, op, "d_out");
  require_tensor(p.ln_input, ct, R * W, op, "ln_input");
  require_tensor(p.mean, DType::f32, R, op, "mean");
  require_tensor(p.rstd, DType::f32, R, op, "rstd");
  require_tensor(p.gamma, ct, W, op, "gamma");
  require_tensor(p.d_x, ct, R * W, op, "d_x");
  if (p.d_residual.defined()) require_tensor(p.d_residual, ct, R * W, op, "d_residual");
  require_tensor(p.d_gamma, DType::f32, W, op, "d_gamma");
  require_tensor(p.d_beta, DType::f32, W, op, "d_beta");
  if (p.d_bias.defined()) require_tensor(p.d_bias, DType::f32, W, op, "d_bias");
  if (R == 0) return;
  LayerNormBackwardArgs a;
  a.type = type_;
  a.d_out = p.d_out.data;
  a.ln_input = p.ln_input.data;
  a.mean = p.mean.as<const float>();
  a.rstd = p.rstd.as<const float>();
  a.gamma = p.gamma.data;
  a.d_x = p.d_x.data;
  a.d_residual = p.d_residual.defined() ? p.d_residual.data : nullptr;
  a.accumulate_d_residual = p.accumulate_d_residual;
  a.d_gamma = p.d_gamma.as<float>();
  a.d_beta = p.d_beta.as<float>();
  a.d_bias = p.d_bias.defined() ? p.d_bias.as<float>() : nullptr;
  a.dropout = kernel_mask(p.dropout);
  a.rows = p.rows;
  a.width = p.width;
  a.keep_bits = layer_norm_keep_buffer(op, p.saved, p.dropout, p.rows, p.width);
  if (options_.layer_norm_streaming) {
    const size_t bytes = layer_norm_backward_stream_workspace_bytes(p.rows, p.width, sm_count_);
    cuda::layer_norm_backward_stream(a, static_cast<float*>(scratch(bytes)), bytes, sm_count_,
                                     stream_);
    return;
  }
  const size_t bytes = layer_norm_backward_workspace_bytes(p.rows, p.width, sm_count_);
  cuda::layer_norm_backward(a, static_cast<float*>(scratch(bytes)), bytes, sm_count_, stream_);
}

namespace {
EmbeddingTables embedding_tables(const Tensor& ids, const Tensor& positions, const Tensor& segments,
                                 const Tensor& word, const Tensor& position,
                                 const Tensor& token_type, int64_t hidden) {
  EmbeddingTables t;
  t.input_ids = ids.as<const int32_t>();
  t.position_ids = positions.as<const int32_t>();
  t.segment_ids = segments.as<const int32_t>();
  t.word_rows = static_cast<int64_t>(word.numel) / hidden;
  t.position_rows = static_cast<int64_t>(position.numel) / hidden;
  t.token_type_rows = static_cast<int64_t>(token_type.numel) / hidden;
  return t;
}
}  // namespace

void CudaOps::embedding_forward(const bert::EmbeddingForwardParams& p) {
  const char* op = "embedding_forward";
  const DType ct = options_.compute_dtype;
  const size_t T = p.tokens, H = p.hidden;
  require(p.tokens >= 0 && p.hidden > 0, op, "tokens must be non-negative and hidden positive");
  require_tensor(p.input_ids, DType::i32, T, op, "input_ids");
  require_tensor(p.position_ids, DType::i32, T, op, "position_ids");
  require_tensor(p.segment_ids, DType::i32, T, op, "segment_ids");
  require_tensor(p.word, ct, H, op, "word");
  require_tensor(p.position, ct, H, op, "position");
  require_tensor(p.token_type, ct, H, op, "token_type");
  require_normalization_tensors(p, ct, T, H, op);
  EmbeddingForwardArgs a;
  a.type = type_;
  a.ids = embedding_tables(p.input_ids, p.position_ids, p.segment_ids, p.word, p.position,
                           p.token_type, p.hidden);
  a.word = p.word.data;
  a.position = p.position.data;
  a.token_type = p.token_type.data;
  set_normalization_tensors(a, p);
  a.dropout = kernel_mask(p.dropout);
  a.tokens = p.tokens;
  a.hidden = p.hidden;
  a.eps = p.eps;
  a.error_flags = error_flags_;
  cuda::embedding_forward(a, sm_count_, stream_);
}

void CudaOps::embedding_backward(const bert::EmbeddingBackwardParams& p) {
  const char* op = "embedding_backward";
  const DType ct = options_.compute_dtype;
  const size_t T = p.tokens, H = p.hidden;
  require(p.tokens >= 0 && p.hidden > 0, op, "tokens must be non-negative and hidden positive");
  require_tensor(p.d_out, ct, T * H, op, "d_out");
  require_tensor(p.input_ids, DType::i32, T, op, "input_ids");
  require_tensor(p.position_ids, DType::i32, T, op, "position_ids");
  require_tensor(p.segment_ids, DType::i32, T, op, "segment_ids");
  require_tensor(p.ln_input, ct, T * H, op, "ln_input");
  require_tensor(p.mean, DType::f32, T, op, "mean");
  require_tensor(p.rstd, DType::f32, T, op, "rstd");
  require_tensor(p.gamma, ct, H, op, "gamma");
  require_tensor(p.d_word, DType::f32, H, op, "d_word");
  require_tensor(p.d_position, DType::f32, H, op, "d_position");
  require_tensor(p.d_token_type, DType::f32, H, op, "d_token_type");
  require_tensor(p.d_gamma, DType::f32, H, op, "d_gamma");
  require_tensor(p.d_beta, DType::f32, H, op, "d_beta");
  if (T == 0) return;
  EmbeddingBackwardArgs a;
  a.type = type_;
  a.ids = embedding_tables(p.input_ids, p.position_ids, p.segment_ids, p.d_word, p.d_position,
                           p.d_token_type, p.hidden);
  a.d_out = p.d_out.data;
  a.ln_input = p.ln_input.data;
  a.mean = p.mean.as<const float>();
  a.rstd = p.rstd.as<const float>();
  a.gamma = p.gamma.data;
  a.d_word = p.d_word.as<float>();
  a.d_position = p.d_position.as<float>();
  a.d_token_type = p.d_token_type.as<float>();
  a.d_gamma = p.d_gamma.as<float>();
  a.d_beta = p.d_beta.as<float>();
  a.dropout = kernel_mask(p.dropout);
  a.tokens = p.tokens;
  a.hidden = p.hidden;
  a.error_flags = error_flags_;
  const size_t bytes = embedding_backward_workspace_bytes(p.tokens, p.hidden, sm_count_);
  cuda::embedding_backward(a, static_cast<float*>(scratch(bytes)), bytes, sm_count_, stream_);
}

}  // namespace mlbert::cuda
