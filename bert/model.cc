// Model: BertForPreTraining forward and backward as a sequence of Ops calls.
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

}  // namespace

struct Model::Arena {
  struct Layer {
    Tensor qkv, context, softmax_lse;
    Tensor attention_saved;  // what the backend keeps for the attention backward (may be empty)
    Tensor attention_ln_input, attention_mean, attention_rstd, attention_out;
    Tensor intermediate_pre, intermediate;
    Tensor output_ln_input, output_mean, output_rstd;
  };
  ArenaCarver compute, f32, i32;
  // Inputs.
  Tensor input_ids, segment_ids, position_ids, cu_seqlens, masked_positions, masked_labels,
      first_tokens, nsp_labels;
  // Forward activations. hidden[l] is the input of layer l; hidden[L] the encoder output.
  std::vector<Tensor> hidden;
  Tensor embedding_ln_input, embedding_mean, embedding_rstd;
  std::vector<Layer> layers;
  Tensor linear_scratch;  // the attention-output and FFN-output GEMM results before bias
  Tensor mlm_gathered, mlm_pre, mlm_act, mlm_ln_input, mlm_mean, mlm_rstd, mlm_out, mlm_logits;
  Tensor pooler_in, pooler_pre, pooled, nsp_logits;
  Tensor stats;  // f32 [4]: mlm loss sum, mlm correct, nsp loss sum, nsp correct
  // Backward scratch.
  Tensor d_hidden, d_x1, d_branch, d_context, d_qkv, d_intermediate;
  Tensor d_mlm_out, d_mlm_act, d_mlm_gathered, d_pooled, d_pooler_in;

  Arena(DType dtype) : compute(dtype), f32(DType::f32), i32(DType::i32) {}

  // `attention_saved_bytes`: Ops::attention_saved_bytes at the limits.
  void carve(const BertConfig& c, const ModelLimits& lim, size_t attention_saved_bytes) {
    const size_t t = lim.max_tokens, s = lim.max_sequences, p = lim.max_masked;
    const size_t h = static_cast<size_t>(c.hidden_size),
                 f = static_cast<size_t>(c.intermediate_size);
    const size_t v = static_cast<size_t>(c.padded_vocab_size()),
                 heads = static_cast<size_t>(c.num_attention_heads);
    input_ids = i32.take(t);
    segment_ids = i32.take(t);
    position_ids = i32.take(t);
    cu_seqlens = i32.take(s + 1);
    masked_positions = i32.take(p);
    masked_labels = i32.take(p);
    first_tokens = i32.take(s);
    nsp_labels = i32.take(s);
    hidden.clear();
    for (int64_t l = 0; l <= c.num_hidden_layers; ++l) hidden.push_back(compute.take(t * h));
    embedding_ln_input = compute.take(t * h);
    embedding_mean = f32.take(t);
    embedding_rstd = f32.take(t);
    layers.assign(static_cast<size_t>(c.num_hidden_layers), Layer{});
    for (Layer& layer : layers) {
      layer.qkv = compute.take(3 * t * h);
      layer.context = compute.take(t * h);
      layer.softmax_lse = f32.take(heads * t);
      if (attention_saved_bytes > 0)
        layer.attention_saved = i32.take((attention_saved_bytes + 3) / 4);
      layer.attention_ln_input = compute.take(t * h);
      layer.attention_mean = f32.take(t);
      layer.attention_rstd = f32.take(t);
      layer.attention_out = compute.take(t * h);
      layer.intermediate_pre = compute.take(t * f);
      layer.intermediate = compute.take(t * f);
      layer.output_ln_input = compute.take(t * h);
      layer.output_mean = f32.take(t);
      layer.output_rstd = f32.take(t);
    }
    linear_scratch = compute.take(t * h);
    mlm_gathered = compute.take(p * h);
    mlm_pre = compute.take(p * h);
    mlm_act = compute.take(p * h);
    mlm_ln_input = compute.take(p * h);
    mlm_mean = f32.take(p);
    mlm_rstd = f32.take(p);
    mlm_out = compute.take(p * h);
    mlm_logits = compute.take(p * v);
    pooler_in = compute.take(s * h);
    pooler_pre = compute.take(s * h);
    pooled = compute.take(s * h);
    nsp_logits = compute.take(s * 2);
    stats = f32.take(4);
    d_hidden = compute.take(t * h);
    d_x1 = compute.take(t * h);
    d_branch = compute.take(t * h);
    d_context = compute.take(t * h);
    d_qkv = compute.take(3 * t * h);
    d_intermediate = compute.take(t * f);
    d_mlm_out = compute.take(p * h);
    d_mlm_act = compute.take(p * h);
    d_mlm_gathered = compute.take(p * h);
    d_pooled = compute.take(s * h);
    d_pooler_in = compute.take(s * h);
  }
};

