// bert/op_profile: the wrapper forwards every op unchanged, sorts each into its family with the
// work it does, and the family table sets that work against the ceilings.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "bert/cpu/cpu_ops.h"
#include "bert/model.h"
#include "bert/op_profile.h"
#include "tests/bert/test_util.h"

using namespace mlbert::bert;

namespace {

BertConfig profile_config() {
  BertConfig c = mlbert::test::small_bert_config();  // 48 padded tokens
  c.num_hidden_layers = 3;
  return c;
}

// Sequences of lengths 5, 9 and 3 with 2 masked positions each.
Batch profile_batch(const BertConfig& c) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> token(1, static_cast<int32_t>(c.vocab_size) - 1);
  Batch b;
  for (int len : {5, 9, 3}) {
    std::vector<int32_t> ids(len), seg(len, 0);
    for (auto& id : ids) id = token(rng);
    const std::vector<int32_t> positions{0, 2}, labels{token(rng), token(rng)};
    b.append_sequence(ids, seg, positions, labels, len % 2);
  }
  return b;
}

struct StepOutput {
  double loss = 0;
  std::vector<float> master;
};

// forward_backward, the global norm and a LAMB step on `ops` (CpuOps or a wrapper of it).
StepOutput run_step(Ops& ops, const BertConfig& c, const Batch& batch) {
  ParameterStore params(c, ops);
  params.init_truncated_normal(5);
  Model model(params, ModelLimits{32, 4, 12, 12});
  Buffer m(ops, DType::f32, params.flat_size()), v(ops, DType::f32, params.flat_size());
  Buffer total(ops, DType::f32, 2);
  StepOutput out;
  out.loss = model.forward_backward(batch, DropoutKey{3, 1}).total_loss;
  L2NormParams norm;
  norm.buffer = params.grad();
  norm.segments = params.segments();
  norm.total = total.tensor();
  ops.l2_norm(norm);
  LambParams lamb;
  lamb.master = params.master();
  lamb.grad = params.grad();
  lamb.exp_avg = m.tensor();
  lamb.exp_avg_sq = v.tensor();
  lamb.segments = params.segments();
  lamb.lr = 1e-3f;
  lamb.weight_decay = 0.01f;
  ops.lamb_update(lamb);
  out.master = params.download_master();
  return out;
}

}  // namespace

TEST_CASE("op profile: the wrapper changes nothing and counts every op of a step in its family") {
  const BertConfig c = profile_config();
  const Batch batch = profile_batch(c);
  CpuOps plain;
  const StepOutput expected = run_step(plain, c, batch);

  CpuOps inner;
  HostOpClock clock;
  ProfilingOps ops(inner, clock);
  double squares = 0;
  for (int len : {5, 9, 3}) squares += len * len;
  ops.set_attention_squares(squares);
  ops.start();
  const StepOutput got = run_step(ops, c, batch);
  const FamilyTotals totals = ops.stop();

  CHECK(got.loss == expected.loss);
  CHECK(got.master == expected.master);

  const double T = 17, S = 3, P = 6, L = 3, H = 16, F = 24, V = 48;
  // Forward GEMMs per token (QKV, projection, FFN), per masked position (transform, tied decoder)
  // and per sequence (pooler, NSP); every backward has a weight and an input gradient: 3x forward.
  const double forward = T * L * (2 * H * 3 * H + 2 * H * H + 4 * H * F) +
                         P * (2 * H * H + 2 * H * V) + S * (2 * H * H + 2 * H * 2);
  CHECK(totals.flops(OpFamily::gemm) == Approx(3 * forward).epsilon(1e-12));
  CHECK(totals.calls(OpFamily::gemm) == 2 * (4 * L + 4));
  CHECK(totals.flops(OpFamily::attention_forward) == Approx(L * 4 * H * squares));
  CHECK(totals.flops(OpFamily::attention_backward) == Approx(L * 10 * H * squares));
  CHECK(totals.calls(OpFamily::attention_forward) == 3);
  CHECK(totals.calls(OpFamily::attention_backward) == 3);
  CHECK(totals.calls(OpFamily::embedding) == 2);
  CHECK(totals.calls(OpFamily::layer_norm) == 2 * (2 * L + 1));  // two per layer, MLM head
  CHECK(totals.calls(OpFamily::loss) == 2);                      // masked LM, NSP
  CHECK(totals.calls(OpFamily::optimizer) == 2);                 // norm, LAMB
  // The norm reads each parameter's f32 gradient; LAMB reads and writes master, both moments and
  // the gradient (as scratch for the update) and reads the gradient once more.
  double elements = 0;
  const ParameterStore layout(c, plain);
  for (const auto& s : layout.segments()) elements += static_cast<double>(s.numel);
  CHECK(totals.bytes(OpFamily::optimizer) == 4 * elements * (1 + 9));
  for (const OpDetail& d : totals.details) {
    INFO(d.key);
    CHECK(d.seconds >= 0);
    if (d.family != OpFamily::gemm && d.family != OpFamily::attention_forward &&
        d.family != OpFamily::attention_backward)
      CHECK(d.bytes > 0);
  }
  CHECK(totals.op_seconds() > 0);
  CHECK(totals.span_seconds >= totals.op_seconds());

  // The detail rows split the same ops by op and shape, and add up to the families.
  auto detail = [&](const std::string& key) -> const OpDetail* {
    for (const OpDetail& d : totals.details)
      if (d.key == key) return &d;
    return nullptr;
  };
  const OpDetail* qkv = detail("linear_forward n=16 k=16 x3");
  REQUIRE(qkv);
  CHECK(qkv->calls == 3);
  CHECK(qkv->flops == Approx(3 * T * 2 * H * 3 * H));
  const OpDetail* ffn1 = detail("linear_forward n=24 k=16 gelu");
  REQUIRE(ffn1);
  CHECK(ffn1->calls == 3);
  const OpDetail* decoder = detail("linear_backward n=48 k=16");
  REQUIRE(decoder);
  CHECK(decoder->calls == 1);
  CHECK(decoder->flops == Approx(4 * P * H * V));
  REQUIRE(detail("layer_norm_forward n=16 +residual"));
  REQUIRE(detail("cross_entropy n=2"));
  const auto rows = detail_rows(totals, 1e-3, 1.0, 1);
  REQUIRE(rows.size() == totals.details.size());
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i - 1].gap_ms >= rows[i].gap_ms);

  // Not recording: the wrapper only forwards.
  const StepOutput again = run_step(ops, c, batch);
  CHECK(again.master == expected.master);
  CHECK(ops.stop().details.empty());
}

