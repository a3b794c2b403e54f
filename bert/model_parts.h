// What the model's sources share (bert/model.cc, model_forward.cc, model_backward.cc): the arena
// of activations carved once at construction, one micro-batch's sizes and dropout key, the report
// of the finished gradient prefix, and the helpers that fill the ops' params structs.
//
// Design choice: backward visits tensors in exactly the flat parameter order (bert/parameters.h),
// so after each op the finished gradients form a prefix that GradientPrefix reports.
#pragma once
#include <functional>
#include <vector>

#include "bert/model.h"

namespace mlbert::bert::model_detail {

inline constexpr size_t kArenaAlignment = 64;  // elements

// Hands out aligned slices of one allocation; first counts, then carves.
class ArenaCarver {
 public:
  explicit ArenaCarver(DType dtype) : dtype_(dtype) {}
  Tensor take(size_t numel) {
    const size_t offset = used_;
    used_ = (used_ + numel + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    if (!buffer_.tensor().defined()) return Tensor{nullptr, dtype_, numel};  // sizing pass
    return buffer_.slice(offset, numel);
  }
  void allocate(Ops& ops) {
    buffer_ = Buffer(ops, dtype_, used_ == 0 ? kArenaAlignment : used_);
    used_ = 0;
  }

 private:
  DType dtype_;
  size_t used_ = 0;
  Buffer buffer_;
};

inline Activation hidden_activation(const BertConfig& c) {
  return c.uses_erf_gelu() ? Activation::gelu_erf : Activation::gelu;
}

// y[m, n] = act(x[m, k] W + b), W stored [k, n]; with an activation `pre` receives x W + b.
inline LinearForwardParams dense(Tensor x, Tensor w, Tensor b, Tensor y, int64_t m, int64_t n,
                                 int64_t k, Activation act = Activation::none, Tensor pre = {}) {
  return {.input = x,
          .weight = w,
          .bias = b,
          .out = y,
          .pre_activation = pre,
          .activation = act,
          .m = m,
          .n = n,
          .k = k};
}

// Its backward for d_y the gradient of the pre-activation: d_x = d_y W^T, d_w += x^T d_y, d_b +=
// column sums of d_y (d_x and d_b optional).
inline LinearBackwardParams dense_backward(Tensor d_y, Tensor x, Tensor w, Tensor d_x, Tensor d_w,
                                           Tensor d_b, int64_t m, int64_t n, int64_t k) {
  return {.d_out = d_y,
          .input = x,
          .weight = w,
          .d_input = d_x,
          .d_weight = d_w,
          .d_bias = d_b,
          .m = m,
          .n = n,
          .k = k};
}

// What a LayerNorm's forward keeps for its backward (`saved`: the backend's own, may be empty).
struct NormSaved {
  Tensor ln_input, mean, rstd, saved;
};

// LayerNorm(dropout(x + bias) + residual) over rows of the hidden width; bias and residual may be
// empty.
inline LayerNormForwardParams residual_norm(const ParameterStore& P, Tensor x, Tensor bias,
                                            Tensor residual, size_t gamma, size_t beta,
                                            const NormSaved& saved, Tensor out, DropoutMask dropout,
                                            int64_t rows) {
  return {.x = x,
          .bias = bias,
          .residual = residual,
          .gamma = P.compute(gamma),
          .beta = P.compute(beta),
          .out = out,
          .ln_input = saved.ln_input,
          .mean = saved.mean,
          .rstd = saved.rstd,
          .dropout = dropout,
          .rows = rows,
          .width = P.config().hidden_size,
          .eps = static_cast<float>(P.config().layer_norm_eps),
          .saved = saved.saved};
}

// Its backward: d_x the gradient of x (and of the bias), d_residual of the residual (optional).
inline LayerNormBackwardParams residual_norm_backward(const ParameterStore& P, Tensor d_out,
                                                      size_t gamma, size_t beta,
                                                      const NormSaved& saved, Tensor d_x,
                                                      Tensor d_residual, Tensor d_bias,
                                                      DropoutMask dropout, int64_t rows) {
  return {.d_out = d_out,
          .ln_input = saved.ln_input,
          .mean = saved.mean,
          .rstd = saved.rstd,
          .gamma = P.compute(gamma),
          .d_x = d_x,
          .d_residual = d_residual,
          .d_gamma = P.grad(gamma),
          .d_beta = P.grad(beta),
          .d_bias = d_bias,
          .dropout = dropout,
          .rows = rows,
          .width = P.config().hidden_size,
          .saved = saved.saved};
}

}  // namespace mlbert::bert::model_detail

namespace mlbert::bert {

struct Model::Arena {
  using Norm = model_detail::NormSaved;
  struct Layer {
    Tensor qkv, context, softmax_lse;
    Tensor attention_saved;  // what the backend keeps for the attention backward (may be empty)
    Norm attention_norm;
    Tensor attention_out, intermediate_pre, intermediate;
    Norm output_norm;
  };
  model_detail::ArenaCarver compute, f32, i32;
  // Inputs.
  Tensor input_ids, segment_ids, position_ids, cu_seqlens, masked_positions, masked_labels,
      first_tokens, nsp_labels;
  // Forward activations. hidden[l] is the input of layer l; hidden[L] the encoder output.
  std::vector<Tensor> hidden;
  Norm embedding_norm;
  std::vector<Layer> layers;
  Tensor linear_scratch;  // the attention-output and FFN-output GEMM results before bias
  Tensor mlm_gathered, mlm_pre, mlm_act, mlm_out, mlm_logits;
  Norm mlm_norm;
  Tensor pooler_in, pooler_pre, pooled, nsp_logits;
  Tensor stats;  // f32 [4]: mlm loss sum, mlm correct, nsp loss sum, nsp correct
  // Backward scratch.
  Tensor d_hidden, d_x1, d_branch, d_context, d_qkv, d_intermediate;
  Tensor d_mlm_out, d_mlm_act, d_mlm_gathered, d_pooled, d_pooler_in;

