// The whole BertForPreTraining on the CPU backend: finite-difference gradients of every tensor,
// the grad-ready prefixes, accumulation, unpadded batching invariance, dropout keying, training.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <random>

#include "bert/cpu/cpu_ops.h"
#include "bert/model.h"
#include "tests/bert/test_util.h"

using namespace mlbert::bert;
using mlbert::test::random_vector;

namespace {

BertConfig small_config() {
  return mlbert::test::small_bert_config();
}

// Three sequences of lengths 5, 9 and 3 with 1-3 masked positions each.
Batch small_batch(uint32_t seed, const BertConfig& c) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(1, static_cast<int32_t>(c.vocab_size) - 1);
  Batch b;
  const int lengths[] = {5, 9, 3};
  for (int s = 0; s < 3; ++s) {
    std::vector<int32_t> ids(lengths[s]), seg(lengths[s]);
    for (int i = 0; i < lengths[s]; ++i) {
      ids[i] = token(rng);
      seg[i] = i >= lengths[s] / 2 ? 1 : 0;
    }
    std::vector<int32_t> pos, lab;
    for (int i = 1; i < lengths[s] && pos.size() < 3; i += 2) {
      pos.push_back(i);
      lab.push_back(token(rng));
    }
    b.append_sequence(ids, seg, pos, lab, s % 2);
  }
  return b;
}

ModelLimits small_limits() {
  return ModelLimits{32, 4, 12, 12};
}

}  // namespace

TEST_CASE("whole-model gradients of every tensor match finite differences, dropout on") {
  CpuOps ops;
  BertConfig c = small_config();
  c.hidden_dropout_prob = 0.1;
  c.attention_probs_dropout_prob = 0.1;
  ParameterStore params(c, ops);
  params.init_truncated_normal(7);
  Model model(params, small_limits());
  const Batch batch = small_batch(3, c);
  const DropoutKey key{99, 4};
  model.forward_backward(batch, key);
  const std::vector<float> x0 = params.download_master();
  const std::vector<float> grad = params.download_grad();
  auto loss_at = [&](const std::vector<float>& x) {
    params.upload_master(x);
    return model.forward_backward(batch, key).total_loss;
  };
  // Along a random direction in the whole flat buffer, then one tensor at a time.
  {
    double fd = 0, an = 0;
    const double err = mlbert::test::directional_error(loss_at, x0, grad, 5, 1e-3, 1e-4, &fd, &an);
    INFO("all tensors: finite difference " << fd << ", analytic " << an);
    CHECK(err < 5e-3);
  }
  for (size_t i = 0; i < params.infos().size(); ++i) {
    const ParameterInfo& info = params.infos()[i];
    auto u = random_vector(info.numel, 100 + i);
    std::vector<float> plus = x0, minus = x0;
    const double eps = 1e-3;
    double analytic = 0;
    for (size_t e = 0; e < info.numel; ++e) {
      plus[info.offset + e] = static_cast<float>(x0[info.offset + e] + eps * u[e]);
      minus[info.offset + e] = static_cast<float>(x0[info.offset + e] - eps * u[e]);
      analytic += double(grad[info.offset + e]) *
                  (double(plus[info.offset + e]) - double(minus[info.offset + e])) / (2 * eps);
    }
    const double fd = (loss_at(plus) - loss_at(minus)) / (2 * eps);
    INFO(info.name << ": finite difference " << fd << ", analytic " << analytic);
    // The floor covers float rounding of the loss (~1e-4 in the difference quotient).
    CHECK(std::fabs(fd - analytic) <= 5e-3 * std::max(std::fabs(fd), 0.1));
    // Softmax is shift invariant along keys: the key bias gets exactly no gradient.
    if (info.name.find("key/bias") != std::string::npos) CHECK(std::fabs(analytic) < 1e-5);
  }
}