Model::Model(ParameterStore& params, ModelLimits limits) : params_(&params), limits_(limits) {
  if (limits_.max_tokens == 0 || limits_.max_sequences == 0) {
    throw std::invalid_argument("ModelLimits: max_tokens and max_sequences must be positive");
  }
  if (limits_.max_seqlen <= 0 || limits_.max_seqlen > params.config().max_position_embeddings) {
    throw std::invalid_argument("ModelLimits: max_seqlen must be in [1, max_position_embeddings]");
  }
  arena_ = std::make_unique<Arena>(params.ops().compute_dtype());
  // No attention dropout: no keep bits to carry from forward to backward.
  const size_t saved = params.config().attention_probs_dropout_prob > 0
                           ? params.ops().attention_saved_bytes(
                                 static_cast<int64_t>(limits_.max_tokens),
                                 static_cast<int64_t>(limits_.max_sequences),
                                 params.config().num_attention_heads, limits_.max_seqlen)
                           : 0;
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

void Model::forward(const Batch& batch, const DropoutKey* key) {
  Ops& ops = params_->ops();
  Arena& a = *arena_;
  const BertConfig& c = config();
  const ParameterIndex& ix = params_->index();
  ParameterStore& P = *params_;
  const int64_t t = static_cast<int64_t>(batch.num_tokens());
  const int64_t s = static_cast<int64_t>(batch.num_sequences());
  const int64_t h = c.hidden_size, f = c.intermediate_size;
  const float eps = static_cast<float>(c.layer_norm_eps);
  auto mask = [&](uint32_t site, double p) {
    return key ? make_dropout_mask(key->seed, key->step, site, p) : DropoutMask{};
  };

  EmbeddingForwardParams emb;
  emb.input_ids = a.input_ids;
  emb.position_ids = a.position_ids;
  emb.segment_ids = a.segment_ids;
  emb.word = P.compute(ix.word_embeddings);
  emb.position = P.compute(ix.position_embeddings);
  emb.token_type = P.compute(ix.token_type_embeddings);
  emb.gamma = P.compute(ix.embedding_layer_norm_gamma);
  emb.beta = P.compute(ix.embedding_layer_norm_beta);
  emb.out = a.hidden[0];
  emb.ln_input = a.embedding_ln_input;
  emb.mean = a.embedding_mean;
  emb.rstd = a.embedding_rstd;
  emb.dropout = mask(kEmbeddingDropoutSite, c.hidden_dropout_prob);
  emb.tokens = t;
  emb.hidden = h;
  emb.eps = eps;
  ops.embedding_forward(emb);

  const size_t t_stride = limits_.max_tokens * static_cast<size_t>(h);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerParameters& lp = ix.layers[static_cast<size_t>(l)];
    Arena::Layer& act = a.layers[static_cast<size_t>(l)];
    const int layer = static_cast<int>(l);

    LinearForwardParams qkv;
    qkv.input = a.hidden[l];
    const size_t kernel0 = P.infos()[lp.qkv_kernel].offset, bias0 = P.infos()[lp.qkv_bias].offset;
    const size_t kernel_stride = P.infos()[lp.qkv_kernel + 1].offset - kernel0;
    const size_t bias_stride = P.infos()[lp.qkv_bias + 1].offset - bias0;
    qkv.weight = P.compute().slice(kernel0, 2 * kernel_stride + static_cast<size_t>(h * h));
    qkv.bias = P.compute().slice(bias0, 2 * bias_stride + static_cast<size_t>(h));
    qkv.out = act.qkv;
    qkv.m = t;
    qkv.n = h;
    qkv.k = h;
    qkv.batch = 3;
    qkv.weight_stride = kernel_stride;
    qkv.bias_stride = bias_stride;
    qkv.out_stride = t_stride;
    ops.linear_forward(qkv);

    AttentionForwardParams attn;
    attn.q = act.qkv.slice(0, t * h);
    attn.k = act.qkv.slice(t_stride, t * h);
    attn.v = act.qkv.slice(2 * t_stride, t * h);
    attn.cu_seqlens = a.cu_seqlens;
    attn.out = act.context;
    attn.softmax_lse = act.softmax_lse;
    attn.saved = act.attention_saved;
    attn.dropout =
        mask(dropout_site(layer, DropoutSiteKind::attention_probs), c.attention_probs_dropout_prob);
    attn.tokens = t;
    attn.num_sequences = s;
    attn.heads = c.num_attention_heads;
    attn.head_dim = c.head_dim();
    attn.max_seqlen = batch.max_seqlen;
    attn.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim())));
    ops.attention_forward(attn);

    LinearForwardParams proj;
    proj.input = act.context;
    proj.weight = P.compute(lp.attention_output_kernel);
    proj.out = a.linear_scratch;
    proj.m = t;
    proj.n = h;
    proj.k = h;
    ops.linear_forward(proj);

    LayerNormForwardParams ln1;
    ln1.x = a.linear_scratch;
    ln1.bias = P.compute(lp.attention_output_bias);
    ln1.residual = a.hidden[l];
    ln1.gamma = P.compute(lp.attention_layer_norm_gamma);
    ln1.beta = P.compute(lp.attention_layer_norm_beta);
    ln1.out = act.attention_out;
    ln1.ln_input = act.attention_ln_input;
    ln1.mean = act.attention_mean;
    ln1.rstd = act.attention_rstd;
    ln1.dropout =
        mask(dropout_site(layer, DropoutSiteKind::attention_output), c.hidden_dropout_prob);
    ln1.rows = t;
    ln1.width = h;
    ln1.eps = eps;
    ops.layer_norm_forward(ln1);

    LinearForwardParams ffn1;
    ffn1.input = act.attention_out;
    ffn1.weight = P.compute(lp.intermediate_kernel);
    ffn1.bias = P.compute(lp.intermediate_bias);
    ffn1.out = act.intermediate;
    ffn1.pre_activation = act.intermediate_pre;
    ffn1.activation = hidden_activation(c);
    ffn1.m = t;
    ffn1.n = f;
    ffn1.k = h;
    ops.linear_forward(ffn1);

    LinearForwardParams ffn2;
    ffn2.input = act.intermediate;
    ffn2.weight = P.compute(lp.output_kernel);
    ffn2.out = a.linear_scratch;
    ffn2.m = t;
    ffn2.n = h;
    ffn2.k = f;
    ops.linear_forward(ffn2);

    LayerNormForwardParams ln2;
    ln2.x = a.linear_scratch;
    ln2.bias = P.compute(lp.output_bias);
    ln2.residual = act.attention_out;
    ln2.gamma = P.compute(lp.output_layer_norm_gamma);
    ln2.beta = P.compute(lp.output_layer_norm_beta);
    ln2.out = a.hidden[l + 1];
    ln2.ln_input = act.output_ln_input;
    ln2.mean = act.output_mean;
    ln2.rstd = act.output_rstd;
    ln2.dropout = mask(dropout_site(layer, DropoutSiteKind::ffn_output), c.hidden_dropout_prob);
    ln2.rows = t;
    ln2.width = h;
    ln2.eps = eps;
    ops.layer_norm_forward(ln2);
  }
}

