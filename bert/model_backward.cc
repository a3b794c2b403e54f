// Model's backward as a sequence of Ops calls, one statement per op, in the flat parameter order:
// the heads, each encoder layer from the last, the embeddings; each finished tensor's gradient is
// reported through the GradientPrefix.
#include "bert/model.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "bert/model_parts.h"

namespace mlbert::bert {

using namespace model_detail;

// ---- backward -----------------------------------------------------------------------------------

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
  const auto [ops, a, act, lp, c, t, h, f, layer, p_hidden] = layer_scope(st, l);
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

}  // namespace mlbert::bert
