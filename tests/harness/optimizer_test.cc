// Optimizer step: LAMB with the reference semantics (bias-corrected moments, trust ratio, no decay
// and no trust ratio for biases and LayerNorm), Adam (L2) and AdamW (decoupled), at the rate of the
// LR schedule, checked against a double-precision transcription of the formulas.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "bert/cpu/cpu_ops.h"
#include "bert/parameters.h"
#include "harness/train/optimizer.h"

using namespace mlbert;

namespace {

struct Fixture {
  bert::CpuOps ops;
  bert::ParameterStore params{bert::BertConfig::preset("tiny"), ops};
  std::vector<float> grad;

  Fixture() {
    params.init_truncated_normal(11);
    grad.resize(params.flat_size());
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0, 0.01f);
    for (const auto& info : params.infos())
      for (std::size_t i = 0; i < info.numel; ++i) grad[info.offset + i] = normal(rng);
    upload_grad();
  }
  void upload_grad() {
    ops.copy_from_host(params.grad(), grad.data(), grad.size() * sizeof(float));
  }
};

harness::OptimizerSpec spec_of(harness::OptimizerKind kind) {
  harness::OptimizerSpec s;
  s.kind = kind;
  s.learning_rate = 1e-3;
  s.beta1 = 0.8;
  s.beta2 = 0.95;
  s.epsilon = 1e-6;
  s.weight_decay = 0.1;
  return s;
}

harness::LrScheduleSpec linear_decay(std::int64_t steps) {
  harness::LrScheduleSpec s;
  s.training_steps = s.decay_steps = steps;
  return s;
}

// Two updates of the formula in double for one tensor, from zero moments.
std::vector<double> reference_two_steps(harness::OptimizerKind kind, std::vector<double> p,
                                        const std::vector<double>& g, double grad_scale, bool decay,
                                        const harness::OptimizerSpec& s, const double lrs[2]) {
  std::vector<double> m(p.size(), 0), v(p.size(), 0), u(p.size());
  for (int step = 1; step <= 2; ++step) {
    const double c1 = 1 - std::pow(s.beta1, step), c2 = 1 - std::pow(s.beta2, step);
    for (std::size_t i = 0; i < p.size(); ++i) {
      double gi = g[i] * grad_scale;
      if (kind == harness::OptimizerKind::adam && decay) gi += s.weight_decay * p[i];
      m[i] = s.beta1 * m[i] + (1 - s.beta1) * gi;
      v[i] = s.beta2 * v[i] + (1 - s.beta2) * gi * gi;
      u[i] = (m[i] / c1) / (std::sqrt(v[i] / c2) + s.epsilon);
      if (kind != harness::OptimizerKind::adam && decay) u[i] += s.weight_decay * p[i];
    }
    double ratio = 1;
    if (kind == harness::OptimizerKind::lamb && decay) {
      double pn = 0, un = 0;
      for (std::size_t i = 0; i < p.size(); ++i) {
        pn += p[i] * p[i];
        un += u[i] * u[i];
      }
      if (pn > 0 && un > 0) ratio = std::sqrt(pn) / std::sqrt(un);
    }
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= lrs[step - 1] * ratio * u[i];
  }
  return p;
}

}  // namespace