// Both heads (MLM at the masked positions, NSP on each sequence's first token) and their
// losses. The loss gradients (of loss_scale * mean loss) land in place in the logits buffers.
void Model::heads_forward(const Batch& batch, float loss_scale) {
  Ops& ops = params_->ops();
  Arena& a = *arena_;
  const BertConfig& c = config();
  ParameterStore& P = *params_;
  const ParameterIndex& ix = P.index();
  const int64_t s = static_cast<int64_t>(batch.num_sequences());
  const int64_t p = static_cast<int64_t>(batch.num_masked());
  const int64_t h = c.hidden_size;
  ops.fill_zero(a.stats);
  if (p > 0) {
    ops.gather_rows(GatherRowsParams{a.hidden.back(), a.masked_positions, a.mlm_gathered, p, h});
    LinearForwardParams transform;
    transform.input = a.mlm_gathered;
    transform.weight = P.compute(ix.mlm_transform_kernel);
    transform.bias = P.compute(ix.mlm_transform_bias);
    transform.out = a.mlm_act;
    transform.pre_activation = a.mlm_pre;
    transform.activation = hidden_activation(c);
    transform.m = p;
    transform.n = h;
    transform.k = h;
    ops.linear_forward(transform);
    LayerNormForwardParams ln;
    ln.x = a.mlm_act;
    ln.gamma = P.compute(ix.mlm_layer_norm_gamma);
    ln.beta = P.compute(ix.mlm_layer_norm_beta);
    ln.out = a.mlm_out;
    ln.ln_input = a.mlm_ln_input;
    ln.mean = a.mlm_mean;
    ln.rstd = a.mlm_rstd;
    ln.rows = p;
    ln.width = h;
    ln.eps = static_cast<float>(c.layer_norm_eps);
    ops.layer_norm_forward(ln);
    LinearForwardParams decoder;
    decoder.input = a.mlm_out;
    decoder.weight = P.compute(ix.word_embeddings);
    decoder.weight_transposed = true;
    decoder.bias = P.compute(ix.mlm_output_bias);
    decoder.out = a.mlm_logits;
    decoder.m = p;
    decoder.n = c.padded_vocab_size();
    decoder.k = h;
    ops.linear_forward(decoder);
    CrossEntropyParams ce;
    ce.logits = a.mlm_logits;
    ce.d_logits = a.mlm_logits;
    ce.labels = a.masked_labels;
    ce.stats = a.stats.slice(0, 2);
    ce.rows = p;
    ce.classes = c.vocab_size;
    ce.row_stride = c.padded_vocab_size();
    ce.grad_scale = loss_scale / static_cast<float>(p);
    ops.cross_entropy(ce);
  }
  ops.gather_rows(GatherRowsParams{a.hidden.back(), a.first_tokens, a.pooler_in, s, h});
  LinearForwardParams pooler;
  pooler.input = a.pooler_in;
  pooler.weight = P.compute(ix.pooler_kernel);
  pooler.bias = P.compute(ix.pooler_bias);
  pooler.out = a.pooled;
  pooler.pre_activation = a.pooler_pre;
  pooler.activation = Activation::tanh;
  pooler.m = s;
  pooler.n = h;
  pooler.k = h;
  ops.linear_forward(pooler);
  LinearForwardParams nsp;
  nsp.input = a.pooled;
  nsp.weight = P.compute(ix.nsp_output_weights);
  nsp.weight_transposed = true;
  nsp.bias = P.compute(ix.nsp_output_bias);
  nsp.out = a.nsp_logits;
  nsp.m = s;
  nsp.n = 2;
  nsp.k = h;
  ops.linear_forward(nsp);
  CrossEntropyParams ce;
  ce.logits = a.nsp_logits;
  ce.d_logits = a.nsp_logits;
  ce.labels = a.nsp_labels;
  ce.stats = a.stats.slice(2, 2);
  ce.rows = s;
  ce.classes = 2;
  ce.row_stride = 2;
  ce.grad_scale = loss_scale / static_cast<float>(s);
  ops.cross_entropy(ce);
}

