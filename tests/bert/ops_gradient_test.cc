// Finite-difference gradient checks of every CPU op: for a random linear functional of each op's
// outputs, the backward's gradients must match central differences along random directions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "bert/cpu/cpu_ops.h"
#include "bert/cpu/math.h"
#include "tests/bert/test_util.h"

namespace {

using namespace mlbert::bert;
using mlbert::test::directional_error;
using mlbert::test::dot;
using mlbert::test::HostTensor;
using mlbert::test::random_vector;

constexpr double kTolerance = 2e-3;

void check_directions(const std::string& what,
                      const std::function<double(const std::vector<float>&)>& loss_at,
                      const std::vector<float>& x, const std::vector<float>& grad,
                      double eps = 3e-3) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    double fd = 0, an = 0;
    const double err = directional_error(loss_at, x, grad, 1000 + seed, eps, 1e-3, &fd, &an);
    INFO(what << " direction " << seed << ": finite difference " << fd << ", analytic " << an);
    CHECK(err < kTolerance);
  }
}

struct LinearCase {
  Activation activation;
  bool transposed;
  int batch;
};

}  // namespace

TEST_CASE("linear forward/backward gradients match finite differences for every epilogue") {
  CpuOps ops;
  const int64_t m = 7, n = 12, k = 9;
  for (const LinearCase lc :
       {LinearCase{Activation::none, false, 1}, LinearCase{Activation::gelu, false, 1},
        LinearCase{Activation::gelu_erf, false, 1}, LinearCase{Activation::tanh, true, 1},
        LinearCase{Activation::none, true, 1}, LinearCase{Activation::none, false, 3}}) {
    const size_t w_stride = n * k + 5, b_stride = n + 3, o_stride = m * n + 2;
    const size_t batches = static_cast<size_t>(lc.batch);
    const auto x0 = random_vector(m * k, 1);
    const auto w0 = random_vector((batches - 1) * w_stride + n * k, 2, 0.5f);
    const auto b0 = random_vector((batches - 1) * b_stride + n, 3);
    const auto r = random_vector((batches - 1) * o_stride + m * n, 4);
    auto run_forward = [&](const std::vector<float>& x, const std::vector<float>& w,
                           const std::vector<float>& b, HostTensor& out, HostTensor& pre) {
      HostTensor tx(ops, x), tw(ops, w), tb(ops, b);
      LinearForwardParams p;
      p.input = tx;
      p.weight = tw;
      p.bias = tb;
      p.out = out;
      p.pre_activation = lc.activation == Activation::none ? Tensor{} : pre.t();
      p.activation = lc.activation;
      p.m = m;
      p.n = n;
      p.k = k;
      p.batch = lc.batch;
      p.weight_stride = w_stride;
      p.bias_stride = b_stride;
      p.out_stride = o_stride;
      p.weight_transposed = lc.transposed;
      ops.linear_forward(p);
    };
    auto loss = [&](const std::vector<float>& x, const std::vector<float>& w,
                    const std::vector<float>& b) {
      HostTensor out(ops, std::vector<float>(r.size())), pre(ops, std::vector<float>(r.size()));
      run_forward(x, w, b, out, pre);
      double l = 0;
      const auto o = out.host(ops);
      for (size_t bi = 0; bi < batches; ++bi)
        for (int64_t i = 0; i < m * n; ++i)
          l += static_cast<double>(o[bi * o_stride + i]) * r[bi * o_stride + i];
      return l;
    };
    HostTensor out(ops, std::vector<float>(r.size())), pre(ops, std::vector<float>(r.size()));
    run_forward(x0, w0, b0, out, pre);
    const auto accumulate_into = random_vector(m * k, 9);
    HostTensor tx(ops, x0), tw(ops, w0), d_out(ops, r), d_in(ops, accumulate_into),
        d_w(ops, std::vector<float>(w0.size())), d_b(ops, std::vector<float>(b0.size()));
    LinearBackwardParams p;
    p.d_out = d_out;
    p.pre_activation = pre;
    p.out = out;
    p.activation = lc.activation;
    p.input = tx;
    p.weight = tw;
    p.d_input = d_in;
    p.d_weight = d_w;
    p.d_bias = d_b;
    p.m = m;
    p.n = n;
    p.k = k;
    p.batch = lc.batch;
    p.weight_stride = w_stride;
    p.bias_stride = b_stride;
    p.out_stride = o_stride;
    p.weight_transposed = lc.transposed;
    p.accumulate_d_input = true;
    ops.linear_backward(p);
    auto g_in = d_in.host(ops);
    for (size_t i = 0; i < g_in.size(); ++i) g_in[i] -= accumulate_into[i];
    const std::string name = "activation " + std::to_string(int(lc.activation)) + " transposed " +
                             std::to_string(lc.transposed) + " batch " + std::to_string(lc.batch);
    check_directions(
        name + " d_input", [&](const auto& x) { return loss(x, w0, b0); }, x0, g_in);
    // The gaps between batch entries must get no gradient; zero them in the direction too.
    auto g_w = d_w.host(ops), g_b = d_b.host(ops);
    for (size_t bi = 0; bi + 1 < batches; ++bi) {
      for (size_t i = n * k; i < w_stride; ++i) CHECK(g_w[bi * w_stride + i] == 0.0f);
      for (size_t i = n; i < b_stride; ++i) CHECK(g_b[bi * b_stride + i] == 0.0f);
    }
    check_directions(
        name + " d_weight", [&](const auto& w) { return loss(x0, w, b0); }, w0, g_w);
    check_directions(
        name + " d_bias", [&](const auto& b) { return loss(x0, w0, b); }, b0, g_b);
  }
}

