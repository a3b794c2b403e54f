// Multi-tensor optimizer primitives against straightforward double-precision references.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "bert/cpu/cpu_ops.h"
#include "tests/bert/test_util.h"

using namespace mlbert::bert;
using mlbert::test::HostTensor;
using mlbert::test::random_vector;

namespace {

// Two decaying segments and one without decay, with gaps that must stay untouched.
const std::vector<TensorSegment> kSegments{{0, 10, true}, {16, 7, false}, {32, 20, true}};
constexpr size_t kFlat = 64;

struct State {
  std::vector<double> w, g, m, v;
};

State initial_state() {
  State s;
  auto w = random_vector(kFlat, 1), g = random_vector(kFlat, 2, 0.1f),
       m = random_vector(kFlat, 3, 0.01f), v = random_vector(kFlat, 4, 0.01f);
  for (auto& x : v) x = x * x;
  s.w.assign(w.begin(), w.end());
  s.g.assign(g.begin(), g.end());
  s.m.assign(m.begin(), m.end());
  s.v.assign(v.begin(), v.end());
  return s;
}

std::vector<float> as_float(const std::vector<double>& d) {
  return std::vector<float>(d.begin(), d.end());
}

}  // namespace

TEST_CASE("l2_norm gives per-segment and global norms and flags inf/nan") {
  CpuOps ops;
  auto x = random_vector(kFlat, 5);
  HostTensor buf(ops, x), norms(ops, std::vector<float>(3)), total(ops, std::vector<float>(2));
  ops.l2_norm(L2NormParams{buf, kSegments, norms, total});
  double all = 0;
  for (size_t i = 0; i < kSegments.size(); ++i) {
    double sq = 0;
    for (size_t e = 0; e < kSegments[i].numel; ++e)
      sq += double(x[kSegments[i].offset + e]) * x[kSegments[i].offset + e];
    all += sq;
    CHECK(norms.host(ops)[i] == Approx(std::sqrt(sq)).epsilon(1e-6));
  }
  CHECK(total.host(ops)[0] == Approx(std::sqrt(all)).epsilon(1e-6));
  CHECK(total.host(ops)[1] == 0.0f);
  x[12] = std::numeric_limits<float>::infinity();  // in a gap: not visited
  buf.set(ops, x);
  ops.l2_norm(L2NormParams{buf, kSegments, {}, total});
  CHECK(total.host(ops)[1] == 0.0f);
  x[40] = std::numeric_limits<float>::quiet_NaN();
  buf.set(ops, x);
  ops.l2_norm(L2NormParams{buf, kSegments, {}, total});
  CHECK(total.host(ops)[1] == 1.0f);
  std::vector<TensorSegment> outside{{60, 10, true}};
  CHECK_THROWS_WITH(ops.l2_norm(L2NormParams{buf, outside, {}, total}),
                    Catch::Contains("segment 0"));
}

TEST_CASE("scale multiplies every element") {
  CpuOps ops;
  const auto x = random_vector(100, 6);
  HostTensor t(ops, x);
  ops.scale(t, -0.25f);
  const auto y = t.host(ops);
  for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == x[i] * -0.25f);
}

