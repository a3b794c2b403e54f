// CpuOps: multi-tensor optimizer primitives over the flat f32 buffers (L2 norms with an inf/nan
// flag, scaling, Adam/AdamW and LAMB). Norms accumulate in double.
#include <cmath>
#include <string>
#include <vector>

#include "bert/cpu/check.h"
#include "bert/cpu/cpu_ops.h"

namespace mlbert::bert {

namespace {

constexpr int64_t kParallelThreshold = 1 << 14;  // elements below which a loop stays serial

void check_segments(const char* op, std::span<const TensorSegment> segments, size_t numel,
                    const char* field) {
  for (size_t i = 0; i < segments.size(); ++i) {
    cpu::require(segments[i].offset <= numel && segments[i].numel <= numel - segments[i].offset, op,
                 "segment " + std::to_string(i) + " lies outside " + field + " (" +
                     std::to_string(numel) + " elements)");
  }
}

// Sum of squares of x[0..n) in double, and whether any element is inf or nan.
double sum_of_squares(const float* x, int64_t n, bool* nonfinite) {
  double sum = 0;
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum) reduction(| : bad) if (n > kParallelThreshold)
  for (int64_t i = 0; i < n; ++i) {
    const double value = x[i];
    sum += value * value;
    bad |= std::isfinite(x[i]) ? 0 : 1;
  }
  *nonfinite = bad != 0;
  return sum;
}

struct MomentParams {
  float beta1, beta2, eps, grad_scale, bias_correction1, bias_correction2;
};

// Updates m and v for one element and returns mhat / (sqrt(vhat) + eps).
inline float adam_direction(float g, float& m, float& v, const MomentParams& mp) {
  m = mp.beta1 * m + (1.0f - mp.beta1) * g;
  v = mp.beta2 * v + (1.0f - mp.beta2) * g * g;
  const float m_hat = m / mp.bias_correction1;
  const float v_hat = v / mp.bias_correction2;
  return m_hat / (std::sqrt(v_hat) + mp.eps);
}

MomentParams moment_params(float beta1, float beta2, float eps, float grad_scale, int64_t step,
                           bool bias_correction, const char* op) {
  cpu::require(step >= 1, op, "step counts from 1");
  MomentParams mp{beta1, beta2, eps, grad_scale, 1.0f, 1.0f};
  if (bias_correction) {
    mp.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), step));
    mp.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), step));
  }
  return mp;
}

template <typename Params>
void check_optimizer_buffers(const Params& p, const char* op) {
  const size_t n = p.master.numel;
  cpu::require_tensor(p.master, DType::f32, n, op, "master");
  cpu::require_tensor(p.grad, DType::f32, n, op, "grad");
  cpu::require_tensor(p.exp_avg, DType::f32, n, op, "exp_avg");
  cpu::require_tensor(p.exp_avg_sq, DType::f32, n, op, "exp_avg_sq");
  if (p.compute.defined()) cpu::require_tensor(p.compute, DType::f32, n, op, "compute");
  check_segments(op, p.segments, n, "master");
}

}  // namespace

void CpuOps::l2_norm(const L2NormParams& p) {
  const char* op = "l2_norm";
  cpu::require(p.buffer.dtype == DType::f32, op, "buffer must be f32");
  check_segments(op, p.segments, p.buffer.numel, "buffer");
  cpu::require_tensor(p.total, DType::f32, 2, op, "total");
  if (p.segment_norms.defined()) {
    cpu::require_tensor(p.segment_norms, DType::f32, p.segments.size(), op, "segment_norms");
  }
  double total = 0;
  bool any_nonfinite = false;
  for (size_t i = 0; i < p.segments.size(); ++i) {
    bool nonfinite = false;
    const double sq = sum_of_squares(p.buffer.as<const float>() + p.segments[i].offset,
                                     static_cast<int64_t>(p.segments[i].numel), &nonfinite);
    any_nonfinite |= nonfinite;
    total += sq;
    if (p.segment_norms.defined())
      p.segment_norms.as<float>()[i] = static_cast<float>(std::sqrt(sq));
  }
  p.total.as<float>()[0] = static_cast<float>(std::sqrt(total));
  p.total.as<float>()[1] = any_nonfinite ? 1.0f : 0.0f;
}

void CpuOps::scale(Tensor x, float factor) {
  cpu::require(x.dtype == DType::f32, "scale", "x must be f32");
  float* data = x.as<float>();
  const int64_t n = static_cast<int64_t>(x.numel);
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t i = 0; i < n; ++i) data[i] *= factor;
}

void CpuOps::adam_update(const AdamParams& p) {
  const char* op = "adam_update";
  check_optimizer_buffers(p, op);
  const MomentParams mp =
      moment_params(p.beta1, p.beta2, p.eps, p.grad_scale, p.step, p.bias_correction, op);
  for (const TensorSegment& segment : p.segments) {
    float* w = p.master.as<float>() + segment.offset;
    const float* g = p.grad.as<const float>() + segment.offset;
    float* m = p.exp_avg.as<float>() + segment.offset;
    float* v = p.exp_avg_sq.as<float>() + segment.offset;
    float* c = p.compute.defined() ? p.compute.as<float>() + segment.offset : nullptr;
    const float wd = segment.weight_decay ? p.weight_decay : 0.0f;
    const int64_t n = static_cast<int64_t>(segment.numel);
    const bool l2 = p.mode == AdamMode::adam_l2;
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) {
      float grad = g[i] * mp.grad_scale;
      if (l2) grad += wd * w[i];
      float update = adam_direction(grad, m[i], v[i], mp);
      if (!l2) update += wd * w[i];
      w[i] -= p.lr * update;
      if (c) c[i] = w[i];
    }
  }
}

void CpuOps::lamb_update(const LambParams& p) {
  const char* op = "lamb_update";
  check_optimizer_buffers(p, op);
  const MomentParams mp =
      moment_params(p.beta1, p.beta2, p.eps, p.grad_scale, p.step, p.bias_correction, op);
  for (const TensorSegment& segment : p.segments) {
    float* w = p.master.as<float>() + segment.offset;
    float* g = p.grad.as<float>() + segment.offset;  // becomes the update u
    float* m = p.exp_avg.as<float>() + segment.offset;
    float* v = p.exp_avg_sq.as<float>() + segment.offset;
    float* c = p.compute.defined() ? p.compute.as<float>() + segment.offset : nullptr;
    const float wd = segment.weight_decay ? p.weight_decay : 0.0f;
    const int64_t n = static_cast<int64_t>(segment.numel);
    double weight_sq = 0, update_sq = 0;
#pragma omp parallel for schedule(static) reduction(+ : weight_sq, update_sq) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) {
      const float update = adam_direction(g[i] * mp.grad_scale, m[i], v[i], mp) + wd * w[i];
      g[i] = update;
      weight_sq += static_cast<double>(w[i]) * w[i];
      update_sq += static_cast<double>(update) * update;
    }
    float ratio = 1.0f;
    if ((segment.weight_decay || p.trust_ratio_without_decay) && weight_sq > 0 && update_sq > 0) {
      ratio = static_cast<float>(std::sqrt(weight_sq) / std::sqrt(update_sq));
    }
    const float step_size = p.lr * ratio;
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i) {
      w[i] -= step_size * g[i];
      if (c) c[i] = w[i];
    }
  }
}

}  // namespace mlbert::bert