// What the backward phases share: the micro-batch's sizes, its dropout masks, and the report of
// the gradient prefix that is final.
struct Model::BackwardPass {
  BackwardPass(const Model& model, const Batch& batch, const DropoutKey& dropout_key,
               const std::function<void(size_t)>& on_grad_ready,
               const ForwardBackwardOptions& options)
      : batch(batch),
        key(options.dropout ? &dropout_key : nullptr),
        on_grad_ready(on_grad_ready),
        infos(model.params_->infos()),
        flat_size(model.params_->flat_size()),
        t(static_cast<int64_t>(batch.num_tokens())),
        s(static_cast<int64_t>(batch.num_sequences())),
        p(static_cast<int64_t>(batch.num_masked())),
        h(model.config().hidden_size),
        f(model.config().intermediate_size),
        v_pad(model.config().padded_vocab_size()),
        t_stride(model.limits_.max_tokens * static_cast<size_t>(h)) {}

  DropoutMask mask(uint32_t site, double prob) const {
    return key ? make_dropout_mask(key->seed, key->step, site, prob) : DropoutMask{};
  }
  // Reports the prefix of the flat gradient buffer that holds every tensor before `last_index + 1`.
  void finish_through(size_t last_index) {
    if (last_index + 1 <= finished) return;
    finished = last_index + 1;
    if (on_grad_ready) on_grad_ready(finished < infos.size() ? infos[finished].offset : flat_size);
  }