TEST_CASE("linear backward folding in the GELU before it equals the two backwards in turn") {
  // x -> linear1 + act -> h -> linear2 -> y: the FFN. Unfused: linear2's backward gives d_h, then
  // linear1's backward applies act' and sums its bias gradient. Fused: linear2's backward does
  // both.
  CpuOps ops;
  const int64_t m = 11, h = 8, f = 20;
  for (const Activation act : {Activation::gelu, Activation::gelu_erf}) {
    const auto pre0 = random_vector(m * f, 21, 2.0f);
    std::vector<float> h0(pre0.size());
    if (act == Activation::gelu)
      cpu::gelu_forward(pre0.data(), h0.data(), m * f);
    else
      for (size_t i = 0; i < pre0.size(); ++i) h0[i] = gelu_erf(pre0[i]);
    const auto w2 = random_vector(f * h, 22, 0.5f), dy = random_vector(m * h, 23);
    const auto bias_start = random_vector(f, 24);  // gradients accumulate into what is there
    HostTensor pre(ops, pre0), hidden(ops, h0), weight(ops, w2);
    auto backward = [&](bool fused, std::vector<float>& d_pre, std::vector<float>& d_bias1,
                        std::vector<float>& d_w2) {
      HostTensor d_y(ops, dy), d_h(ops, std::vector<float>(m * f)),
          d_w(ops, std::vector<float>(f * h)), d_b1(ops, bias_start);
      LinearBackwardParams p;
      p.d_out = d_y;
      p.input = hidden;
      p.weight = weight;
      p.d_input = d_h;
      p.d_weight = d_w;
      p.m = m;
      p.n = h;
      p.k = f;
      if (fused) {
        p.input_activation = act;
        p.input_pre_activation = pre;
        p.d_input_bias = d_b1;
      }
      ops.linear_backward(p);
      d_pre = d_h.host(ops);
      if (!fused) {  // what linear1's backward does first: act', then column sums
        if (act == Activation::gelu)
          cpu::gelu_backward(pre0.data(), d_pre.data(), m * f);
        else
          for (size_t i = 0; i < d_pre.size(); ++i) d_pre[i] *= gelu_erf_grad(pre0[i]);
        std::vector<float> b = bias_start;
        for (int64_t r = 0; r < m; ++r)
          for (int64_t c = 0; c < f; ++c) b[c] += d_pre[r * f + c];
        d_bias1 = b;
      } else {
        d_bias1 = d_b1.host(ops);
      }
      d_w2 = d_w.host(ops);
    };
    std::vector<float> pre_a, bias_a, w_a, pre_b, bias_b, w_b;
    backward(false, pre_a, bias_a, w_a);
    backward(true, pre_b, bias_b, w_b);
    INFO("activation " << int(act));
    for (size_t i = 0; i < pre_a.size(); ++i) CHECK(pre_b[i] == Approx(pre_a[i]).margin(1e-6));
    for (size_t i = 0; i < bias_a.size(); ++i) CHECK(bias_b[i] == Approx(bias_a[i]).margin(1e-5));
    CHECK(w_a == w_b);
  }
}