TEST_CASE("op profile: rates, ceilings and gaps of the family table") {
  FamilyTotals t;
  // Two steps: GEMMs 600 TFLOP in 2 s (two shapes); LayerNorm 1.5 TB in 1 s; loss 0.1 TB in 0.5 s;
  // 0.5 s idle.
  t.details = {{"linear_forward n=1024 k=1024", OpFamily::gemm, 1.5, 450e12, 0, 12},
               {"layer_norm_forward n=1024", OpFamily::layer_norm, 1, 0, 1.5e12, 8},
               {"linear_backward n=1024 k=1024", OpFamily::gemm, 0.5, 150e12, 0, 8},
               {"cross_entropy n=2", OpFamily::loss, 0.5, 0, 0.1e12, 4}};
  t.span_seconds = 4;
  const auto rows = family_rows(t, /*gemm_tflops=*/600, /*copy_gbs=*/3000, /*steps=*/2);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].family == OpFamily::gemm);
  CHECK(rows[0].calls == 10);
  CHECK(rows[0].ms == Approx(1000));
  CHECK(rows[0].rate == Approx(300));        // TFLOP/s
  CHECK(rows[0].of_ceiling == Approx(0.5));  //
  CHECK(rows[0].gap_ms == Approx(500));      // 1 s at the ceiling, over 2 steps
  CHECK(rows[0].share == Approx(0.5));
  CHECK(rows[1].rate == Approx(1500));  // GB/s
  CHECK(rows[1].gap_ms == Approx(250));
  CHECK(rows[2].gap_ms == Approx(1e3 * (0.5 - 0.1e12 / 3e12) / 2));
  const std::string table = format_family_table(rows, t, 2);
  INFO(table);
  CHECK(table.find("GPU idle between ops 250.000 ms (12.5%)") != std::string::npos);
  CHECK(table.find("largest gaps to the ceiling: GEMM 500.000 ms, LayerNorm 250.000 ms, loss") !=
        std::string::npos);
  CHECK_THROWS_AS(family_rows(t, 600, 3000, 0), std::invalid_argument);

  // Details: the same arithmetic per op and shape, largest gap first; two steps summed by key.
  FamilyTotals a, b;
  a.details = {{"linear_forward n=1024 k=1024", OpFamily::gemm, 1, 150e12, 0, 2},
               {"layer_norm_forward n=1024", OpFamily::layer_norm, 0.5, 0, 0.75e12, 4}};
  b.details = {{"layer_norm_forward n=1024", OpFamily::layer_norm, 0.5, 0, 0.75e12, 4},
               {"linear_forward n=1024 k=1024", OpFamily::gemm, 1, 150e12, 0, 2}};
  a += b;
  REQUIRE(a.details.size() == 2);
  const auto details = detail_rows(a, 600, 3000, 2);
  CHECK(details[0].name == "linear_forward n=1024 k=1024");
  CHECK(details[0].calls == 2);
  CHECK(details[0].rate == Approx(150));
  CHECK(details[0].gap_ms == Approx(750));
  CHECK(details[1].name == "layer_norm_forward n=1024");
  CHECK(details[1].gap_ms == Approx(250));
  const std::string detail_table = format_detail_table(details, 1);
  INFO(detail_table);
  CHECK(detail_table.find("linear_forward n=1024 k=1024") != std::string::npos);
  CHECK(detail_table.find("layer_norm_forward") == std::string::npos);  // beyond the limit
}

TEST_CASE("op profile: a clock that lost a timestamp is an error, not a wrong table") {
  class LossyClock final : public OpClock {
   public:
    void mark() override { ++marks; }
    std::vector<double> elapsed() override {
      return std::vector<double>(marks > 1 ? marks - 2 : 0, 1.0);
    }
    void clear() override { marks = 0; }
    size_t marks = 0;
  } clock;
  CpuOps inner;
  ProfilingOps ops(inner, clock);
  Buffer x(ops, DType::f32, 8);
  ops.start();
  ops.fill_zero(x.tensor());
  ops.scale(x.tensor(), 2.0f);
  CHECK_THROWS_WITH(ops.stop(), "ProfilingOps: 2 clock intervals for 2 ops");
}