TEST_CASE("the tiny preset's gradient matches finite differences along random directions") {
  CpuOps ops;
  BertConfig c = BertConfig::preset("tiny");  // 2 x 128, 2 heads, FFN 512, vocab 30522 -> 30528
  c.initializer_range = 0.1;
  ParameterStore params(c, ops);
  params.init_truncated_normal(17);
  Model model(params, ModelLimits{64, 4, 16, 32});
  Batch batch;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> token(1000, 30000);
  for (int len : {20, 9, 31}) {
    std::vector<int32_t> ids(len), seg(len, 0), pos{1, 4, 7},
        lab{token(rng), token(rng), token(rng)};
    for (auto& id : ids) id = token(rng);
    batch.append_sequence(ids, seg, pos, lab, len % 2);
  }
  const DropoutKey key{3, 9};
  model.forward_backward(batch, key);
  const auto x0 = params.download_master();
  const auto grad = params.download_grad();
  auto loss_at = [&](const std::vector<float>& x) {
    params.upload_master(x);
    return model.forward_backward(batch, key).total_loss;
  };
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    double fd = 0, an = 0;
    const double err =
        mlbert::test::directional_error(loss_at, x0, grad, seed, 1e-3, 1e-3, &fd, &an);
    INFO("direction " << seed << ": finite difference " << fd << ", analytic " << an);
    CHECK(err < 5e-3);
  }
}

TEST_CASE("on_grad_ready reports growing prefixes whose gradients are already final") {
  CpuOps ops;
  const BertConfig c = small_config();
  ParameterStore params(c, ops);
  params.init_truncated_normal(1);
  Model model(params, small_limits());
  const Batch batch = small_batch(5, c);
  std::vector<size_t> prefixes;
  std::vector<std::vector<float>> snapshots;
  model.forward_backward(batch, DropoutKey{1, 1}, [&](size_t ready) {
    prefixes.push_back(ready);
    snapshots.push_back(params.download_grad());
  });
  const std::vector<float> final_grad = params.download_grad();
  REQUIRE(prefixes.size() >= 10);
  CHECK(prefixes.back() == params.flat_size());
  for (size_t i = 0; i < prefixes.size(); ++i) {
    if (i > 0) CHECK(prefixes[i] > prefixes[i - 1]);
    bool equal = true;
    for (size_t e = 0; e < prefixes[i]; ++e) equal &= snapshots[i][e] == final_grad[e];
    INFO("callback " << i << " prefix " << prefixes[i]);
    CHECK(equal);
  }
  // The tied word embedding (last tensor) already has decoder gradient early, but is reported
  // only at the end.
  const size_t word = params.index().word_embeddings;
  CHECK(prefixes[prefixes.size() - 2] <= params.infos()[word].offset);
}

TEST_CASE("gradient accumulation over micro-batches adds, and loss_scale scales gradients") {
  CpuOps ops;
  const BertConfig c = small_config();
  ParameterStore params(c, ops);
  params.init_truncated_normal(2);
  Model model(params, small_limits());
  const Batch a = small_batch(11, c), b = small_batch(12, c);
  const DropoutKey key{5, 6};
  model.forward_backward(a, key);
  const auto ga = params.download_grad();
  model.forward_backward(b, key);
  const auto gb = params.download_grad();
  model.forward_backward(a, key);
  ForwardBackwardOptions accumulate;
  accumulate.zero_grads = false;
  model.forward_backward(b, key, {}, accumulate);
  const auto gab = params.download_grad();
  for (size_t i = 0; i < ga.size(); ++i) REQUIRE(gab[i] == Approx(ga[i] + gb[i]).margin(1e-6));
  ForwardBackwardOptions scaled;
  scaled.loss_scale = 8.0f;
  const StepResult r = model.forward_backward(a, key, {}, scaled);
  const auto g8 = params.download_grad();
  for (size_t i = 0; i < ga.size(); ++i) REQUIRE(g8[i] == Approx(8.0f * ga[i]).margin(1e-6));
  CHECK(r.total_loss == Approx(r.mlm_loss + r.nsp_loss));
}