TEST_CASE("linear backward rejects an input activation it cannot fold in") {
  CpuOps ops;
  HostTensor x(ops, random_vector(6, 1)), w(ops, random_vector(6, 2)), dy(ops, random_vector(9, 3)),
      dx(ops, std::vector<float>(6)), dw(ops, std::vector<float>(6)), pre(ops, random_vector(6, 4));
  LinearBackwardParams p;
  p.d_out = dy;
  p.input = x;
  p.weight = w;
  p.d_input = dx;
  p.d_weight = dw;
  p.input_pre_activation = pre;
  p.m = 3;
  p.n = 3;
  p.k = 2;
  p.input_activation = Activation::tanh;
  CHECK_THROWS_WITH(ops.linear_backward(p), Catch::Contains("must be gelu or gelu_erf"));
  p.input_activation = Activation::gelu;
  p.accumulate_d_input = true;
  CHECK_THROWS_WITH(ops.linear_backward(p), Catch::Contains("cannot accumulate"));
  p.accumulate_d_input = false;
  p.d_input = Tensor{};
  CHECK_THROWS_WITH(ops.linear_backward(p), Catch::Contains("needs d_input"));
}

TEST_CASE("layer norm with bias, dropout and residual: gradients match finite differences") {
  CpuOps ops;
  const int64_t rows = 6, width = 40;
  for (const bool with_dropout : {false, true}) {
    const DropoutMask mask = with_dropout ? make_dropout_mask(77, 5, 3, 0.25) : DropoutMask{};
    const auto x0 = random_vector(rows * width, 11), bias0 = random_vector(width, 12);
    const auto res0 = random_vector(rows * width, 13), gamma0 = random_vector(width, 14);
    const auto beta0 = random_vector(width, 15), r = random_vector(rows * width, 16);
    struct Out {
      std::vector<float> out;
      HostTensor s, mean, rstd;
    };
    auto forward = [&](const std::vector<float>& x, const std::vector<float>& bias,
                       const std::vector<float>& res, const std::vector<float>& gamma,
                       const std::vector<float>& beta) {
      HostTensor tx(ops, x), tb(ops, bias), tr(ops, res), tg(ops, gamma), tbe(ops, beta),
          out(ops, std::vector<float>(rows * width));
      Out o{{},
            HostTensor(ops, std::vector<float>(rows * width)),
            HostTensor(ops, std::vector<float>(rows)),
            HostTensor(ops, std::vector<float>(rows))};
      LayerNormForwardParams p;
      p.x = tx;
      p.bias = tb;
      p.residual = tr;
      p.gamma = tg;
      p.beta = tbe;
      p.out = out;
      p.ln_input = o.s;
      p.mean = o.mean;
      p.rstd = o.rstd;
      p.dropout = mask;
      p.rows = rows;
      p.width = width;
      p.eps = 1e-5f;
      ops.layer_norm_forward(p);
      o.out = out.host(ops);
      return o;
    };
    auto loss = [&](const std::vector<float>& x, const std::vector<float>& bias,
                    const std::vector<float>& res, const std::vector<float>& gamma,
                    const std::vector<float>& beta) {
      return dot(forward(x, bias, res, gamma, beta).out, r);
    };
    Out o = forward(x0, bias0, res0, gamma0, beta0);
    HostTensor d_out(ops, r), tg(ops, gamma0), d_x(ops, std::vector<float>(rows * width)),
        d_res(ops, std::vector<float>(rows * width)), d_g(ops, std::vector<float>(width)),
        d_be(ops, std::vector<float>(width)), d_b(ops, std::vector<float>(width));
    LayerNormBackwardParams p;
    p.d_out = d_out;
    p.ln_input = o.s;
    p.mean = o.mean;
    p.rstd = o.rstd;
    p.gamma = tg;
    p.d_x = d_x;
    p.d_residual = d_res;
    p.d_gamma = d_g;
    p.d_beta = d_be;
    p.d_bias = d_b;
    p.dropout = mask;
    p.rows = rows;
    p.width = width;
    ops.layer_norm_backward(p);
    const std::string tag = with_dropout ? " (dropout)" : "";
    check_directions(
        "d_x" + tag, [&](const auto& v) { return loss(v, bias0, res0, gamma0, beta0); }, x0,
        d_x.host(ops));
    check_directions(
        "d_bias" + tag, [&](const auto& v) { return loss(x0, v, res0, gamma0, beta0); }, bias0,
        d_b.host(ops));
    check_directions(
        "d_residual" + tag, [&](const auto& v) { return loss(x0, bias0, v, gamma0, beta0); }, res0,
        d_res.host(ops));
    check_directions(
        "d_gamma" + tag, [&](const auto& v) { return loss(x0, bias0, res0, v, beta0); }, gamma0,
        d_g.host(ops));
    check_directions(
        "d_beta" + tag, [&](const auto& v) { return loss(x0, bias0, res0, gamma0, v); }, beta0,
        d_be.host(ops));
    if (with_dropout) {
      // Dropped elements pass no gradient to x; kept ones are scaled by 1/(1-p).
      const auto gx = d_x.host(ops), gs = d_res.host(ops);
      int dropped = 0;
      for (int64_t e = 0; e < rows * width; ++e) {
        if (!dropout_keep(mask, static_cast<uint64_t>(e))) {
          ++dropped;
          CHECK(gx[e] == 0.0f);
        } else {
          CHECK(gx[e] == Approx(gs[e] * mask.scale).epsilon(1e-6));
        }
      }
      CHECK(dropped > 0);
    }
  }
}