  const Batch& batch;
  const DropoutKey* key;  // null: no dropout
  const std::function<void(size_t)>& on_grad_ready;
  const std::vector<ParameterInfo>& infos;
  const size_t flat_size;
  const int64_t t, s, p;  // tokens, sequences, masked predictions
  const int64_t h, f, v_pad;
  const size_t t_stride;  // elements between the q, k and v blocks of the qkv activations
  size_t finished = 0;
};

StepResult Model::forward_backward(const Batch& batch, const DropoutKey& dropout_key,
                                   const std::function<void(size_t)>& on_grad_ready,
                                   const ForwardBackwardOptions& options) {
  check_fits(batch);
  if (options.zero_grads) params_->zero_grad();
  upload(batch);
  forward(batch, options.dropout ? &dropout_key : nullptr);
  heads_forward(batch, options.loss_scale);

  BackwardPass pass(*this, batch, dropout_key, on_grad_ready, options);
  heads_backward(pass);
  // Last layer first; d_hidden holds d(output of the current layer).
  for (int64_t l = config().num_hidden_layers - 1; l >= 0; --l) layer_backward(pass, l);
  embeddings_backward(pass);
  return step_result(pass);
}

// The MLM and NSP heads, into d_hidden (d(output of the last layer)).
void Model::heads_backward(BackwardPass& pass) {
  Ops& ops = params_->ops();
  Arena& a = *arena_;
  ParameterStore& P = *params_;
  const ParameterIndex& ix = P.index();
  const BertConfig& c = config();
  const int64_t t = pass.t, s = pass.s, p = pass.p, h = pass.h, v_pad = pass.v_pad;
  ops.fill_zero(a.d_hidden.slice(0, t * h));
  if (p > 0) {
    LinearBackwardParams decoder;
    decoder.d_out = a.mlm_logits;
    decoder.input = a.mlm_out;
    decoder.weight = P.compute(ix.word_embeddings);
    decoder.weight_transposed = true;
    decoder.d_input = a.d_mlm_out;
    decoder.d_weight = P.grad(ix.word_embeddings);
    decoder.d_bias = P.grad(ix.mlm_output_bias);
    decoder.m = p;
    decoder.n = v_pad;
    decoder.k = h;
    ops.linear_backward(decoder);
  }
  pass.finish_through(ix.mlm_output_bias);
  if (p > 0) {
    LayerNormBackwardParams ln;
    ln.d_out = a.d_mlm_out;
    ln.ln_input = a.mlm_ln_input;
    ln.mean = a.mlm_mean;
    ln.rstd = a.mlm_rstd;
    ln.gamma = P.compute(ix.mlm_layer_norm_gamma);
    ln.d_x = a.d_mlm_act;
    ln.d_gamma = P.grad(ix.mlm_layer_norm_gamma);
    ln.d_beta = P.grad(ix.mlm_layer_norm_beta);
    ln.rows = p;
    ln.width = h;
    ops.layer_norm_backward(ln);
  }
  pass.finish_through(ix.mlm_layer_norm_beta);
  if (p > 0) {
    LinearBackwardParams transform;
    transform.d_out = a.d_mlm_act;
    transform.pre_activation = a.mlm_pre;
    transform.activation = hidden_activation(c);
    transform.input = a.mlm_gathered;
    transform.weight = P.compute(ix.mlm_transform_kernel);
    transform.d_input = a.d_mlm_gathered;
    transform.d_weight = P.grad(ix.mlm_transform_kernel);
    transform.d_bias = P.grad(ix.mlm_transform_bias);
    transform.m = p;
    transform.n = h;
    transform.k = h;
    ops.linear_backward(transform);
    ScatterAddRowsParams scatter{a.d_mlm_gathered, a.masked_positions, a.d_hidden, p, h};
    ops.scatter_add_rows(scatter);
  }
  pass.finish_through(ix.mlm_transform_bias);
  {
    LinearBackwardParams nsp;
    nsp.d_out = a.nsp_logits;
    nsp.input = a.pooled;
    nsp.weight = P.compute(ix.nsp_output_weights);
    nsp.weight_transposed = true;
    nsp.d_input = a.d_pooled;
    nsp.d_weight = P.grad(ix.nsp_output_weights);
    nsp.d_bias = P.grad(ix.nsp_output_bias);
    nsp.m = s;
    nsp.n = 2;
    nsp.k = h;
    ops.linear_backward(nsp);
    pass.finish_through(ix.nsp_output_bias);
    LinearBackwardParams pooler;
    pooler.d_out = a.d_pooled;
    pooler.out = a.pooled;
    pooler.activation = Activation::tanh;
    pooler.input = a.pooler_in;
    pooler.weight = P.compute(ix.pooler_kernel);
    pooler.d_input = a.d_pooler_in;
    pooler.d_weight = P.grad(ix.pooler_kernel);
    pooler.d_bias = P.grad(ix.pooler_bias);
    pooler.m = s;
    pooler.n = h;
    pooler.k = h;
    ops.linear_backward(pooler);
    ScatterAddRowsParams scatter{a.d_pooler_in, a.first_tokens, a.d_hidden, s, h};
    ops.scatter_add_rows(scatter);
    pass.finish_through(ix.pooler_bias);
  }
}