TEST_CASE("a sequence's hidden states do not depend on the other sequences in the batch") {
  CpuOps ops;
  const BertConfig c = small_config();
  ParameterStore params(c, ops);
  params.init_truncated_normal(3);
  Model model(params, small_limits());
  const Batch both = small_batch(21, c);
  Batch first;
  const int32_t len0 = both.cu_seqlens[1];
  first.append_sequence(std::span(both.input_ids).first(len0),
                        std::span(both.segment_ids).first(len0), {}, {}, 0);
  Batch rest;
  for (size_t s = 1; s < both.num_sequences(); ++s) {
    const int32_t b0 = both.cu_seqlens[s], len = both.cu_seqlens[s + 1] - b0;
    rest.append_sequence(std::span(both.input_ids).subspan(b0, len),
                         std::span(both.segment_ids).subspan(b0, len), {}, {}, 1);
  }
  const auto h_both = model.encode(both), h_first = model.encode(first),
             h_rest = model.encode(rest);
  const size_t split = static_cast<size_t>(len0) * c.hidden_size;
  for (size_t i = 0; i < h_first.size(); ++i) REQUIRE(h_both[i] == Approx(h_first[i]).margin(1e-5));
  for (size_t i = 0; i < h_rest.size(); ++i)
    REQUIRE(h_both[split + i] == Approx(h_rest[i]).margin(1e-5));
}

TEST_CASE("dropout is keyed by (seed, step), and evaluate equals dropout-free training") {
  CpuOps ops;
  BertConfig c = small_config();
  c.hidden_dropout_prob = 0.1;
  c.attention_probs_dropout_prob = 0.1;
  ParameterStore params(c, ops);
  params.init_truncated_normal(4);
  Model model(params, small_limits());
  const Batch batch = small_batch(31, c);
  const double l1 = model.forward_backward(batch, DropoutKey{1, 1}).total_loss;
  const double l1_again = model.forward_backward(batch, DropoutKey{1, 1}).total_loss;
  const double l2 = model.forward_backward(batch, DropoutKey{1, 2}).total_loss;
  const double l3 = model.forward_backward(batch, DropoutKey{2, 1}).total_loss;
  CHECK(l1 == l1_again);
  CHECK(l1 != l2);
  CHECK(l1 != l3);
  ForwardBackwardOptions no_dropout;
  no_dropout.dropout = false;
  const StepResult clean = model.forward_backward(batch, DropoutKey{1, 1}, {}, no_dropout);
  const EvalResult eval = model.evaluate(batch);
  CHECK(eval.mlm_total == static_cast<int64_t>(batch.num_masked()));
  CHECK(eval.mlm_correct == clean.mlm_correct);
  CHECK(eval.nsp_correct == clean.nsp_correct);
  CHECK(eval.mlm_loss_sum / eval.mlm_total == Approx(clean.mlm_loss).epsilon(1e-6));
  CHECK(eval.nsp_loss_sum / eval.nsp_total == Approx(clean.nsp_loss).epsilon(1e-6));
}