TEST_CASE("adam_update matches the Adam and AdamW formulas, with bias correction and grad scale") {
  CpuOps ops;
  for (const AdamMode mode : {AdamMode::adamw, AdamMode::adam_l2}) {
    State s = initial_state();
    HostTensor w(ops, as_float(s.w)), g(ops, as_float(s.g)), m(ops, as_float(s.m)),
        v(ops, as_float(s.v)), compute(ops, std::vector<float>(kFlat));
    AdamParams p;
    p.master = w;
    p.grad = g;
    p.exp_avg = m;
    p.exp_avg_sq = v;
    p.compute = compute;
    p.segments = kSegments;
    p.lr = 1e-3f;
    p.beta1 = 0.8f;
    p.beta2 = 0.85f;
    p.eps = 1e-6f;
    p.weight_decay = 0.01f;
    p.grad_scale = 0.5f;
    p.step = 3;
    p.mode = mode;
    ops.adam_update(p);
    const auto w1 = w.host(ops), m1 = m.host(ops), v1 = v.host(ops), c1 = compute.host(ops);
    std::vector<bool> visited(kFlat, false);
    for (const auto& seg : kSegments) {
      for (size_t e = seg.offset; e < seg.offset + seg.numel; ++e) {
        visited[e] = true;
        const double wd = seg.weight_decay ? 0.01 : 0.0;
        double grad = s.g[e] * 0.5;
        if (mode == AdamMode::adam_l2) grad += wd * float(s.w[e]);
        const double m_ref = 0.8 * float(s.m[e]) + 0.2 * grad;
        const double v_ref = 0.85 * float(s.v[e]) + 0.15 * grad * grad;
        const double mhat = m_ref / (1 - std::pow(0.8, 3)), vhat = v_ref / (1 - std::pow(0.85, 3));
        double update = mhat / (std::sqrt(vhat) + 1e-6);
        if (mode == AdamMode::adamw) update += wd * float(s.w[e]);
        CHECK(m1[e] == Approx(m_ref).epsilon(1e-5));
        CHECK(v1[e] == Approx(v_ref).epsilon(1e-5));
        CHECK(w1[e] == Approx(float(s.w[e]) - 1e-3 * update).epsilon(1e-5));
        CHECK(c1[e] == w1[e]);
      }
    }
    for (size_t e = 0; e < kFlat; ++e)
      if (!visited[e]) CHECK(w1[e] == float(s.w[e]));
  }
}

TEST_CASE("lamb_update applies per-tensor trust ratios as the MLPerf reference and NVIDIA do") {
  CpuOps ops;
  for (const bool nvlamb : {false, true}) {
    State s = initial_state();
    HostTensor w(ops, as_float(s.w)), g(ops, as_float(s.g)), m(ops, as_float(s.m)),
        v(ops, as_float(s.v));
    LambParams p;
    p.master = w;
    p.grad = g;
    p.exp_avg = m;
    p.exp_avg_sq = v;
    p.segments = kSegments;
    p.lr = 2e-3f;
    p.beta1 = 0.66f;
    p.beta2 = 0.996f;
    p.eps = 1e-6f;
    p.weight_decay = 0.01f;
    p.grad_scale = 1.0f;
    p.step = 1;
    p.trust_ratio_without_decay = nvlamb;
    ops.lamb_update(p);
    const auto w1 = w.host(ops);
    for (const auto& seg : kSegments) {
      const double wd = seg.weight_decay ? 0.01 : 0.0;
      std::vector<double> u(seg.numel);
      double wn = 0, un = 0;
      for (size_t i = 0; i < seg.numel; ++i) {
        const size_t e = seg.offset + i;
        const double grad = float(s.g[e]);
        const double m_ref = 0.66 * float(s.m[e]) + 0.34 * grad;
        const double v_ref = 0.996 * float(s.v[e]) + 0.004 * grad * grad;
        u[i] = (m_ref / (1 - 0.66)) / (std::sqrt(v_ref / (1 - 0.996)) + 1e-6) + wd * float(s.w[e]);
        wn += double(float(s.w[e])) * float(s.w[e]);
        un += u[i] * u[i];
      }
      const double ratio = (seg.weight_decay || nvlamb) ? std::sqrt(wn) / std::sqrt(un) : 1.0;
      for (size_t i = 0; i < seg.numel; ++i) {
        const size_t e = seg.offset + i;
        INFO("element " << e << " nvlamb " << nvlamb);
        CHECK(w1[e] == Approx(float(s.w[e]) - 2e-3 * ratio * u[i]).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("lamb trust ratio is 1 when the weights are all zero") {
  CpuOps ops;
  std::vector<float> w(8, 0.0f), g(8, 1.0f), m(8, 0.0f), v(8, 0.0f);
  HostTensor tw(ops, w), tg(ops, g), tm(ops, m), tv(ops, v);
  const std::vector<TensorSegment> seg{{0, 8, true}};
  LambParams p;
  p.master = tw;
  p.grad = tg;
  p.exp_avg = tm;
  p.exp_avg_sq = tv;
  p.segments = seg;
  p.lr = 0.1f;
  p.eps = 0.0f;
  ops.lamb_update(p);
  // u = mhat / sqrt(vhat) = 1 (bias corrected), ratio 1 because ||w|| == 0.
  for (float x : tw.host(ops)) CHECK(x == Approx(-0.1f));
}
