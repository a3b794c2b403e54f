// Model: BertForPreTraining forward and backward as a sequence of Ops calls, one statement per op.
//
// Every activation backward needs is kept per layer in one arena carved from three allocations
// (compute dtype, f32, i32) made at construction; scratch buffers are shared across layers.
// Backward visits tensors in exactly the flat parameter order (bert/parameters.h), so after each
// op the finished gradients form a prefix that is reported through on_grad_ready.
#include "bert/model.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace mlbert::bert {

namespace {

constexpr size_t kArenaAlignment = 64;  // elements

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

Activation hidden_activation(const BertConfig& c) {
  return c.uses_erf_gelu() ? Activation::gelu_erf : Activation::gelu;
}

// y[m, n] = act(x[m, k] W + b), W stored [k, n]; with an activation `pre` receives x W + b.
LinearForwardParams dense(Tensor x, Tensor w, Tensor b, Tensor y, int64_t m, int64_t n, int64_t k,
                          Activation act = Activation::none, Tensor pre = {}) {
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
LinearBackwardParams dense_backward(Tensor d_y, Tensor x, Tensor w, Tensor d_x, Tensor d_w,
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
LayerNormForwardParams residual_norm(const ParameterStore& P, Tensor x, Tensor bias,
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
LayerNormBackwardParams residual_norm_backward(const ParameterStore& P, Tensor d_out, size_t gamma,
                                               size_t beta, const NormSaved& saved, Tensor d_x,
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

}  // namespace

struct Model::Arena {
  using Norm = NormSaved;
  struct Layer {
    Tensor qkv, context, softmax_lse;
    Tensor attention_saved;  // what the backend keeps for the attention backward (may be empty)
    Norm attention_norm;
    Tensor attention_out, intermediate_pre, intermediate;
    Norm output_norm;
  };
  ArenaCarver compute, f32, i32;
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

Model::Model(ParameterStore& params, ModelLimits limits) : params_(&params), limits_(limits) {
  if (limits_.max_tokens == 0 || limits_.max_sequences == 0) {
    throw std::invalid_argument("ModelLimits: max_tokens and max_sequences must be positive");
  }
  if (limits_.max_seqlen <= 0 || limits_.max_seqlen > params.config().max_position_embeddings) {
    throw std::invalid_argument("ModelLimits: max_seqlen must be in [1, max_position_embeddings]");
  }
  arena_ = std::make_unique<Arena>(params.ops().compute_dtype());
  // No dropout: no keep bits to carry from forward to backward.
  const BertConfig& c = params.config();
  const int64_t tokens = static_cast<int64_t>(limits_.max_tokens);
  Arena::Saved saved;
  if (c.attention_probs_dropout_prob > 0)
    saved.attention =
        params.ops().attention_saved_bytes(tokens, static_cast<int64_t>(limits_.max_sequences),
                                           c.num_attention_heads, limits_.max_seqlen);
  if (c.hidden_dropout_prob > 0)
    saved.layer_norm = params.ops().layer_norm_saved_bytes(tokens, c.hidden_size);
  arena_->carve(params.config(), limits_, saved);  // sizing pass
  arena_->compute.allocate(params.ops());
  arena_->f32.allocate(params.ops());
  arena_->i32.allocate(params.ops());
  arena_->carve(params.config(), limits_, saved);  // the real slices
}

Model::~Model() = default;

const BertConfig& Model::config() const {
  return params_->config();
}

void Model::check_fits(const Batch& batch) const {
  batch.validate(config());
  auto over = [](const char* what, size_t value, size_t limit) {
    if (value > limit) {
      throw std::invalid_argument("batch: " + std::to_string(value) + " " + what +
                                  " exceed the model's limit of " + std::to_string(limit));
    }
  };
  over("tokens", batch.num_tokens(), limits_.max_tokens);
  over("sequences", batch.num_sequences(), limits_.max_sequences);
  over("masked positions", batch.num_masked(), limits_.max_masked);
  over("tokens in one sequence", static_cast<size_t>(batch.max_seqlen),
       static_cast<size_t>(limits_.max_seqlen));
  if (batch.num_sequences() == 0) throw std::invalid_argument("batch: no sequences");
}

void Model::upload(const Batch& batch) {
  Ops& ops = params_->ops();
  Arena& a = *arena_;
  auto put = [&](const Tensor& dst, const std::vector<int32_t>& src, size_t count) {
    ops.copy_from_host(dst, src.data(), count * sizeof(int32_t));
  };
  put(a.input_ids, batch.input_ids, batch.num_tokens());
  put(a.segment_ids, batch.segment_ids, batch.num_tokens());
  put(a.position_ids, batch.position_ids, batch.num_tokens());
  put(a.cu_seqlens, batch.cu_seqlens, batch.num_sequences() + 1);
  put(a.first_tokens, batch.cu_seqlens, batch.num_sequences());
  put(a.masked_positions, batch.masked_lm_positions, batch.num_masked());
  put(a.masked_labels, batch.masked_lm_labels, batch.num_masked());
  put(a.nsp_labels, batch.next_sentence_labels, batch.num_sequences());
}

// ---- parameter views ----------------------------------------------------------------------------

Tensor Model::weight(size_t tensor) const {
  return params_->compute(tensor);
}
Tensor Model::grad(size_t tensor) const {
  return params_->grad(tensor);
}

// ---- forward ------------------------------------------------------------------------------------

void Model::forward(const Step& st) {
  Ops& ops = params_->ops();
  const Arena& a = *arena_;
  const ParameterIndex& ix = params_->index();
  const BertConfig& c = config();
  ops.embedding_forward({.input_ids = a.input_ids,
                         .position_ids = a.position_ids,
                         .segment_ids = a.segment_ids,
                         .word = weight(ix.word_embeddings),
                         .position = weight(ix.position_embeddings),
                         .token_type = weight(ix.token_type_embeddings),
                         .gamma = weight(ix.embedding_layer_norm_gamma),
                         .beta = weight(ix.embedding_layer_norm_beta),
                         .out = a.hidden[0],
                         .ln_input = a.embedding_norm.ln_input,
                         .mean = a.embedding_norm.mean,
                         .rstd = a.embedding_norm.rstd,
                         .dropout = st.mask(kEmbeddingDropoutSite, c.hidden_dropout_prob),
                         .tokens = st.t,
                         .hidden = c.hidden_size,
                         .eps = static_cast<float>(c.layer_norm_eps)});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) layer_forward(st, l);
}

void Model::layer_forward(const Step& st, int64_t l) {
  Ops& ops = params_->ops();
  const Arena& a = *arena_;
  const Arena::Layer& act = a.layers[static_cast<size_t>(l)];
  const LayerParameters& lp = params_->index().layers[static_cast<size_t>(l)];
  const BertConfig& c = config();
  const int64_t t = st.t, h = c.hidden_size, f = c.intermediate_size;
  const int layer = static_cast<int>(l);
  const double p_hidden = c.hidden_dropout_prob;
  qkv_forward(st, l);
  ops.attention_forward(attention_forward_params(st, l));
  ops.linear_forward(
      dense(act.context, weight(lp.attention_output_kernel), {}, a.linear_scratch, t, h, h));
  ops.layer_norm_forward(
      residual_norm(*params_, a.linear_scratch, weight(lp.attention_output_bias), a.hidden[l],
                    lp.attention_layer_norm_gamma, lp.attention_layer_norm_beta, act.attention_norm,
                    act.attention_out,
                    st.mask(dropout_site(layer, DropoutSiteKind::attention_output), p_hidden), t));
  ops.linear_forward(dense(act.attention_out, weight(lp.intermediate_kernel),
                           weight(lp.intermediate_bias), act.intermediate, t, f, h,
                           hidden_activation(c), act.intermediate_pre));
  ops.linear_forward(
      dense(act.intermediate, weight(lp.output_kernel), {}, a.linear_scratch, t, h, f));
  ops.layer_norm_forward(residual_norm(
      *params_, a.linear_scratch, weight(lp.output_bias), act.attention_out,
      lp.output_layer_norm_gamma, lp.output_layer_norm_beta, act.output_norm, a.hidden[l + 1],
      st.mask(dropout_site(layer, DropoutSiteKind::ffn_output), p_hidden), t));
}

// The Q, K and V projections. Separate layout: one call with batch 3 over the three adjacent
// kernels and biases, writing q, k, v as three [tokens, hidden] blocks of the qkv activation.
// Fused layout: one N = 3 * hidden product over the [3 * hidden, hidden] weight, writing rows of
// q | k | v.
void Model::qkv_forward(const Step& st, int64_t l) {
  const LayerParameters& lp = params_->index().layers[static_cast<size_t>(l)];
  const int64_t h = config().hidden_size;
  const Tensor x = arena_->hidden[l], qkv = arena_->layers[static_cast<size_t>(l)].qkv;
  const Tensor w = params_->compute_span(lp.qkv_kernel, lp.qkv_kernel + 2);
  const Tensor b = params_->compute_span(lp.qkv_bias, lp.qkv_bias + 2);
  if (params_->qkv_layout() == QkvLayout::fused) {
    params_->ops().linear_forward({.input = x,
                                   .weight = w,
                                   .bias = b,
                                   .out = qkv,
                                   .m = st.t,
                                   .n = 3 * h,
                                   .k = h,
                                   .weight_transposed = true});
    return;
  }
  params_->ops().linear_forward({.input = x,
                                 .weight = w,
                                 .bias = b,
                                 .out = qkv,
                                 .m = st.t,
                                 .n = h,
                                 .k = h,
                                 .batch = 3,
                                 .weight_stride = params_->stride(lp.qkv_kernel),
                                 .bias_stride = params_->stride(lp.qkv_bias),
                                 .out_stride = qkv_block_stride()});
}

size_t Model::qkv_block_stride() const {
  return limits_.max_tokens * static_cast<size_t>(config().hidden_size);
}

Model::QkvViews Model::qkv_views(const Tensor& qkv, const Step& st) const {
  const size_t h = static_cast<size_t>(config().hidden_size), t = static_cast<size_t>(st.t);
  if (params_->qkv_layout() == QkvLayout::fused) {
    // Columns [0, h), [h, 2h), [2h, 3h) of [t, 3h] rows: each view spans its last row's h values.
    const size_t span = t == 0 ? 0 : (t - 1) * 3 * h + h;
    return {qkv.slice(0, span), qkv.slice(h, span), qkv.slice(2 * h, span),
            static_cast<int64_t>(3 * h)};
  }
  const size_t block = qkv_block_stride();
  return {qkv.slice(0, t * h), qkv.slice(block, t * h), qkv.slice(2 * block, t * h), 0};
}

AttentionForwardParams Model::attention_forward_params(const Step& st, int64_t l) const {
  const Arena::Layer& act = arena_->layers[static_cast<size_t>(l)];
  const BertConfig& c = config();
  const QkvViews qkv = qkv_views(act.qkv, st);
  return {.q = qkv.q,
          .k = qkv.k,
          .v = qkv.v,
          .cu_seqlens = arena_->cu_seqlens,
          .out = act.context,
          .softmax_lse = act.softmax_lse,
          .saved = act.attention_saved,
          .dropout = st.mask(dropout_site(static_cast<int>(l), DropoutSiteKind::attention_probs),
                             c.attention_probs_dropout_prob),
          .tokens = st.t,
          .num_sequences = st.s,
          .heads = c.num_attention_heads,
          .head_dim = c.head_dim(),
          .max_seqlen = st.max_seqlen,
          .scale = attention_scale(),
          .qkv_row_stride = qkv.row_stride};
}

float Model::attention_scale() const {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(config().head_dim())));
}

// Both heads (MLM at the masked positions, NSP on each sequence's first token) and their
// losses. The loss gradients (of loss_scale * mean loss) land in place in the logits buffers.
void Model::heads_forward(const Step& st, float loss_scale) {
  params_->ops().fill_zero(arena_->stats);
  if (st.p > 0) mlm_head_forward(st, loss_scale);
  nsp_head_forward(st, loss_scale);
}

void Model::mlm_head_forward(const Step& st, float loss_scale) {
  Ops& ops = params_->ops();
  const Arena& a = *arena_;
  const ParameterIndex& ix = params_->index();
  const BertConfig& c = config();
  const int64_t p = st.p, h = c.hidden_size;
  ops.gather_rows({a.hidden.back(), a.masked_positions, a.mlm_gathered, p, h});
  ops.linear_forward(dense(a.mlm_gathered, weight(ix.mlm_transform_kernel),
                           weight(ix.mlm_transform_bias), a.mlm_act, p, h, h, hidden_activation(c),
                           a.mlm_pre));
  ops.layer_norm_forward(residual_norm(*params_, a.mlm_act, {}, {}, ix.mlm_layer_norm_gamma,
                                       ix.mlm_layer_norm_beta, a.mlm_norm, a.mlm_out, {}, p));
  ops.linear_forward({.input = a.mlm_out,
                      .weight = weight(ix.word_embeddings),
                      .bias = weight(ix.mlm_output_bias),
                      .out = a.mlm_logits,
                      .m = p,
                      .n = c.padded_vocab_size(),
                      .k = h,
                      .weight_transposed = true});
  ops.cross_entropy({.logits = a.mlm_logits,
                     .labels = a.masked_labels,
                     .d_logits = a.mlm_logits,
                     .stats = a.stats.slice(0, 2),
                     .rows = p,
                     .classes = c.vocab_size,
                     .row_stride = c.padded_vocab_size(),
                     .grad_scale = loss_scale / static_cast<float>(p)});
}

void Model::nsp_head_forward(const Step& st, float loss_scale) {
  Ops& ops = params_->ops();
  const Arena& a = *arena_;
  const ParameterIndex& ix = params_->index();
  const int64_t s = st.s, h = config().hidden_size;
  ops.gather_rows({a.hidden.back(), a.first_tokens, a.pooler_in, s, h});
  ops.linear_forward(dense(a.pooler_in, weight(ix.pooler_kernel), weight(ix.pooler_bias), a.pooled,
                           s, h, h, Activation::tanh, a.pooler_pre));
  ops.linear_forward({.input = a.pooled,
                      .weight = weight(ix.nsp_output_weights),
                      .bias = weight(ix.nsp_output_bias),
                      .out = a.nsp_logits,
                      .m = s,
                      .n = 2,
                      .k = h,
                      .weight_transposed = true});
  ops.cross_entropy({.logits = a.nsp_logits,
                     .labels = a.nsp_labels,
                     .d_logits = a.nsp_logits,
                     .stats = a.stats.slice(2, 2),
                     .rows = s,
                     .classes = 2,
                     .row_stride = 2,
                     .grad_scale = loss_scale / static_cast<float>(s)});
}

// ---- backward -----------------------------------------------------------------------------------

StepResult Model::forward_backward(const Batch& batch, const DropoutKey& dropout_key,
                                   const std::function<void(size_t)>& on_grad_ready,
                                   const ForwardBackwardOptions& options) {
  check_fits(batch);
  if (options.zero_grads) params_->zero_grad();
  upload(batch);
  const Step st(batch, options.dropout ? &dropout_key : nullptr);
  // A backend that records steps replays the ops of a shape it has seen; a step that reports
  // its gradients to a caller on the way runs op by op.
  Ops& ops = params_->ops();
  const bool recorded = ops.preferences().record_steps && !on_grad_ready;
  const StepShape shape{this, st.t, st.s, st.p, st.max_seqlen, options.dropout, options.loss_scale};
  if (recorded && ops.begin_step(shape, dropout_key.seed, dropout_key.step)) return step_result(st);
  try {
    forward(st);
    heads_forward(st, options.loss_scale);
    GradientPrefix prefix(*params_, on_grad_ready);
    heads_backward(st, prefix);
    // Last layer first; d_hidden holds d(output of the current layer).
    for (int64_t l = config().num_hidden_layers - 1; l >= 0; --l) layer_backward(st, prefix, l);
    embeddings_backward(st, prefix);
  } catch (...) {
    if (recorded) ops.end_step(false);
    throw;
  }
  if (recorded) ops.end_step(true);
  return step_result(st);
}

// The MLM and NSP heads, into d_hidden (d(output of the last layer)).
void Model::heads_backward(const Step& st, GradientPrefix& prefix) {
  Ops& ops = params_->ops();
  const Arena& a = *arena_;
  const ParameterIndex& ix = params_->index();
  const BertConfig& c = config();
  const int64_t s = st.s, p = st.p, h = c.hidden_size;
  ops.fill_zero(a.d_hidden.slice(0, static_cast<size_t>(st.t * h)));
  if (p > 0) {
    ops.linear_backward({.d_out = a.mlm_logits,
                         .input = a.mlm_out,
                         .weight = weight(ix.word_embeddings),
                         .d_input = a.d_mlm_out,
                         .d_weight = grad(ix.word_embeddings),
                         .d_bias = grad(ix.mlm_output_bias),
                         .m = p,
                         .n = c.padded_vocab_size(),
                         .k = h,
                         .weight_transposed = true});
    prefix.finish_through(ix.mlm_output_bias);
    ops.layer_norm_backward(residual_norm_backward(*params_, a.d_mlm_out, ix.mlm_layer_norm_gamma,
                                                   ix.mlm_layer_norm_beta, a.mlm_norm, a.d_mlm_act,
                                                   {}, {}, {}, p));
    prefix.finish_through(ix.mlm_layer_norm_beta);
    ops.linear_backward({.d_out = a.d_mlm_act,
                         .pre_activation = a.mlm_pre,
                         .activation = hidden_activation(c),
                         .input = a.mlm_gathered,
                         .weight = weight(ix.mlm_transform_kernel),
                         .d_input = a.d_mlm_gathered,
                         .d_weight = grad(ix.mlm_transform_kernel),
                         .d_bias = grad(ix.mlm_transform_bias),
                         .m = p,
                         .n = h,
                         .k = h});
    ops.scatter_add_rows({a.d_mlm_gathered, a.masked_positions, a.d_hidden, p, h});
  }
  prefix.finish_through(ix.mlm_transform_bias);
  ops.linear_backward({.d_out = a.nsp_logits,
                       .input = a.pooled,
                       .weight = weight(ix.nsp_output_weights),
                       .d_input = a.d_pooled,
                       .d_weight = grad(ix.nsp_output_weights),
                       .d_bias = grad(ix.nsp_output_bias),
                       .m = s,
                       .n = 2,
                       .k = h,
                       .weight_transposed = true});
  prefix.finish_through(ix.nsp_output_bias);
  ops.linear_backward({.d_out = a.d_pooled,
                       .out = a.pooled,
                       .activation = Activation::tanh,
                       .input = a.pooler_in,
                       .weight = weight(ix.pooler_kernel),
                       .d_input = a.d_pooler_in,
                       .d_weight = grad(ix.pooler_kernel),
                       .d_bias = grad(ix.pooler_bias),
                       .m = s,
                       .n = h,
                       .k = h});
  ops.scatter_add_rows({a.d_pooler_in, a.first_tokens, a.d_hidden, s, h});
  prefix.finish_through(ix.pooler_bias);
}

// Layer l: d_hidden goes in as d(layer output) and comes out as d(layer input).
void Model::layer_backward(const Step& st, GradientPrefix& prefix, int64_t l) {
  Ops& ops = params_->ops();
  const Arena& a = *arena_;
  const Arena::Layer& act = a.layers[static_cast<size_t>(l)];
  const LayerParameters& lp = params_->index().layers[static_cast<size_t>(l)];
  const BertConfig& c = config();
  const int64_t t = st.t, h = c.hidden_size, f = c.intermediate_size;
  const int layer = static_cast<int>(l);
  const double p_hidden = c.hidden_dropout_prob;
  ops.layer_norm_backward(residual_norm_backward(
      *params_, a.d_hidden, lp.output_layer_norm_gamma, lp.output_layer_norm_beta, act.output_norm,
      a.d_branch, a.d_x1, grad(lp.output_bias),
      st.mask(dropout_site(layer, DropoutSiteKind::ffn_output), p_hidden), t));
  prefix.finish_through(lp.output_bias);
  // FFN2's data gradient goes through the GELU into FFN1's pre-activation in the same call; FFN1's
  // bias gradient is taken there (its column sums) or beside FFN1's weight gradient, as the
  // backend prefers.
  const bool bias_with_ffn1 = params_->ops().preferences().ffn1_bias_grad_with_weight_grad;
  ops.linear_backward({.d_out = a.d_branch,
                       .input = act.intermediate,
                       .weight = weight(lp.output_kernel),
                       .d_input = a.d_intermediate,
                       .d_weight = grad(lp.output_kernel),
                       .m = t,
                       .n = h,
                       .k = f,
                       .input_activation = hidden_activation(c),
                       .input_pre_activation = act.intermediate_pre,
                       .d_input_bias = bias_with_ffn1 ? Tensor{} : grad(lp.intermediate_bias)});
  prefix.finish_through(lp.output_kernel);
  // d_intermediate is already the gradient of the pre-activation; d_x1 adds to the residual's.
  LinearBackwardParams ffn1 =
      dense_backward(a.d_intermediate, act.attention_out, weight(lp.intermediate_kernel), a.d_x1,
                     grad(lp.intermediate_kernel),
                     bias_with_ffn1 ? grad(lp.intermediate_bias) : Tensor{}, t, f, h);
  ffn1.accumulate_d_input = true;
  ops.linear_backward(ffn1);
  prefix.finish_through(lp.intermediate_bias);
  // d_hidden is consumed: it becomes d(layer input).
  ops.layer_norm_backward(residual_norm_backward(
      *params_, a.d_x1, lp.attention_layer_norm_gamma, lp.attention_layer_norm_beta,
      act.attention_norm, a.d_branch, a.d_hidden, grad(lp.attention_output_bias),
      st.mask(dropout_site(layer, DropoutSiteKind::attention_output), p_hidden), t));
  prefix.finish_through(lp.attention_output_bias);
  ops.linear_backward(dense_backward(a.d_branch, act.context, weight(lp.attention_output_kernel),
                                     a.d_context, grad(lp.attention_output_kernel), {}, t, h, h));
  prefix.finish_through(lp.attention_output_kernel);
  ops.attention_backward(attention_backward_params(st, l));
  qkv_backward(st, l);
  prefix.finish_through(lp.qkv_bias + 2);
}

AttentionBackwardParams Model::attention_backward_params(const Step& st, int64_t l) const {
  const AttentionForwardParams fwd = attention_forward_params(st, l);
  const QkvViews d_qkv = qkv_views(arena_->d_qkv, st);
  return {.q = fwd.q,
          .k = fwd.k,
          .v = fwd.v,
          .out = fwd.out,
          .d_out = arena_->d_context,
          .softmax_lse = fwd.softmax_lse,
          .cu_seqlens = fwd.cu_seqlens,
          .saved = fwd.saved,
          .d_q = d_qkv.q,
          .d_k = d_qkv.k,
          .d_v = d_qkv.v,
          .dropout = fwd.dropout,
          .tokens = fwd.tokens,
          .num_sequences = fwd.num_sequences,
          .heads = fwd.heads,
          .head_dim = fwd.head_dim,
          .max_seqlen = fwd.max_seqlen,
          .scale = fwd.scale,
          .qkv_row_stride = fwd.qkv_row_stride};
}

void Model::qkv_backward(const Step& st, int64_t l) {
  const LayerParameters& lp = params_->index().layers[static_cast<size_t>(l)];
  const int64_t h = config().hidden_size;
  LinearBackwardParams p{.d_out = arena_->d_qkv,
                         .input = arena_->hidden[l],
                         .weight = params_->compute_span(lp.qkv_kernel, lp.qkv_kernel + 2),
                         .d_input = arena_->d_hidden,
                         .d_weight = params_->grad_span(lp.qkv_kernel, lp.qkv_kernel + 2),
                         .d_bias = params_->grad_span(lp.qkv_bias, lp.qkv_bias + 2),
                         .m = st.t,
                         .n = h,
                         .k = h,
                         .accumulate_d_input = true};
  if (params_->qkv_layout() == QkvLayout::fused) {
    // One K = 3 * hidden data gradient, one weight gradient with its [3 * hidden] bias gradient.
    p.n = 3 * h;
    p.weight_transposed = true;
  } else {
    p.batch = 3;
    p.weight_stride = params_->stride(lp.qkv_kernel);
    p.bias_stride = params_->stride(lp.qkv_bias);
    p.out_stride = qkv_block_stride();
  }
  params_->ops().linear_backward(p);
}

// The embeddings and their layer norm: the last gradients, so the whole buffer is final.
void Model::embeddings_backward(const Step& st, GradientPrefix& prefix) {
  const Arena& a = *arena_;
  const ParameterIndex& ix = params_->index();
  const BertConfig& c = config();
  params_->ops().embedding_backward(
      {.d_out = a.d_hidden,
       .input_ids = a.input_ids,
       .position_ids = a.position_ids,
       .segment_ids = a.segment_ids,
       .ln_input = a.embedding_norm.ln_input,
       .mean = a.embedding_norm.mean,
       .rstd = a.embedding_norm.rstd,
       .gamma = weight(ix.embedding_layer_norm_gamma),
       .d_word = grad(ix.word_embeddings),
       .d_position = grad(ix.position_embeddings),
       .d_token_type = grad(ix.token_type_embeddings),
       .d_gamma = grad(ix.embedding_layer_norm_gamma),
       .d_beta = grad(ix.embedding_layer_norm_beta),
       .dropout = st.mask(kEmbeddingDropoutSite, c.hidden_dropout_prob),
       .tokens = st.t,
       .hidden = c.hidden_size});
  prefix.finish_through(params_->infos().size() - 1);
}

// ---- results ------------------------------------------------------------------------------------

StepResult Model::step_result(const Step& st) {
  float stats[4];
  params_->ops().copy_to_host(stats, arena_->stats, sizeof(stats));
  StepResult result;
  result.mlm_total = st.p;
  result.nsp_total = st.s;
  result.mlm_loss = st.p > 0 ? stats[0] / static_cast<double>(st.p) : 0.0;
  result.nsp_loss = stats[2] / static_cast<double>(st.s);
  result.total_loss = result.mlm_loss + result.nsp_loss;
  result.mlm_correct = static_cast<int64_t>(stats[1]);
  result.nsp_correct = static_cast<int64_t>(stats[3]);
  return result;
}

EvalResult Model::evaluate(const Batch& batch) {
  check_fits(batch);
  upload(batch);
  const Step st(batch, nullptr);
  forward(st);
  heads_forward(st, 1.0f);
  float stats[4];
  params_->ops().copy_to_host(stats, arena_->stats, sizeof(stats));
  EvalResult r;
  r.mlm_total = st.p;
  r.mlm_correct = static_cast<int64_t>(stats[1]);
  r.mlm_loss_sum = stats[0];
  r.nsp_total = st.s;
  r.nsp_correct = static_cast<int64_t>(stats[3]);
  r.nsp_loss_sum = stats[2];
  return r;
}

std::vector<float> Model::encode(const Batch& batch) {
  check_fits(batch);
  upload(batch);
  forward(Step(batch, nullptr));
  const size_t n = batch.num_tokens() * static_cast<size_t>(config().hidden_size);
  std::vector<float> out(n);
  if (params_->ops().compute_dtype() != DType::f32) {
    throw std::runtime_error("Model::encode: reading back non-f32 activations is not supported");
  }
  params_->ops().copy_to_host(out.data(), arena_->hidden.back(), n * sizeof(float));
  return out;
}

}  // namespace mlbert::bert