namespace {

// Forwards every op to the CPU backend and counts allocations. With `claims_saved`, it names a
// size for AttentionForwardParams::saved, as a device backend does, and records the `saved` tensor
// of every attention call with dropout.
class CountingOps final : public Ops {
 public:
  CpuOps cpu;
  int allocations = 0;
  bool claims_saved = false;
  std::vector<Tensor> forward_saved, backward_saved;
  std::vector<size_t> bytes_needed;         // attention_saved_bytes at each forward's sizes
  std::vector<Tensor> every_forward_saved;  // with dropout or without
  std::vector<Tensor> norm_forward_saved, norm_backward_saved;  // LayerNorms with dropout
  std::vector<size_t> norm_bytes_needed;
  // Recorded steps: begin_step replays (returns true) from the `replay_from`-th step on.
  bool records_steps = false;
  int replay_from = 1 << 30;
  std::vector<StepShape> began;
  std::vector<bool> ended;  // end_step's `completed`
  int linear_calls = 0;
  std::string name() const override { return "counting"; }
  DType compute_dtype() const override { return DType::f32; }
  OpsPreferences preferences() const override {
    OpsPreferences p;
    p.record_steps = records_steps;
    return p;
  }
  bool begin_step(const StepShape& shape, uint64_t, uint32_t) override {
    began.push_back(shape);
    return static_cast<int>(began.size()) > replay_from;
  }
  void end_step(bool completed) override { ended.push_back(completed); }
  Tensor allocate(DType d, size_t n) override {
    ++allocations;
    return cpu.allocate(d, n);
  }
  void release(Tensor t) override { cpu.release(t); }
  void copy_from_host(Tensor d, const void* s, size_t b) override { cpu.copy_from_host(d, s, b); }
  void copy_to_host(void* d, Tensor s, size_t b) override { cpu.copy_to_host(d, s, b); }
  void copy(Tensor d, Tensor s) override { cpu.copy(d, s); }
  void fill_zero(Tensor t) override { cpu.fill_zero(t); }
  void cast(Tensor d, Tensor s) override { cpu.cast(d, s); }
  void synchronize() override {}
  void linear_forward(const LinearForwardParams& p) override {
    ++linear_calls;
    cpu.linear_forward(p);
  }
  void linear_backward(const LinearBackwardParams& p) override { cpu.linear_backward(p); }
  void layer_norm_forward(const LayerNormForwardParams& p) override {
    if (p.dropout.enabled) {
      norm_forward_saved.push_back(p.saved);
      norm_bytes_needed.push_back(layer_norm_saved_bytes(p.rows, p.width));
    }
    cpu.layer_norm_forward(p);
  }
  void layer_norm_backward(const LayerNormBackwardParams& p) override {
    if (p.dropout.enabled) norm_backward_saved.push_back(p.saved);
    cpu.layer_norm_backward(p);
  }
  size_t layer_norm_saved_bytes(int64_t rows, int64_t width) const override {
    return claims_saved ? static_cast<size_t>(rows * width / 8 + 3) : 0;
  }
  void embedding_forward(const EmbeddingForwardParams& p) override { cpu.embedding_forward(p); }
  void embedding_backward(const EmbeddingBackwardParams& p) override { cpu.embedding_backward(p); }
  size_t attention_saved_bytes(int64_t tokens, int64_t sequences, int64_t heads,
                               int max_seqlen) const override {
    return claims_saved ? static_cast<size_t>(tokens * heads * 3 + sequences * 5 + max_seqlen) : 0;
  }
  void attention_forward(const AttentionForwardParams& p) override {
    every_forward_saved.push_back(p.saved);
    if (p.dropout.enabled) {
      forward_saved.push_back(p.saved);
      bytes_needed.push_back(
          attention_saved_bytes(p.tokens, p.num_sequences, p.heads, p.max_seqlen));
    }
    cpu.attention_forward(p);
  }
  void attention_backward(const AttentionBackwardParams& p) override {
    if (p.dropout.enabled) backward_saved.push_back(p.saved);
    cpu.attention_backward(p);
  }
  void gather_rows(const GatherRowsParams& p) override { cpu.gather_rows(p); }
  void scatter_add_rows(const ScatterAddRowsParams& p) override { cpu.scatter_add_rows(p); }
  void cross_entropy(const CrossEntropyParams& p) override { cpu.cross_entropy(p); }
  void l2_norm(const L2NormParams& p) override { cpu.l2_norm(p); }
  void scale(Tensor x, float f) override { cpu.scale(x, f); }
  void adam_update(const AdamParams& p) override { cpu.adam_update(p); }
  void lamb_update(const LambParams& p) override { cpu.lamb_update(p); }
};

}  // namespace

TEST_CASE("the model allocates backend memory only at construction, never inside a step") {
  CountingOps ops;
  const BertConfig c = small_config();
  ParameterStore params(c, ops);
  params.init_truncated_normal(6);
  Model model(params, small_limits());
  const int after_construction = ops.allocations;
  CHECK(after_construction > 0);
  for (uint32_t step = 1; step <= 3; ++step) {
    model.forward_backward(small_batch(50 + step, c), DropoutKey{1, step});
    model.evaluate(small_batch(60 + step, c));
  }
  CHECK(ops.allocations == after_construction);
}

// Item i's backward (the backward runs in reverse) gets the tensor item i's forward saved into.
// With `claims`, each holds the bytes its op asked for and no two share bytes; without, each is
// empty.
void check_saved_pairs(const std::vector<Tensor>& forward, const std::vector<Tensor>& backward,
                       const std::vector<size_t>& bytes_needed, size_t items, bool claims,
                       const char* item) {
  REQUIRE(forward.size() == items);
  REQUIRE(backward.size() == items);
  for (size_t i = 0; i < items; ++i) {
    INFO(item << " " << i << (claims ? " (backend keeps bytes)" : " (backend keeps nothing)"));
    const Tensor& fwd = forward[i];
    const Tensor& bwd = backward[items - 1 - i];
    CHECK(bwd.data == fwd.data);
    CHECK(bwd.numel == fwd.numel);
    if (!claims) {
      CHECK(fwd.numel == 0);
      continue;
    }
    CHECK(fwd.numel * 4 >= bytes_needed[i]);
    for (size_t other = 0; other < i; ++other) {
      const auto* a = static_cast<const char*>(fwd.data);
      const auto* b = static_cast<const char*>(forward[other].data);
      CHECK((a + fwd.numel * 4 <= b || b + forward[other].numel * 4 <= a));
    }
  }
}