// Layer l: d_hidden goes in as d(layer output) and comes out as d(layer input).
void Model::layer_backward(BackwardPass& pass, int64_t l) {
  Ops& ops = params_->ops();
  Arena& a = *arena_;
  ParameterStore& P = *params_;
  const ParameterIndex& ix = P.index();
  const BertConfig& c = config();
  const std::vector<ParameterInfo>& infos = pass.infos;
  const int64_t t = pass.t, s = pass.s, h = pass.h, f = pass.f;
  const size_t t_stride = pass.t_stride;
  const LayerParameters& lp = ix.layers[static_cast<size_t>(l)];
  Arena::Layer& act = a.layers[static_cast<size_t>(l)];
  const int layer = static_cast<int>(l);

  LayerNormBackwardParams ln2;
  ln2.d_out = a.d_hidden;
  ln2.ln_input = act.output_ln_input;
  ln2.mean = act.output_mean;
  ln2.rstd = act.output_rstd;
  ln2.gamma = P.compute(lp.output_layer_norm_gamma);
  ln2.d_x = a.d_branch;
  ln2.d_residual = a.d_x1;
  ln2.d_gamma = P.grad(lp.output_layer_norm_gamma);
  ln2.d_beta = P.grad(lp.output_layer_norm_beta);
  ln2.d_bias = P.grad(lp.output_bias);
  ln2.dropout = pass.mask(dropout_site(layer, DropoutSiteKind::ffn_output), c.hidden_dropout_prob);
  ln2.rows = t;
  ln2.width = h;
  ops.layer_norm_backward(ln2);
  pass.finish_through(lp.output_bias);

  // FFN2's data gradient goes through the GELU into FFN1's pre-activation and bias gradient in
  // the same call (cuBLASLt's DGELU_BGRAD epilogue on GPUs).
  LinearBackwardParams ffn2;
  ffn2.d_out = a.d_branch;
  ffn2.input = act.intermediate;
  ffn2.weight = P.compute(lp.output_kernel);
  ffn2.d_input = a.d_intermediate;
  ffn2.d_weight = P.grad(lp.output_kernel);
  ffn2.input_activation = hidden_activation(c);
  ffn2.input_pre_activation = act.intermediate_pre;
  ffn2.d_input_bias = P.grad(lp.intermediate_bias);
  ffn2.m = t;
  ffn2.n = h;
  ffn2.k = f;
  ops.linear_backward(ffn2);
  pass.finish_through(lp.output_kernel);

  LinearBackwardParams ffn1;
  ffn1.d_out = a.d_intermediate;  // already the gradient of the pre-activation
  ffn1.input = act.attention_out;
  ffn1.weight = P.compute(lp.intermediate_kernel);
  ffn1.d_input = a.d_x1;
  ffn1.accumulate_d_input = true;
  ffn1.d_weight = P.grad(lp.intermediate_kernel);
  ffn1.m = t;
  ffn1.n = f;
  ffn1.k = h;
  ops.linear_backward(ffn1);
  pass.finish_through(lp.intermediate_bias);

  LayerNormBackwardParams ln1;
  ln1.d_out = a.d_x1;
  ln1.ln_input = act.attention_ln_input;
  ln1.mean = act.attention_mean;
  ln1.rstd = act.attention_rstd;
  ln1.gamma = P.compute(lp.attention_layer_norm_gamma);
  ln1.d_x = a.d_branch;
  ln1.d_residual = a.d_hidden;  // d_hidden is consumed: it becomes d(layer input)
  ln1.d_gamma = P.grad(lp.attention_layer_norm_gamma);
  ln1.d_beta = P.grad(lp.attention_layer_norm_beta);
  ln1.d_bias = P.grad(lp.attention_output_bias);
  ln1.dropout =
      pass.mask(dropout_site(layer, DropoutSiteKind::attention_output), c.hidden_dropout_prob);
  ln1.rows = t;
  ln1.width = h;
  ops.layer_norm_backward(ln1);
  pass.finish_through(lp.attention_output_bias);

  LinearBackwardParams proj;
  proj.d_out = a.d_branch;
  proj.input = act.context;
  proj.weight = P.compute(lp.attention_output_kernel);
  proj.d_input = a.d_context;
  proj.d_weight = P.grad(lp.attention_output_kernel);
  proj.m = t;
  proj.n = h;
  proj.k = h;
  ops.linear_backward(proj);
  pass.finish_through(lp.attention_output_kernel);

  AttentionBackwardParams attn;
  attn.q = act.qkv.slice(0, t * h);
  attn.k = act.qkv.slice(t_stride, t * h);
  attn.v = act.qkv.slice(2 * t_stride, t * h);
  attn.out = act.context;
  attn.d_out = a.d_context;
  attn.softmax_lse = act.softmax_lse;
  attn.saved = act.attention_saved;
  attn.cu_seqlens = a.cu_seqlens;
  attn.d_q = a.d_qkv.slice(0, t * h);
  attn.d_k = a.d_qkv.slice(t_stride, t * h);
  attn.d_v = a.d_qkv.slice(2 * t_stride, t * h);
  attn.dropout = pass.mask(dropout_site(layer, DropoutSiteKind::attention_probs),
                           c.attention_probs_dropout_prob);
  attn.tokens = t;
  attn.num_sequences = s;
  attn.heads = c.num_attention_heads;
  attn.head_dim = c.head_dim();
  attn.max_seqlen = pass.batch.max_seqlen;
  attn.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim())));
  ops.attention_backward(attn);

  const size_t kernel0 = infos[lp.qkv_kernel].offset, bias0 = infos[lp.qkv_bias].offset;
  const size_t kernel_stride = infos[lp.qkv_kernel + 1].offset - kernel0;
  const size_t bias_stride = infos[lp.qkv_bias + 1].offset - bias0;
  LinearBackwardParams qkv;
  qkv.d_out = a.d_qkv;
  qkv.input = a.hidden[l];
  qkv.weight = P.compute().slice(kernel0, 2 * kernel_stride + static_cast<size_t>(h * h));
  qkv.d_input = a.d_hidden;
  qkv.accumulate_d_input = true;
  qkv.d_weight = P.grad().slice(kernel0, 2 * kernel_stride + static_cast<size_t>(h * h));
  qkv.d_bias = P.grad().slice(bias0, 2 * bias_stride + static_cast<size_t>(h));
  qkv.m = t;
  qkv.n = h;
  qkv.k = h;
  qkv.batch = 3;
  qkv.weight_stride = kernel_stride;
  qkv.bias_stride = bias_stride;
  qkv.out_stride = t_stride;
  ops.linear_backward(qkv);
  pass.finish_through(lp.qkv_bias + 2);
}

