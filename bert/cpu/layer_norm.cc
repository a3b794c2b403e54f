// CpuOps: the fused (bias + dropout + residual + LayerNorm) block and the embedding layer
// (gather + sum + LayerNorm + dropout), forward and backward.
//
// Row statistics are accumulated in double; gamma/beta/bias gradients are reduced per thread and
// then summed in thread order, so results do not depend on scheduling.
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "bert/cpu/check.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/cpu/dropout.h"

namespace mlbert::bert {

namespace {

// mean/rstd of s[0..width) and out = (s - mean) * rstd * gamma + beta.
inline void normalize_row(const float* s, int64_t width, float eps, const float* gamma,
                          const float* beta, float* out, float* mean_out, float* rstd_out) {
  double sum = 0;
  for (int64_t c = 0; c < width; ++c) sum += s[c];
  const double mean = sum / static_cast<double>(width);
  double sq = 0;
  for (int64_t c = 0; c < width; ++c) {
    const double d = s[c] - mean;
    sq += d * d;
  }
  const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(width) + eps);
  const float mean_f = static_cast<float>(mean), rstd_f = static_cast<float>(rstd);
  for (int64_t c = 0; c < width; ++c) out[c] = (s[c] - mean_f) * rstd_f * gamma[c] + beta[c];
  *mean_out = mean_f;
  *rstd_out = rstd_f;
}

// d_s = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = d_out * gamma. Also adds d_out *
// xhat and d_out into the per-thread gamma/beta partial sums. d_s may alias d_out.
inline void normalize_row_backward(const float* d_out, const float* s, float mean, float rstd,
                                   const float* gamma, int64_t width, float* d_s,
                                   double* d_gamma_acc, double* d_beta_acc) {
  double sum_g = 0, sum_gx = 0;
  for (int64_t c = 0; c < width; ++c) {
    const float xhat = (s[c] - mean) * rstd;
    const float g = d_out[c] * gamma[c];
    sum_g += g;
    sum_gx += static_cast<double>(g) * xhat;
    d_gamma_acc[c] += static_cast<double>(d_out[c]) * xhat;
    d_beta_acc[c] += d_out[c];
  }
  const float mean_g = static_cast<float>(sum_g / static_cast<double>(width));
  const float mean_gx = static_cast<float>(sum_gx / static_cast<double>(width));
  for (int64_t c = 0; c < width; ++c) {
    const float xhat = (s[c] - mean) * rstd;
    d_s[c] = rstd * (d_out[c] * gamma[c] - mean_g - xhat * mean_gx);
  }
}

// Sums per-thread partial column sums (thread order) into an f32 gradient.
void add_partials(const std::vector<std::vector<double>>& partials, float* target, int64_t width) {
  if (!target) return;
  for (int64_t c = 0; c < width; ++c) {
    double sum = 0;
    for (const auto& partial : partials) sum += partial[c];
    target[c] += static_cast<float>(sum);
  }
}

void check_ids(const char* op, const Tensor& ids, int64_t tokens, size_t table_rows,
               const char* field) {
  cpu::require_tensor(ids, DType::i32, tokens, op, field);
  const int32_t* p = ids.as<const int32_t>();
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::require(p[t] >= 0 && static_cast<size_t>(p[t]) < table_rows, op,
                 std::string(field) + "[" + std::to_string(t) + "] = " + std::to_string(p[t]) +
                     " is outside the table's " + std::to_string(table_rows) + " rows");
  }
}

}  // namespace

void CpuOps::layer_norm_forward(const LayerNormForwardParams& p) {
  const char* op = "layer_norm_forward";
  const int64_t n = p.rows * p.width;
  cpu::require(p.width > 0 && p.rows >= 0, op, "need width > 0");
  cpu::require_tensor(p.x, DType::f32, n, op, "x");
  cpu::require_tensor(p.out, DType::f32, n, op, "out");
  cpu::require_tensor(p.ln_input, DType::f32, n, op, "ln_input");
  cpu::require_tensor(p.mean, DType::f32, p.rows, op, "mean");
  cpu::require_tensor(p.rstd, DType::f32, p.rows, op, "rstd");
  cpu::require_tensor(p.gamma, DType::f32, p.width, op, "gamma");
  cpu::require_tensor(p.beta, DType::f32, p.width, op, "beta");
  if (p.bias.defined()) cpu::require_tensor(p.bias, DType::f32, p.width, op, "bias");
  if (p.residual.defined()) cpu::require_tensor(p.residual, DType::f32, n, op, "residual");
  const float* x = p.x.as<const float>();
  const float* bias = p.bias.defined() ? p.bias.as<const float>() : nullptr;
  const float* residual = p.residual.defined() ? p.residual.as<const float>() : nullptr;
  float* s_all = p.ln_input.as<float>();
#pragma omp parallel if (n > cpu::kMinParallelWork)
  {
    std::vector<float> factors(p.width);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.rows; ++r) {
      const float* xr = x + r * p.width;
      float* s = s_all + r * p.width;
      cpu::dropout_factors(p.dropout, static_cast<uint64_t>(r) * p.width, p.width, factors.data());
      for (int64_t c = 0; c < p.width; ++c) {
        float h = bias ? xr[c] + bias[c] : xr[c];
        h *= factors[c];
        s[c] = residual ? h + residual[r * p.width + c] : h;
      }
      normalize_row(s, p.width, p.eps, p.gamma.as<const float>(), p.beta.as<const float>(),
                    p.out.as<float>() + r * p.width, p.mean.as<float>() + r,
                    p.rstd.as<float>() + r);
    }
  }
}