TEST_CASE("embedding gather + sum + LayerNorm + dropout: gradients match finite differences") {
  CpuOps ops;
  const int64_t tokens = 9, hidden = 16, vocab = 11, positions = 6, types = 2;
  const std::vector<int32_t> ids{1, 4, 4, 10, 0, 3, 4, 7, 1}, pos{0, 1, 2, 3, 0, 1, 2, 3, 4},
      seg{0, 0, 1, 1, 0, 0, 0, 1, 1};
  const DropoutMask mask = make_dropout_mask(3, 1, kEmbeddingDropoutSite, 0.2);
  const auto word0 = random_vector(vocab * hidden, 21),
             posv0 = random_vector(positions * hidden, 22),
             type0 = random_vector(types * hidden, 23), gamma0 = random_vector(hidden, 24),
             beta0 = random_vector(hidden, 25), r = random_vector(tokens * hidden, 26);
  HostTensor tids(ops, ids), tpos(ops, pos), tseg(ops, seg);
  HostTensor s(ops, std::vector<float>(tokens * hidden)), mean(ops, std::vector<float>(tokens)),
      rstd(ops, std::vector<float>(tokens));
  auto forward = [&](const std::vector<float>& word, const std::vector<float>& posv,
                     const std::vector<float>& type, const std::vector<float>& gamma,
                     const std::vector<float>& beta) {
    HostTensor tw(ops, word), tp(ops, posv), tt(ops, type), tg(ops, gamma), tb(ops, beta),
        out(ops, std::vector<float>(tokens * hidden));
    EmbeddingForwardParams p;
    p.input_ids = tids;
    p.position_ids = tpos;
    p.segment_ids = tseg;
    p.word = tw;
    p.position = tp;
    p.token_type = tt;
    p.gamma = tg;
    p.beta = tb;
    p.out = out;
    p.ln_input = s;
    p.mean = mean;
    p.rstd = rstd;
    p.dropout = mask;
    p.tokens = tokens;
    p.hidden = hidden;
    p.eps = 1e-5f;
    ops.embedding_forward(p);
    return dot(out.host(ops), r);
  };
  forward(word0, posv0, type0, gamma0, beta0);
  HostTensor d_out(ops, r), tg(ops, gamma0), dw(ops, std::vector<float>(vocab * hidden)),
      dp(ops, std::vector<float>(positions * hidden)), dt(ops, std::vector<float>(types * hidden)),
      dg(ops, std::vector<float>(hidden)), db(ops, std::vector<float>(hidden));
  EmbeddingBackwardParams p;
  p.d_out = d_out;
  p.input_ids = tids;
  p.position_ids = tpos;
  p.segment_ids = tseg;
  p.ln_input = s;
  p.mean = mean;
  p.rstd = rstd;
  p.gamma = tg;
  p.d_word = dw;
  p.d_position = dp;
  p.d_token_type = dt;
  p.d_gamma = dg;
  p.d_beta = db;
  p.dropout = mask;
  p.tokens = tokens;
  p.hidden = hidden;
  ops.embedding_backward(p);
  check_directions(
      "d_word", [&](const auto& v) { return forward(v, posv0, type0, gamma0, beta0); }, word0,
      dw.host(ops));
  check_directions(
      "d_position", [&](const auto& v) { return forward(word0, v, type0, gamma0, beta0); }, posv0,
      dp.host(ops));
  check_directions(
      "d_token_type", [&](const auto& v) { return forward(word0, posv0, v, gamma0, beta0); }, type0,
      dt.host(ops));
  check_directions(
      "d_gamma", [&](const auto& v) { return forward(word0, posv0, type0, v, beta0); }, gamma0,
      dg.host(ops));
  check_directions(
      "d_beta", [&](const auto& v) { return forward(word0, posv0, type0, gamma0, v); }, beta0,
      db.host(ops));
  // Rows of ids that never occur get no gradient.
  const auto gw = dw.host(ops);
  for (int64_t c = 0; c < hidden; ++c) CHECK(gw[2 * hidden + c] == 0.0f);
}

