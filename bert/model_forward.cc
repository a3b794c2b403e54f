// Model's forward as a sequence of Ops calls, one statement per op: embeddings, each encoder
// layer, the MLM and NSP heads with their losses (whose gradients land in place in the logits).
#include "bert/model.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "bert/model_parts.h"

namespace mlbert::bert {

using namespace model_detail;

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

Model::LayerScope Model::layer_scope(const Step& st, int64_t l) const {
  const Arena& a = *arena_;
  const BertConfig& c = config();
  return {.ops = params_->ops(),
          .a = a,
          .act = a.layers[static_cast<size_t>(l)],
          .lp = params_->index().layers[static_cast<size_t>(l)],
          .c = c,
          .t = st.t,
          .h = c.hidden_size,
          .f = c.intermediate_size,
          .layer = static_cast<int>(l),
          .p_hidden = c.hidden_dropout_prob};
}

void Model::layer_forward(const Step& st, int64_t l) {
  const auto [ops, a, act, lp, c, t, h, f, layer, p_hidden] = layer_scope(st, l);
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

}  // namespace mlbert::bert
