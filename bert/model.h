// Model: BertForPreTraining (MLM + NSP) forward and backward on unpadded tokens, written once
// against Ops (bert/ops.h) so every backend runs the same sequence of ops.
//
// Design choice: all activations live in one arena allocated at construction for the largest step
// (ModelLimits); forward_backward never allocates. Gradients are accumulated into the parameter
// store's flat gradient buffer, in backward-finish order, and `on_grad_ready(n)` is called each
// time a further prefix [0, n) of that buffer is final, so a caller can clip and allreduce buckets
// while backward is still running.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bert/batch.h"
#include "bert/config.h"
#include "bert/ops.h"
#include "bert/parameters.h"

namespace mlbert::bert {

// The largest micro-batch the arena must hold. A batch over any limit is rejected with a message.
struct ModelLimits {
  size_t max_tokens = 0;  // total unpadded tokens in a micro-batch
  size_t max_sequences = 0;
  size_t max_masked = 0;  // masked-LM predictions in a micro-batch
  int max_seqlen = 512;   // longest single sequence
};

// Dropout is keyed by (seed, step); each site and element draws its own bits (bert/philox.h).
struct DropoutKey {
  uint64_t seed = 0;
  uint32_t step = 0;
};

struct ForwardBackwardOptions {
  // Zero the gradient buffer first. False accumulates into it (gradient accumulation over
  // micro-batches); the caller zeroes it before the first one.
  bool zero_grads = true;
  // Gradients are of loss_scale * (mlm_loss + nsp_loss) (fp16 loss scaling, or 1/accumulation).
  float loss_scale = 1.0f;
  // False runs without dropout (e.g. parity tests); the config's probabilities apply otherwise.
  bool dropout = true;
};

struct StepResult {
  double total_loss = 0;  // mlm_loss + nsp_loss (unscaled)
  double mlm_loss = 0;    // mean over the micro-batch's masked positions
  double nsp_loss = 0;    // mean over its sequences
  int64_t mlm_correct = 0, mlm_total = 0;
  int64_t nsp_correct = 0, nsp_total = 0;
};

// MLM accuracy counts (micro average: correct argmax predictions over masked positions with
// label != 0), plus the losses summed (not averaged) so ranks can reduce them exactly.
struct EvalResult {
  int64_t mlm_correct = 0, mlm_total = 0;
  double mlm_loss_sum = 0;
  int64_t nsp_correct = 0, nsp_total = 0;
  double nsp_loss_sum = 0;
};

class Model {
 public:
  // `params` must outlive the model and use the same Ops.
  Model(ParameterStore& params, ModelLimits limits);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const BertConfig& config() const;
  ParameterStore& parameters() { return *params_; }
  const ModelLimits& limits() const { return limits_; }

  // One micro-batch: forward, both losses, backward into parameters().grad().
  // on_grad_ready(n) is called with strictly increasing n, the last time with flat_size().
  // On CUDA the callback runs on the host once the producing ops are issued on the backend's
  // stream; a consumer on another stream or the host must order itself after them.
  StepResult forward_backward(const Batch& batch, const DropoutKey& dropout_key,
                              const std::function<void(size_t ready_elements)>& on_grad_ready = {},
                              const ForwardBackwardOptions& options = {});

  // Forward only, no dropout: MLM and NSP accuracy counts and summed losses.
  EvalResult evaluate(const Batch& batch);

  // Forward only, no dropout: the encoder's final hidden states [num_tokens, hidden] on the host
  // (for parity checks against other implementations).
  std::vector<float> encode(const Batch& batch);

 private:
  struct Arena;
  struct Step;
  struct LayerScope;
  class GradientPrefix;
  struct QkvViews {
    Tensor q, k, v;
    int64_t row_stride = 0;  // AttentionForwardParams::qkv_row_stride
  };
  void check_fits(const Batch& batch) const;
  void upload(const Batch& batch);
  Tensor weight(size_t tensor) const;  // the compute copy of parameter `tensor`
  Tensor grad(size_t tensor) const;
  // Forward, op by op (model.cc).
  void forward(const Step& st);
  LayerScope layer_scope(const Step& st, int64_t layer) const;
  void layer_forward(const Step& st, int64_t layer);
  void qkv_forward(const Step& st, int64_t layer);
  size_t qkv_block_stride() const;
  QkvViews qkv_views(const Tensor& qkv, const Step& st) const;
  AttentionForwardParams attention_forward_params(const Step& st, int64_t layer) const;
  float attention_scale() const;
  void heads_forward(const Step& st, float loss_scale);
  void mlm_head_forward(const Step& st, float loss_scale);
  void nsp_head_forward(const Step& st, float loss_scale);
  // Backward, phase by phase.
  void heads_backward(const Step& st, GradientPrefix& prefix);
  void layer_backward(const Step& st, GradientPrefix& prefix, int64_t layer);
  AttentionBackwardParams attention_backward_params(const Step& st, int64_t layer) const;
  void qkv_backward(const Step& st, int64_t layer);
  void embeddings_backward(const Step& st, GradientPrefix& prefix);
  StepResult step_result(const Step& st);

  ParameterStore* params_;
  ModelLimits limits_;
  std::unique_ptr<Arena> arena_;
};

}  // namespace mlbert::bert