TEST_CASE("variable-length attention with dropout: gradients match finite differences") {
  CpuOps ops;
  const int64_t heads = 2, head_dim = 8, hidden = heads * head_dim;
  const std::vector<int32_t> cu{0, 5, 6, 13};
  const int64_t tokens = 13, sequences = 3;
  const int max_seqlen = 7;
  for (const double p_drop : {0.0, 0.3}) {
    const DropoutMask mask =
        make_dropout_mask(11, 2, dropout_site(1, DropoutSiteKind::attention_probs), p_drop);
    const auto q0 = random_vector(tokens * hidden, 31), k0 = random_vector(tokens * hidden, 32),
               v0 = random_vector(tokens * hidden, 33), r = random_vector(tokens * hidden, 34);
    HostTensor tcu(ops, cu), lse(ops, std::vector<float>(heads * tokens));
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    auto forward = [&](const std::vector<float>& q, const std::vector<float>& k,
                       const std::vector<float>& v, HostTensor& out) {
      HostTensor tq(ops, q), tk(ops, k), tv(ops, v);
      AttentionForwardParams p;
      p.q = tq;
      p.k = tk;
      p.v = tv;
      p.cu_seqlens = tcu;
      p.out = out;
      p.softmax_lse = lse;
      p.dropout = mask;
      p.tokens = tokens;
      p.num_sequences = sequences;
      p.heads = heads;
      p.head_dim = head_dim;
      p.max_seqlen = max_seqlen;
      p.scale = scale;
      ops.attention_forward(p);
    };
    auto loss = [&](const std::vector<float>& q, const std::vector<float>& k,
                    const std::vector<float>& v) {
      HostTensor out(ops, std::vector<float>(tokens * hidden));
      forward(q, k, v, out);
      return dot(out.host(ops), r);
    };
    HostTensor out(ops, std::vector<float>(tokens * hidden));
    forward(q0, k0, v0, out);
    HostTensor tq(ops, q0), tk(ops, k0), tv(ops, v0), d_out(ops, r),
        dq(ops, std::vector<float>(tokens * hidden, 7.0f)),
        dk(ops, std::vector<float>(tokens * hidden, 7.0f)),
        dv(ops, std::vector<float>(tokens * hidden, 7.0f));
    AttentionBackwardParams p;
    p.q = tq;
    p.k = tk;
    p.v = tv;
    p.out = out;
    p.d_out = d_out;
    p.softmax_lse = lse;
    p.cu_seqlens = tcu;
    p.d_q = dq;
    p.d_k = dk;
    p.d_v = dv;
    p.dropout = mask;
    p.tokens = tokens;
    p.num_sequences = sequences;
    p.heads = heads;
    p.head_dim = head_dim;
    p.max_seqlen = max_seqlen;
    p.scale = scale;
    ops.attention_backward(p);
    const std::string tag = p_drop > 0 ? " (dropout)" : "";
    check_directions(
        "d_q" + tag, [&](const auto& x) { return loss(x, k0, v0); }, q0, dq.host(ops));
    check_directions(
        "d_k" + tag, [&](const auto& x) { return loss(q0, x, v0); }, k0, dk.host(ops));
    check_directions(
        "d_v" + tag, [&](const auto& x) { return loss(q0, k0, x); }, v0, dv.host(ops));
  }
}