  explicit Arena(DType dtype) : compute(dtype), f32(DType::f32), i32(DType::i32) {}

  // `saved_bytes`: what the backend keeps for the LayerNorm's backward (0: nothing).
  Norm norm(size_t rows, size_t width, size_t saved_bytes = 0) {
    return Norm{compute.take(rows * width), f32.take(rows), f32.take(rows),
                saved_bytes > 0 ? i32.take((saved_bytes + 3) / 4) : Tensor{}};
  }
  // What the backend keeps between forward and backward at the limits: Ops::attention_saved_bytes
  // and Ops::layer_norm_saved_bytes of the encoder's residual LayerNorms.
  struct Saved {
    size_t attention = 0, layer_norm = 0;
  };
  void carve(const BertConfig& c, const ModelLimits& lim, const Saved& saved) {
    const size_t t = lim.max_tokens, s = lim.max_sequences, p = lim.max_masked;
    const size_t h = static_cast<size_t>(c.hidden_size),
                 f = static_cast<size_t>(c.intermediate_size);
    const size_t v = static_cast<size_t>(c.padded_vocab_size()),
                 heads = static_cast<size_t>(c.num_attention_heads);
    for (Tensor* input : {&input_ids, &segment_ids, &position_ids}) *input = i32.take(t);
    cu_seqlens = i32.take(s + 1);
    masked_positions = i32.take(p);
    masked_labels = i32.take(p);
    first_tokens = i32.take(s);
    nsp_labels = i32.take(s);
    hidden.clear();
    for (int64_t l = 0; l <= c.num_hidden_layers; ++l) hidden.push_back(compute.take(t * h));
    embedding_norm = norm(t, h);
    layers.assign(static_cast<size_t>(c.num_hidden_layers), Layer{});
    for (Layer& layer : layers) {
      layer.qkv = compute.take(3 * t * h);
      layer.context = compute.take(t * h);
      layer.softmax_lse = f32.take(heads * t);
      if (saved.attention > 0) layer.attention_saved = i32.take((saved.attention + 3) / 4);
      layer.attention_norm = norm(t, h, saved.layer_norm);
      layer.attention_out = compute.take(t * h);
      layer.intermediate_pre = compute.take(t * f);
      layer.intermediate = compute.take(t * f);
      layer.output_norm = norm(t, h, saved.layer_norm);
    }
    linear_scratch = compute.take(t * h);
    for (Tensor* mlm : {&mlm_gathered, &mlm_pre, &mlm_act, &mlm_out}) *mlm = compute.take(p * h);
    mlm_norm = norm(p, h);
    mlm_logits = compute.take(p * v);
    for (Tensor* pooler : {&pooler_in, &pooler_pre, &pooled}) *pooler = compute.take(s * h);
    nsp_logits = compute.take(s * 2);
    stats = f32.take(4);
    for (Tensor* d : {&d_hidden, &d_x1, &d_branch, &d_context}) *d = compute.take(t * h);
    d_qkv = compute.take(3 * t * h);
    d_intermediate = compute.take(t * f);
    for (Tensor* d : {&d_mlm_out, &d_mlm_act, &d_mlm_gathered}) *d = compute.take(p * h);
    for (Tensor* d : {&d_pooled, &d_pooler_in}) *d = compute.take(s * h);
  }
};

// One micro-batch's sizes and its dropout key: what every op of a step depends on.
struct Model::Step {
  Step(const Batch& batch, const DropoutKey* key)
      : t(static_cast<int64_t>(batch.num_tokens())),
        s(static_cast<int64_t>(batch.num_sequences())),
        p(static_cast<int64_t>(batch.num_masked())),
        max_seqlen(batch.max_seqlen),
        key(key) {}
  DropoutMask mask(uint32_t site, double prob) const {
    return key ? make_dropout_mask(key->seed, key->step, site, prob) : DropoutMask{};
  }
  int64_t t, s, p;  // tokens, sequences, masked predictions
  int max_seqlen;
  const DropoutKey* key;  // null: no dropout
};

// What one encoder layer's forward and backward read: the backend, the arena with the layer's
// activations, its parameters, the sizes (tokens, hidden, intermediate) and the hidden dropout.
struct Model::LayerScope {
  Ops& ops;
  const Arena& a;
  const Arena::Layer& act;
  const LayerParameters& lp;
  const BertConfig& c;
  int64_t t, h, f;
  int layer;
  double p_hidden;
};

// The prefix of the flat gradient buffer that is final, reported through on_grad_ready.
class Model::GradientPrefix {
 public:
  GradientPrefix(const ParameterStore& params, const std::function<void(size_t)>& on_ready)
      : infos_(params.infos()), flat_size_(params.flat_size()), on_ready_(on_ready) {}
  // Every tensor up to and including `last_index` is final.
  void finish_through(size_t last_index) {
    if (last_index + 1 <= finished_) return;
    finished_ = last_index + 1;
    if (on_ready_) on_ready_(finished_ < infos_.size() ? infos_[finished_].offset : flat_size_);
  }

 private:
  const std::vector<ParameterInfo>& infos_;
  size_t flat_size_;
  const std::function<void(size_t)>& on_ready_;
  size_t finished_ = 0;
};

}  // namespace mlbert::bert
