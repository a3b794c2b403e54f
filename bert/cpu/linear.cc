// CpuOps: dense layers (OpenBLAS sgemm on the OpenMP threads) with bias and GELU/tanh epilogues,
// and their backward.
#include <omp.h>

#include <cmath>
#include <cstring>

#include "bert/cpu/check.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/cpu/gemm.h"
#include "bert/cpu/math.h"

namespace mlbert::bert {

namespace {

// Runs body(begin, end) over [0, count) split into one contiguous chunk per thread.
template <typename Body>
void parallel_chunks(int64_t count, const Body& body) {
#pragma omp parallel if (count > cpu::kMinParallelWork)
  {
    const int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
    body(count * thread / threads, count * (thread + 1) / threads);
  }
}

void check_linear_shapes(const char* op, const Tensor& input, const Tensor& weight, int64_t m,
                         int64_t n, int64_t k, int batch, size_t weight_stride) {
  cpu::require(m >= 0 && n > 0 && k > 0 && batch >= 1, op, "need m >= 0, n > 0, k > 0, batch >= 1");
  cpu::require(batch == 1 || weight_stride >= static_cast<size_t>(n * k), op,
               "weight_stride smaller than one weight");
  cpu::require_tensor(input, DType::f32, m * k, op, "input");
  cpu::require_tensor(weight, DType::f32, (batch - 1) * weight_stride + n * k, op, "weight");
}

// grad *= act'(x) over count elements; x is the pre-activation (gelu, gelu_erf) or the output
// (tanh).
void apply_activation_grad(Activation activation, const float* x, float* grad, int64_t count) {
  if (activation == Activation::gelu) {
    parallel_chunks(count, [&](int64_t begin, int64_t end) {
      cpu::gelu_backward(x + begin, grad + begin, end - begin);
    });
  } else if (activation == Activation::gelu_erf) {
#pragma omp parallel for schedule(static) if (count > cpu::kMinParallelWork)
    for (int64_t i = 0; i < count; ++i) grad[i] *= gelu_erf_grad(x[i]);
  } else if (activation == Activation::tanh) {
#pragma omp parallel for schedule(static) if (count > cpu::kMinParallelWork)
    for (int64_t i = 0; i < count; ++i) grad[i] *= 1.0f - x[i] * x[i];
  }
}

// sums[c] += column sums of g [rows, cols]: each thread owns a column range and walks all rows.
void add_column_sums(const float* g, int64_t rows, int64_t cols, float* sums) {
#pragma omp parallel for schedule(static) if (rows * cols > cpu::kMinParallelWork)
  for (int64_t c0 = 0; c0 < cols; c0 += 64) {
    const int64_t c1 = c0 + 64 < cols ? c0 + 64 : cols;
    float acc[64] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = g + r * cols;
      for (int64_t c = c0; c < c1; ++c) acc[c - c0] += row[c];
    }
    for (int64_t c = c0; c < c1; ++c) sums[c] += acc[c - c0];
  }
}

}  // namespace

void CpuOps::linear_forward(const LinearForwardParams& p) {
  const char* op = "linear_forward";
  check_linear_shapes(op, p.input, p.weight, p.m, p.n, p.k, p.batch, p.weight_stride);
  const size_t out_stride = p.batch > 1 ? p.out_stride : 0;
  const size_t bias_stride = p.batch > 1 ? p.bias_stride : 0;
  cpu::require(p.batch == 1 || out_stride >= static_cast<size_t>(p.m * p.n), op,
               "out_stride smaller than one output");
  cpu::require_tensor(p.out, DType::f32, (p.batch - 1) * out_stride + p.m * p.n, op, "out");
  if (p.bias.defined()) {
    cpu::require_tensor(p.bias, DType::f32, (p.batch - 1) * bias_stride + p.n, op, "bias");
  }
  if (p.activation != Activation::none) {
    cpu::require_tensor(p.pre_activation, DType::f32, (p.batch - 1) * out_stride + p.m * p.n, op,
                        "pre_activation");
  }
  if (p.m == 0) return;
  for (int b = 0; b < p.batch; ++b) {
    const float* weight = p.weight.as<const float>() + b * p.weight_stride;
    // With an activation the GEMM writes the pre-activation, the epilogue then writes out.
    float* target =
        (p.activation == Activation::none ? p.out.as<float>() : p.pre_activation.as<float>()) +
        b * out_stride;
    float beta = 0.0f;
    if (p.bias.defined()) {
      const float* bias = p.bias.as<const float>() + b * bias_stride;
#pragma omp parallel for schedule(static) if (p.m * p.n > cpu::kMinParallelWork)
      for (int64_t r = 0; r < p.m; ++r) std::memcpy(target + r * p.n, bias, sizeof(float) * p.n);
      beta = 1.0f;
    }
    cpu::sgemm(false, p.weight_transposed, p.m, p.n, p.k, 1.0f, p.input.as<const float>(), p.k,
               weight, p.weight_transposed ? p.k : p.n, beta, target, p.n);
    if (p.activation == Activation::none) continue;
    float* out = p.out.as<float>() + b * out_stride;
    const int64_t count = p.m * p.n;
    if (p.activation == Activation::gelu) {
      parallel_chunks(count, [&](int64_t begin, int64_t end) {
        cpu::gelu_forward(target + begin, out + begin, end - begin);
      });
    } else if (p.activation == Activation::gelu_erf) {
#pragma omp parallel for schedule(static) if (count > cpu::kMinParallelWork)
      for (int64_t i = 0; i < count; ++i) out[i] = gelu_erf(target[i]);
    } else {
#pragma omp parallel for schedule(static) if (count > cpu::kMinParallelWork)
      for (int64_t i = 0; i < count; ++i) out[i] = std::tanh(target[i]);
    }
  }
}