void CpuOps::layer_norm_backward(const LayerNormBackwardParams& p) {
  const char* op = "layer_norm_backward";
  const int64_t n = p.rows * p.width;
  cpu::require(p.width > 0 && p.rows >= 0, op, "need width > 0");
  cpu::require_tensor(p.d_out, DType::f32, n, op, "d_out");
  cpu::require_tensor(p.ln_input, DType::f32, n, op, "ln_input");
  cpu::require_tensor(p.mean, DType::f32, p.rows, op, "mean");
  cpu::require_tensor(p.rstd, DType::f32, p.rows, op, "rstd");
  cpu::require_tensor(p.gamma, DType::f32, p.width, op, "gamma");
  cpu::require_tensor(p.d_x, DType::f32, n, op, "d_x");
  cpu::require_tensor(p.d_gamma, DType::f32, p.width, op, "d_gamma");
  cpu::require_tensor(p.d_beta, DType::f32, p.width, op, "d_beta");
  if (p.d_bias.defined()) cpu::require_tensor(p.d_bias, DType::f32, p.width, op, "d_bias");
  if (p.d_residual.defined()) cpu::require_tensor(p.d_residual, DType::f32, n, op, "d_residual");
  const int threads = n > cpu::kMinParallelWork ? omp_get_max_threads() : 1;
  std::vector<std::vector<double>> d_gamma(threads, std::vector<double>(p.width)),
      d_beta(threads, std::vector<double>(p.width)),
      d_bias(threads, std::vector<double>(p.d_bias.defined() ? p.width : 0));
#pragma omp parallel num_threads(threads)
  {
    const int thread = omp_get_thread_num();
    std::vector<float> factors(p.width), d_s(p.width);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.rows; ++r) {
      const int64_t base = r * p.width;
      normalize_row_backward(p.d_out.as<const float>() + base, p.ln_input.as<const float>() + base,
                             p.mean.as<const float>()[r], p.rstd.as<const float>()[r],
                             p.gamma.as<const float>(), p.width, d_s.data(), d_gamma[thread].data(),
                             d_beta[thread].data());
      if (p.d_residual.defined()) {
        float* d_res = p.d_residual.as<float>() + base;
        if (p.accumulate_d_residual) {
          for (int64_t c = 0; c < p.width; ++c) d_res[c] += d_s[c];
        } else {
          for (int64_t c = 0; c < p.width; ++c) d_res[c] = d_s[c];
        }
      }
      cpu::dropout_factors(p.dropout, static_cast<uint64_t>(base), p.width, factors.data());
      float* d_x = p.d_x.as<float>() + base;
      for (int64_t c = 0; c < p.width; ++c) d_x[c] = d_s[c] * factors[c];
      if (p.d_bias.defined()) {
        double* acc = d_bias[thread].data();
        for (int64_t c = 0; c < p.width; ++c) acc[c] += d_x[c];
      }
    }
  }
  add_partials(d_gamma, p.d_gamma.as<float>(), p.width);
  add_partials(d_beta, p.d_beta.as<float>(), p.width);
  if (p.d_bias.defined()) add_partials(d_bias, p.d_bias.as<float>(), p.width);
}