TEST_CASE("attention never mixes tokens of different sequences") {
  CpuOps ops;
  const int64_t heads = 2, head_dim = 4, hidden = 8;
  const std::vector<int32_t> cu{0, 3, 7};
  const auto q = random_vector(7 * hidden, 41), k = random_vector(7 * hidden, 42),
             v = random_vector(7 * hidden, 43);
  auto run = [&](const std::vector<float>& vv) {
    HostTensor tq(ops, q), tk(ops, k), tv(ops, vv), tcu(ops, cu),
        out(ops, std::vector<float>(7 * hidden)), lse(ops, std::vector<float>(heads * 7));
    AttentionForwardParams p;
    p.q = tq;
    p.k = tk;
    p.v = tv;
    p.cu_seqlens = tcu;
    p.out = out;
    p.softmax_lse = lse;
    p.tokens = 7;
    p.num_sequences = 2;
    p.heads = heads;
    p.head_dim = head_dim;
    p.max_seqlen = 4;
    p.scale = 0.5f;
    ops.attention_forward(p);
    return out.host(ops);
  };
  const auto base = run(v);
  auto v2 = v;
  for (int64_t c = 0; c < hidden; ++c) v2[5 * hidden + c] += 3.0f;  // a token of sequence 1
  const auto changed = run(v2);
  for (int64_t i = 0; i < 3 * hidden; ++i) CHECK(changed[i] == base[i]);
  bool any_diff = false;
  for (int64_t i = 3 * hidden; i < 7 * hidden; ++i) any_diff |= changed[i] != base[i];
  CHECK(any_diff);
}

TEST_CASE("cross entropy over the first classes of padded rows: loss, gradient, accuracy") {
  CpuOps ops;
  const int64_t rows = 5, classes = 7, stride = 8;
  auto logits0 = random_vector(rows * stride, 51, 2.0f);
  for (int64_t r = 0; r < rows; ++r) logits0[r * stride + 7] = 100.0f;  // padding column, ignored
  const std::vector<int32_t> labels{0, 6, 3, 3, 1};
  HostTensor tl(ops, labels), stats(ops, std::vector<float>(2));
  auto run = [&](const std::vector<float>& logits, std::vector<float>* grad) {
    HostTensor t(ops, logits), d(ops, std::vector<float>(logits.size(), 5.0f));
    CrossEntropyParams p;
    p.logits = t;
    p.d_logits = d;
    p.labels = tl;
    p.stats = stats;
    p.rows = rows;
    p.classes = classes;
    p.row_stride = stride;
    p.grad_scale = 0.5f;
    ops.cross_entropy(p);
    if (grad) *grad = d.host(ops);
    return 0.5 * stats.host(ops)[0];
  };
  std::vector<float> grad;
  const double l0 = run(logits0, &grad);
  // Reference loss in double.
  double expected = 0;
  int64_t expected_correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -1e30, sum = 0;
    int64_t arg = 0;
    for (int64_t c = 0; c < classes; ++c) {
      if (logits0[r * stride + c] > mx) {
        mx = logits0[r * stride + c];
        arg = c;
      }
    }
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(logits0[r * stride + c] - mx);
    expected += std::log(sum) + mx - logits0[r * stride + labels[r]];
    expected_correct += arg == labels[r];
  }
  CHECK(l0 == Approx(0.5 * expected).epsilon(1e-6));
  CHECK(stats.host(ops)[1] == static_cast<float>(expected_correct));
  for (int64_t r = 0; r < rows; ++r) CHECK(grad[r * stride + 7] == 0.0f);
  check_directions(
      "d_logits", [&](const auto& x) { return run(x, nullptr); }, logits0, grad);
  // In place (d_logits aliasing logits) gives the same gradient.
  HostTensor inplace(ops, logits0);
  CrossEntropyParams p;
  p.logits = inplace;
  p.d_logits = inplace;
  p.labels = tl;
  p.stats = stats;
  p.rows = rows;
  p.classes = classes;
  p.row_stride = stride;
  p.grad_scale = 0.5f;
  ops.cross_entropy(p);
  const auto g2 = inplace.host(ops);
  for (size_t i = 0; i < grad.size(); ++i) CHECK(g2[i] == Approx(grad[i]).margin(1e-7));
  CHECK(0.5 * stats.host(ops)[0] == Approx(l0).epsilon(1e-6));
}