// The embeddings and their layer norm: the last gradients, so the whole buffer is final.
void Model::embeddings_backward(BackwardPass& pass) {
  Ops& ops = params_->ops();
  Arena& a = *arena_;
  ParameterStore& P = *params_;
  const ParameterIndex& ix = P.index();
  const BertConfig& c = config();
  EmbeddingBackwardParams emb;
  emb.d_out = a.d_hidden;
  emb.input_ids = a.input_ids;
  emb.position_ids = a.position_ids;
  emb.segment_ids = a.segment_ids;
  emb.ln_input = a.embedding_ln_input;
  emb.mean = a.embedding_mean;
  emb.rstd = a.embedding_rstd;
  emb.gamma = P.compute(ix.embedding_layer_norm_gamma);
  emb.d_word = P.grad(ix.word_embeddings);
  emb.d_position = P.grad(ix.position_embeddings);
  emb.d_token_type = P.grad(ix.token_type_embeddings);
  emb.d_gamma = P.grad(ix.embedding_layer_norm_gamma);
  emb.d_beta = P.grad(ix.embedding_layer_norm_beta);
  emb.dropout = pass.mask(kEmbeddingDropoutSite, c.hidden_dropout_prob);
  emb.tokens = pass.t;
  emb.hidden = pass.h;
  ops.embedding_backward(emb);
  pass.finish_through(pass.infos.size() - 1);
}

