// Branch-free float math the compiler vectorizes: exp (Cody-Waite reduction + degree-6 Taylor,
// ~2e-7 relative error), tanh from it, and the GELU (tanh form) forward/backward over arrays.
#pragma once
#include <cstdint>
#include <cstring>

namespace mlbert::bert::cpu {

inline float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860682030941723e-6f;
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float scaled = x * kLog2e;
  const int32_t n = static_cast<int32_t>(scaled + (scaled >= 0.0f ? 0.5f : -0.5f));
  const float nf = static_cast<float>(n);
  const float r = (x - nf * kLn2Hi) - nf * kLn2Lo;  // |r| <= ln2/2
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

inline float fast_tanh(float x) {
  return 1.0f - 2.0f / (fast_exp(2.0f * x) + 1.0f);
}

inline constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
inline constexpr float kGeluCubic = 0.044715f;

// y[i] = gelu_tanh(x[i])
inline void gelu_forward(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = fast_tanh(kGeluSqrt2OverPi * (v + kGeluCubic * v * v * v));
    y[i] = 0.5f * v * (1.0f + t);
  }
}

// dy[i] *= gelu_tanh'(x[i])
inline void gelu_backward(const float* x, float* dy, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = fast_tanh(kGeluSqrt2OverPi * (v + kGeluCubic * v * v * v));
    const float d_inner = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
    dy[i] *= 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * d_inner;
  }
}

}  // namespace mlbert::bert::cpu