void CpuOps::embedding_forward(const EmbeddingForwardParams& p) {
  const char* op = "embedding_forward";
  const int64_t h = p.hidden, n = p.tokens * h;
  cpu::require(h > 0 && p.tokens >= 0, op, "need hidden > 0");
  check_ids(op, p.input_ids, p.tokens, p.word.numel / h, "input_ids");
  check_ids(op, p.position_ids, p.tokens, p.position.numel / h, "position_ids");
  check_ids(op, p.segment_ids, p.tokens, p.token_type.numel / h, "segment_ids");
  cpu::require_tensor(p.out, DType::f32, n, op, "out");
  cpu::require_tensor(p.ln_input, DType::f32, n, op, "ln_input");
  cpu::require_tensor(p.mean, DType::f32, p.tokens, op, "mean");
  cpu::require_tensor(p.rstd, DType::f32, p.tokens, op, "rstd");
  cpu::require_tensor(p.gamma, DType::f32, h, op, "gamma");
  cpu::require_tensor(p.beta, DType::f32, h, op, "beta");
  const int32_t* ids = p.input_ids.as<const int32_t>();
  const int32_t* pos = p.position_ids.as<const int32_t>();
  const int32_t* seg = p.segment_ids.as<const int32_t>();
#pragma omp parallel if (n > cpu::kMinParallelWork)
  {
    std::vector<float> factors(h);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < p.tokens; ++t) {
      const float* w = p.word.as<const float>() + static_cast<int64_t>(ids[t]) * h;
      const float* q = p.position.as<const float>() + static_cast<int64_t>(pos[t]) * h;
      const float* y = p.token_type.as<const float>() + static_cast<int64_t>(seg[t]) * h;
      float* s = p.ln_input.as<float>() + t * h;
      for (int64_t c = 0; c < h; ++c) s[c] = w[c] + q[c] + y[c];
      float* out = p.out.as<float>() + t * h;
      normalize_row(s, h, p.eps, p.gamma.as<const float>(), p.beta.as<const float>(), out,
                    p.mean.as<float>() + t, p.rstd.as<float>() + t);
      if (p.dropout.enabled) {
        cpu::dropout_factors(p.dropout, static_cast<uint64_t>(t) * h, h, factors.data());
        for (int64_t c = 0; c < h; ++c) out[c] *= factors[c];
      }
    }
  }
}

void CpuOps::embedding_backward(const EmbeddingBackwardParams& p) {
  const char* op = "embedding_backward";
  const int64_t h = p.hidden, n = p.tokens * h;
  cpu::require(h > 0 && p.tokens >= 0, op, "need hidden > 0");
  check_ids(op, p.input_ids, p.tokens, p.d_word.numel / h, "input_ids");
  check_ids(op, p.position_ids, p.tokens, p.d_position.numel / h, "position_ids");
  check_ids(op, p.segment_ids, p.tokens, p.d_token_type.numel / h, "segment_ids");
  cpu::require_tensor(p.d_out, DType::f32, n, op, "d_out");
  cpu::require_tensor(p.ln_input, DType::f32, n, op, "ln_input");
  cpu::require_tensor(p.d_gamma, DType::f32, h, op, "d_gamma");
  cpu::require_tensor(p.d_beta, DType::f32, h, op, "d_beta");
  const int threads = n > cpu::kMinParallelWork ? omp_get_max_threads() : 1;
  std::vector<std::vector<double>> d_gamma(threads, std::vector<double>(h)),
      d_beta(threads, std::vector<double>(h));
  float* d_all = p.d_out.as<float>();
  // Pass 1: per token, undo dropout and the LayerNorm; d_out becomes d_s in place.
#pragma omp parallel num_threads(threads)
  {
    const int thread = omp_get_thread_num();
    std::vector<float> factors(h);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < p.tokens; ++t) {
      float* d = d_all + t * h;
      if (p.dropout.enabled) {
        cpu::dropout_factors(p.dropout, static_cast<uint64_t>(t) * h, h, factors.data());
        for (int64_t c = 0; c < h; ++c) d[c] *= factors[c];
      }
      normalize_row_backward(d, p.ln_input.as<const float>() + t * h, p.mean.as<const float>()[t],
                             p.rstd.as<const float>()[t], p.gamma.as<const float>(), h, d,
                             d_gamma[thread].data(), d_beta[thread].data());
    }
  }
  add_partials(d_gamma, p.d_gamma.as<float>(), h);
  add_partials(d_beta, p.d_beta.as<float>(), h);
  // Pass 2: scatter into the three tables. Ids repeat, so threads split the columns.
  const int32_t* ids = p.input_ids.as<const int32_t>();
  const int32_t* pos = p.position_ids.as<const int32_t>();
  const int32_t* seg = p.segment_ids.as<const int32_t>();
#pragma omp parallel num_threads(threads)
  {
    const int nt = omp_get_num_threads(), thread = omp_get_thread_num();
    const int64_t c0 = h * thread / nt, c1 = h * (thread + 1) / nt;
    for (int64_t t = 0; t < p.tokens; ++t) {
      const float* d = d_all + t * h;
      float* w = p.d_word.as<float>() + static_cast<int64_t>(ids[t]) * h;
      float* q = p.d_position.as<float>() + static_cast<int64_t>(pos[t]) * h;
      float* y = p.d_token_type.as<float>() + static_cast<int64_t>(seg[t]) * h;
      for (int64_t c = c0; c < c1; ++c) {
        w[c] += d[c];
        q[c] += d[c];
        y[c] += d[c];
      }
    }
  }
}

}  // namespace mlbert::bert
