// Helpers for the bert tests: seeded random host vectors, host<->backend tensors, and the
// directional finite-difference check used for every op and for the whole model.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "bert/config.h"
#include "bert/ops.h"

namespace mlbert::test {

// A two-layer BERT small enough for finite differences: hidden 16, 2 heads, FFN 24, 45 tokens
// (padded to 48), 12 positions.
inline bert::BertConfig small_bert_config() {
  bert::BertConfig c = bert::BertConfig::preset("tiny");
  c.vocab_size = 45;
  c.hidden_size = 16;
  c.num_attention_heads = 2;
  c.intermediate_size = 24;
  c.max_position_embeddings = 12;
  c.num_hidden_layers = 2;
  c.initializer_range = 0.3;
  return c;
}

inline std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A backend tensor initialized from host floats, released with the holder.
struct HostTensor {
  bert::Buffer buffer;
  HostTensor(bert::Ops& ops, const std::vector<float>& values)
      : buffer(ops, bert::DType::f32, values.size()) {
    ops.copy_from_host(buffer.tensor(), values.data(), values.size() * sizeof(float));
  }
  HostTensor(bert::Ops& ops, const std::vector<int32_t>& values)
      : buffer(ops, bert::DType::i32, values.size()) {
    ops.copy_from_host(buffer.tensor(), values.data(), values.size() * sizeof(int32_t));
  }
  operator const bert::Tensor&() const { return buffer.tensor(); }
  const bert::Tensor& t() const { return buffer.tensor(); }
  std::vector<float> host(bert::Ops& ops) const {
    std::vector<float> v(buffer.tensor().numel);
    ops.copy_to_host(v.data(), buffer.tensor(), v.size() * sizeof(float));
    return v;
  }
  void set(bert::Ops& ops, const std::vector<float>& values) {
    ops.copy_from_host(buffer.tensor(), values.data(), values.size() * sizeof(float));
  }
};

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// Relative error of the analytic directional derivative <grad, u> against the central difference
// (loss(x + eps u) - loss(x - eps u)) / (2 eps). `loss_at(x)` evaluates the scalar loss (in double)
// for input values x. Returns |fd - analytic| / max(|fd|, |analytic|, floor).
inline double directional_error(const std::function<double(const std::vector<float>&)>& loss_at,
                                const std::vector<float>& x, const std::vector<float>& grad,
                                uint32_t seed, double eps, double floor = 1e-3,
                                double* fd_out = nullptr, double* an_out = nullptr) {
  const std::vector<float> u = random_vector(x.size(), seed);
  std::vector<float> plus(x), minus(x);
  for (size_t i = 0; i < x.size(); ++i) {
    plus[i] = static_cast<float>(x[i] + eps * u[i]);
    minus[i] = static_cast<float>(x[i] - eps * u[i]);
  }
  // Use the perturbation actually representable in float.
  double analytic = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    analytic += static_cast<double>(grad[i]) * (static_cast<double>(plus[i]) - minus[i]);
  }
  analytic /= 2 * eps;
  const double fd = (loss_at(plus) - loss_at(minus)) / (2 * eps);
  if (fd_out) *fd_out = fd;
  if (an_out) *an_out = analytic;
  return std::fabs(fd - analytic) / std::max({std::fabs(fd), std::fabs(analytic), floor});
}

}  // namespace mlbert::test