TEST_CASE("LAMB, Adam and AdamW steps follow their formulas at the scheduled rate", "[optimizer]") {
  for (auto kind : {harness::OptimizerKind::lamb, harness::OptimizerKind::adam,
                    harness::OptimizerKind::adamw}) {
    INFO(harness::to_string(kind));
    Fixture f;
    const auto spec = spec_of(kind);
    harness::Optimizer optimizer(f.params, spec, linear_decay(10));
    const auto before = f.params.download_master();
    const float grad_scale = 0.5f;
    const double lr0 = optimizer.step(grad_scale);
    f.upload_grad();  // LAMB used the gradient buffer as scratch
    const double lr1 = optimizer.step(grad_scale);
    CHECK(lr0 == Approx(1e-3));
    CHECK(lr1 == Approx(0.9e-3));
    CHECK(optimizer.updates_applied() == 2);
    const double lrs[2] = {lr0, lr1};
    const auto after = f.params.download_master();
    // A decaying kernel and a non-decaying LayerNorm gamma and bias.
    for (const char* name :
         {"bert/encoder/layer_1/intermediate/dense/kernel",
          "bert/encoder/layer_0/attention/output/LayerNorm/gamma", "cls/predictions/output_bias"}) {
      INFO(name);
      const auto& info = f.params.info(name);
      std::vector<double> p(before.begin() + info.offset,
                            before.begin() + info.offset + info.numel);
      std::vector<double> g(f.grad.begin() + info.offset,
                            f.grad.begin() + info.offset + info.numel);
      const auto expected =
          reference_two_steps(kind, p, g, grad_scale, info.weight_decay, spec, lrs);
      double max_error = 0, max_change = 0;
      for (std::size_t i = 0; i < info.numel; ++i) {
        max_error = std::max(max_error, std::abs(after[info.offset + i] - expected[i]));
        max_change = std::max(max_change, std::abs(expected[i] - p[i]));
      }
      CHECK(max_change > 1e-5);  // the update is not a no-op
      CHECK(max_error < 1e-3 * max_change);
    }
  }
}

TEST_CASE("no decay and no trust ratio for biases and LayerNorm", "[optimizer]") {
  Fixture f;
  for (const auto& info : f.params.infos()) {
    const bool excluded = info.name.find("bias") != std::string::npos ||
                          info.name.find("LayerNorm") != std::string::npos;
    INFO(info.name);
    CHECK(info.weight_decay == !excluded);
  }
  // One LAMB step from weights scaled so that every tensor's trust ratio ||p|| / ||u|| is far
  // from 1: an update of exactly lr * u shows that none was applied, lr * ratio * u that it was.
  auto master = f.params.download_master();
  for (float& w : master) w = 100.0f * w + (w >= 0 ? 10.0f : -10.0f);
  f.params.upload_master(master);
  auto spec = spec_of(harness::OptimizerKind::lamb);
  spec.learning_rate = 0.05;  // updates well above the float spacing of weights near 10
  spec.weight_decay = 0.01;   // small against |mhat / sqrt(vhat)| = 1, so ||u|| stays near 1
  harness::Optimizer optimizer(f.params, spec, linear_decay(10));
  const double lr = optimizer.step(1.0f);
  const auto after = f.params.download_master();
  int excluded_tensors = 0;
  for (const auto& info : f.params.infos()) {
    INFO(info.name);
    // Step 1 from zero moments: mhat = g, vhat = g^2.
    std::vector<double> u(info.numel);
    double p_norm = 0, u_norm = 0;
    for (std::size_t i = 0; i < info.numel; ++i) {
      const double g = f.grad[info.offset + i], p = master[info.offset + i];
      u[i] = g / (std::fabs(g) + spec.epsilon) + (info.weight_decay ? spec.weight_decay * p : 0.0);
      p_norm += p * p;
      u_norm += u[i] * u[i];
    }
    const double trust_ratio = std::sqrt(p_norm) / std::sqrt(u_norm);
    REQUIRE((trust_ratio > 5 || trust_ratio < 0.2));  // applying it or not is visible
    const double ratio = info.weight_decay ? trust_ratio : 1.0;
    double error = 0, change = 0;
    for (std::size_t i = 0; i < info.numel; ++i) {
      const double want = lr * ratio * u[i];
      const double got = master[info.offset + i] - after[info.offset + i];
      error = std::max(error, std::fabs(got - want));
      change = std::max(change, std::fabs(want));
    }
    CHECK(error < 1e-3 * change);
    excluded_tensors += !info.weight_decay;
  }
  CHECK(excluded_tensors > 10);
}