// One step and an evaluation of the small model on CountingOps.
void counted_step(CountingOps& ops, bool claims, uint32_t batch_seed) {
  ops.claims_saved = claims;
  const BertConfig c = small_config();
  ParameterStore params(c, ops);
  params.init_truncated_normal(7);
  Model model(params, small_limits());
  const Batch batch = small_batch(batch_seed, c);
  model.forward_backward(batch, DropoutKey{2, 1});
  model.evaluate(batch);  // no dropout: records nothing
}

TEST_CASE("each layer's attention backward gets the tensor its forward saved into") {
  const auto layers = static_cast<size_t>(small_config().num_hidden_layers);
  for (const bool claims : {true, false}) {
    CountingOps ops;
    counted_step(ops, claims, 71);
    check_saved_pairs(ops.forward_saved, ops.backward_saved, ops.bytes_needed, layers, claims,
                      "layer");
    for (size_t l = 0; claims && l < layers; ++l) {
      CHECK(ops.forward_saved[l].dtype == DType::i32);
      CHECK(ops.bytes_needed[l] > 0);
    }
  }
}

TEST_CASE("each residual LayerNorm's backward gets the tensor its forward kept, its own") {
  // Two a layer (after attention, after the FFN); the heads' LayerNorm has no dropout.
  const size_t norms = 2 * static_cast<size_t>(small_config().num_hidden_layers);
  for (const bool claims : {true, false}) {
    CountingOps ops;
    counted_step(ops, claims, 73);
    check_saved_pairs(ops.norm_forward_saved, ops.norm_backward_saved, ops.norm_bytes_needed, norms,
                      claims, "LayerNorm");
  }
}

TEST_CASE(
    "a backend that records steps gets each step bracketed and its shape, and a replayed step "
    "issues no op") {
  CountingOps ops;
  ops.records_steps = true;
  ops.replay_from = 2;  // the third step on is a replay
  const BertConfig c = small_config();
  ParameterStore params(c, ops);
  params.init_truncated_normal(12);
  Model model(params, small_limits());
  const Batch batch = small_batch(90, c);
  const double first = model.forward_backward(batch, DropoutKey{1, 1}).total_loss;
  const int calls_per_step = ops.linear_calls;
  CHECK(calls_per_step > 0);
  const double second = model.forward_backward(batch, DropoutKey{1, 2}).total_loss;
  CHECK(second != first);
  REQUIRE(ops.ended == std::vector<bool>{true, true});
  const StepShape& shape = ops.began[0];
  CHECK(shape.owner == &model);
  CHECK(shape.tokens == static_cast<int64_t>(batch.num_tokens()));
  CHECK(shape.sequences == 3);
  CHECK(shape.masked == static_cast<int64_t>(batch.num_masked()));
  CHECK(shape.max_seqlen == batch.max_seqlen);
  CHECK(shape.dropout);
  CHECK(ops.began[1] == shape);
  // A replay: no op issued, the step's result read back from the buffers it wrote.
  const double replayed = model.forward_backward(batch, DropoutKey{1, 1}).total_loss;
  CHECK(ops.linear_calls == 2 * calls_per_step);
  CHECK(ops.ended.size() == 2);  // a replayed step is not ended
  CHECK(replayed == model.forward_backward(batch, DropoutKey{1, 1}).total_loss);
  CHECK(replayed == second);  // nothing ran: the buffers still hold the last step's statistics
  // A step that reports gradients on the way runs op by op, outside any recording.
  ops.replay_from = 1 << 30;
  const size_t began = ops.began.size();
  model.forward_backward(batch, DropoutKey{1, 3}, [](size_t) {});
  CHECK(ops.began.size() == began);
  // Without dropout, or with another loss scale, it is another shape.
  ForwardBackwardOptions other;
  other.dropout = false;
  other.loss_scale = 4.0f;
  model.forward_backward(batch, DropoutKey{1, 4}, {}, other);
  CHECK_FALSE(ops.began.back().dropout);
  CHECK(ops.began.back().loss_scale == 4.0f);
  CHECK(ops.ended.back());
}

