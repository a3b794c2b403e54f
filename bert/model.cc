// Model: construction of the arena, the checks and upload of a micro-batch, and the step's
// driver (forward, heads, backward; model_forward.cc and model_backward.cc hold the op sequences).
#include "bert/model.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "bert/model_parts.h"

namespace mlbert::bert {

using namespace model_detail;

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

// ---- one step ---------------------------------------------------------------------------------

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