void CpuOps::linear_backward(const LinearBackwardParams& p) {
  const char* op = "linear_backward";
  check_linear_shapes(op, p.input, p.weight, p.m, p.n, p.k, p.batch, p.weight_stride);
  const size_t out_stride = p.batch > 1 ? p.out_stride : 0;
  const size_t bias_stride = p.batch > 1 ? p.bias_stride : 0;
  const size_t weight_stride = p.batch > 1 ? p.weight_stride : 0;
  const size_t out_numel = (p.batch - 1) * out_stride + p.m * p.n;
  cpu::require_tensor(p.d_out, DType::f32, out_numel, op, "d_out");
  cpu::require_tensor(p.d_weight, DType::f32, (p.batch - 1) * weight_stride + p.n * p.k, op,
                      "d_weight");
  if (p.d_bias.defined()) {
    cpu::require_tensor(p.d_bias, DType::f32, (p.batch - 1) * bias_stride + p.n, op, "d_bias");
  }
  if (p.d_input.defined()) cpu::require_tensor(p.d_input, DType::f32, p.m * p.k, op, "d_input");
  if (p.activation == Activation::gelu || p.activation == Activation::gelu_erf) {
    cpu::require_tensor(p.pre_activation, DType::f32, out_numel, op, "pre_activation");
  } else if (p.activation == Activation::tanh) {
    cpu::require_tensor(p.out, DType::f32, out_numel, op, "out");
  }
  if (p.input_activation != Activation::none) {
    require_input_activation_fusable(op, p);
    cpu::require_tensor(p.input_pre_activation, DType::f32, p.m * p.k, op, "input_pre_activation");
    if (p.d_input_bias.defined())
      cpu::require_tensor(p.d_input_bias, DType::f32, p.k, op, "d_input_bias");
  }
  if (p.m == 0) {
    if (p.d_input.defined() && !p.accumulate_d_input) fill_zero(p.d_input);
    return;
  }
  for (int b = 0; b < p.batch; ++b) {
    float* d_pre = p.d_out.as<float>() + b * out_stride;
    const int64_t count = p.m * p.n;
    const Tensor& act_x = p.activation == Activation::tanh ? p.out : p.pre_activation;
    if (p.activation != Activation::none)
      apply_activation_grad(p.activation, act_x.as<const float>() + b * out_stride, d_pre, count);
    const float* weight = p.weight.as<const float>() + b * weight_stride;
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    if (p.d_input.defined()) {
      const float beta = (b == 0 && !p.accumulate_d_input) ? 0.0f : 1.0f;
      // d_input[M,K] = d_pre[M,N] . W^T, with W stored [K,N] (or [N,K] when transposed).
      cpu::sgemm(false, !p.weight_transposed, m, k, n, 1.0f, d_pre, n, weight,
                 p.weight_transposed ? k : n, beta, p.d_input.as<float>(), k);
    }
    float* d_weight = p.d_weight.as<float>() + b * weight_stride;
    if (p.weight_transposed) {
      // d_W[N,K] += d_pre^T . input
      cpu::sgemm(true, false, n, k, m, 1.0f, d_pre, n, p.input.as<const float>(), k, 1.0f, d_weight,
                 k);
    } else {
      // d_W[K,N] += input^T . d_pre
      cpu::sgemm(true, false, k, n, m, 1.0f, p.input.as<const float>(), k, d_pre, n, 1.0f, d_weight,
                 n);
    }
    if (p.d_bias.defined())
      add_column_sums(d_pre, p.m, p.n, p.d_bias.as<float>() + b * bias_stride);
  }
  if (p.input_activation != Activation::none) {
    float* d_input = p.d_input.as<float>();
    apply_activation_grad(p.input_activation, p.input_pre_activation.as<const float>(), d_input,
                          p.m * p.k);
    if (p.d_input_bias.defined()) add_column_sums(d_input, p.m, p.k, p.d_input_bias.as<float>());
  }
}

}  // namespace mlbert::bert