TEST_CASE("a model without attention dropout carves no keep-bit buffer") {
  CountingOps ops;
  ops.claims_saved = true;
  BertConfig c = small_config();
  c.attention_probs_dropout_prob = 0;
  ParameterStore params(c, ops);
  params.init_truncated_normal(8);
  Model model(params, small_limits());
  model.forward_backward(small_batch(72, c), DropoutKey{3, 1});
  REQUIRE(ops.every_forward_saved.size() == static_cast<size_t>(c.num_hidden_layers));
  CHECK(ops.forward_saved.empty());  // no attention call had dropout
  for (const Tensor& saved : ops.every_forward_saved) CHECK(saved.numel == 0);
}

TEST_CASE("batches over the model's limits are rejected with the limit named") {
  CpuOps ops;
  const BertConfig c = small_config();
  ParameterStore params(c, ops);
  Model model(params, ModelLimits{16, 4, 12, 12});
  const Batch batch = small_batch(1, c);  // 17 tokens
  CHECK_THROWS_WITH(model.forward_backward(batch, DropoutKey{}),
                    Catch::Contains("17 tokens") && Catch::Contains("16"));
  Batch bad = batch;
  bad.input_ids[0] = 45;
  Model roomy(params, small_limits());
  CHECK_THROWS_WITH(roomy.evaluate(bad), Catch::Contains("input_ids[0] = 45"));
}

TEST_CASE("a few Adam steps on one batch drive the loss down") {
  CpuOps ops;
  BertConfig c = small_config();
  c.initializer_range = 0.02;
  ParameterStore params(c, ops);
  params.init_truncated_normal(5);
  Model model(params, small_limits());
  const Batch batch = small_batch(41, c);
  Buffer m(ops, DType::f32, params.flat_size()), v(ops, DType::f32, params.flat_size());
  double first = 0, last = 0;
  for (int step = 1; step <= 30; ++step) {
    const StepResult r = model.forward_backward(batch, DropoutKey{1, static_cast<uint32_t>(step)});
    if (step == 1) first = r.total_loss;
    last = r.total_loss;
    AdamParams p;
    p.master = params.master();
    p.grad = params.grad();
    p.exp_avg = m;
    p.exp_avg_sq = v;
    p.segments = params.segments();
    p.lr = 1e-2f;
    p.step = step;
    ops.adam_update(p);
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.5 * first);
}

TEST_CASE(
    "FFN1's bias gradient taken beside its weight gradient equals the one FFN2's backward folds "
    "in") {
  BertConfig c = small_config();
  c.hidden_dropout_prob = 0.1;
  OpsPreferences beside;
  beside.ffn1_bias_grad_with_weight_grad = true;
  CpuOps folded_ops, beside_ops(beside);
  ParameterStore folded(c, folded_ops), moved(c, beside_ops);
  folded.init_truncated_normal(9);
  moved.init_truncated_normal(9);
  Model a(folded, small_limits()), b(moved, small_limits());
  const Batch batch = small_batch(81, c);
  const double loss_a = a.forward_backward(batch, DropoutKey{4, 2}).total_loss;
  const double loss_b = b.forward_backward(batch, DropoutKey{4, 2}).total_loss;
  CHECK(loss_a == loss_b);
  const auto ga = folded.download_grad(), gb = moved.download_grad();
  for (const LayerParameters& lp : folded.index().layers) {
    const ParameterInfo& bias = folded.infos()[lp.intermediate_bias];
    double norm = 0;
    for (size_t e = 0; e < bias.numel; ++e)
      norm += double(ga[bias.offset + e]) * ga[bias.offset + e];
    CHECK(norm > 0);
  }
  for (size_t i = 0; i < ga.size(); ++i) REQUIRE(gb[i] == Approx(ga[i]).margin(1e-6));
}