StepResult Model::step_result(const BackwardPass& pass) {
  const int64_t s = pass.s, p = pass.p;
  float stats[4];
  params_->ops().copy_to_host(stats, arena_->stats, sizeof(stats));
  StepResult result;
  result.mlm_total = p;
  result.nsp_total = s;
  result.mlm_loss = p > 0 ? stats[0] / static_cast<double>(p) : 0.0;
  result.nsp_loss = stats[2] / static_cast<double>(s);
  result.total_loss = result.mlm_loss + result.nsp_loss;
  result.mlm_correct = static_cast<int64_t>(stats[1]);
  result.nsp_correct = static_cast<int64_t>(stats[3]);
  return result;
}

EvalResult Model::evaluate(const Batch& batch) {
  check_fits(batch);
  Ops& ops = params_->ops();
  Arena& a = *arena_;
  upload(batch);
  forward(batch, nullptr);
  heads_forward(batch, 1.0f);
  const int64_t s = static_cast<int64_t>(batch.num_sequences());
  const int64_t p = static_cast<int64_t>(batch.num_masked());
  float stats[4];
  ops.copy_to_host(stats, a.stats, sizeof(stats));
  EvalResult r;
  r.mlm_total = p;
  r.mlm_correct = static_cast<int64_t>(stats[1]);
  r.mlm_loss_sum = stats[0];
  r.nsp_total = s;
  r.nsp_correct = static_cast<int64_t>(stats[3]);
  r.nsp_loss_sum = stats[2];
  return r;
}

std::vector<float> Model::encode(const Batch& batch) {
  check_fits(batch);
  upload(batch);
  forward(batch, nullptr);
  const size_t n = batch.num_tokens() * static_cast<size_t>(config().hidden_size);
  std::vector<float> out(n);
  if (params_->ops().compute_dtype() != DType::f32) {
    throw std::runtime_error("Model::encode: reading back non-f32 activations is not supported");
  }
  params_->ops().copy_to_host(out.data(), arena_->hidden.back(), n * sizeof(float));
  return out;
}

}  // namespace mlbert::bert