TEST_CASE("gather rows and scatter-add rows are adjoint, with repeated indices") {
  CpuOps ops;
  const int64_t rows = 6, width = 5, count = 4;
  const std::vector<int32_t> idx{2, 0, 2, 5};
  const auto src = random_vector(rows * width, 61), r = random_vector(count * width, 62);
  HostTensor ts(ops, src), ti(ops, idx), out(ops, std::vector<float>(count * width)),
      d_src(ops, std::vector<float>(rows * width, 1.0f)), d_out(ops, r);
  ops.gather_rows(GatherRowsParams{ts, ti, out, count, width});
  ops.scatter_add_rows(ScatterAddRowsParams{d_out, ti, d_src, count, width});
  const auto o = out.host(ops), ds = d_src.host(ops);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t c = 0; c < width; ++c) CHECK(o[i * width + c] == src[idx[i] * width + c]);
  // <gather(src), r> == <src, scatter(r)>, and scatter accumulates onto the 1.0 start.
  double lhs = dot(o, r), rhs = 0;
  for (int64_t i = 0; i < rows * width; ++i) rhs += static_cast<double>(src[i]) * (ds[i] - 1.0f);
  CHECK(lhs == Approx(rhs).epsilon(1e-5));
  CHECK(ds[1 * width] == 1.0f);  // row 1 never gathered
  const std::vector<int32_t> bad{0, 6, 1, 1};
  HostTensor tb(ops, bad);
  CHECK_THROWS_WITH(ops.gather_rows(GatherRowsParams{ts, tb, out, count, width}),
                    Catch::Contains("indices[1] = 6"));
}

TEST_CASE("the vectorized exp, tanh and GELU agree with the standard library") {
  // Whole arrays (an odd length, so the vector loops run their remainder too), against the
  // formulas evaluated in double with std::exp and std::tanh, not against the project's own GELU.
  std::vector<float> xs;
  for (float x = -80.0f; x <= 80.0f; x += 0.01337f) xs.push_back(x);
  if (xs.size() % 2 == 0) xs.push_back(81.0f);
  const auto n = static_cast<int64_t>(xs.size());
  std::vector<float> exps(xs.size()), tanhs(xs.size());
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    exps[i] = cpu::fast_exp(xs[i]);
    tanhs[i] = cpu::fast_tanh(xs[i]);
  }
  double worst_exp = 0, worst_tanh = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    if (x > -87.0 && x < 88.0)
      worst_exp = std::max(worst_exp, std::fabs(exps[i] / std::exp(x) - 1.0));
    worst_tanh = std::max(worst_tanh, std::fabs(tanhs[i] - std::tanh(x)));
  }

  std::vector<float> gx;
  for (float x = -8.0f; x <= 8.0f; x += 0.001f) gx.push_back(x);
  if (gx.size() % 2 == 0) gx.push_back(8.5f);
  std::vector<float> gelu(gx.size()), grad(gx.size(), 1.0f);
  cpu::gelu_forward(gx.data(), gelu.data(), static_cast<int64_t>(gx.size()));
  cpu::gelu_backward(gx.data(), grad.data(), static_cast<int64_t>(gx.size()));
  const double c = std::sqrt(2.0 / std::acos(-1.0)), k = 0.044715;
  double worst_gelu = 0;
  for (size_t i = 0; i < gx.size(); ++i) {
    const double x = gx[i];
    const double t = std::tanh(c * (x + k * x * x * x));
    const double want = 0.5 * x * (1.0 + t);
    const double want_grad =
        0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * k * x * x);
    // Relative to max(1, |x|): GELU grows like x.
    const double scale = std::max(1.0, std::fabs(x));
    worst_gelu = std::max(
        {worst_gelu, std::fabs(gelu[i] - want) / scale, std::fabs(grad[i] - want_grad) / scale});
  }
  CHECK(worst_exp < 5e-7);
  CHECK(worst_tanh < 5e-7);
  CHECK(worst_gelu < 1e-6);
  CHECK(cpu::fast_exp(-200.0f) < 1e-37f);
  CHECK(std::isfinite(cpu::fast_exp(200.0f)));
  CHECK(cpu::fast_tanh(50.0f) == 1.0f);
  CHECK(cpu::fast_tanh(-50.0f) == -1.0f);
}
