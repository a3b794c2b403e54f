// CpuOps: multi-head self-attention over variable-length sequences (cu_seqlens), forward and
// backward with recomputation of the probabilities from the saved log-sum-exp.
//
// One task per (sequence, head): it owns that sequence's rows of that head's columns in every
// output, so tasks never share a write. Dot products are vectorized OpenMP simd reductions.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bert/cpu/check.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/cpu/dropout.h"

namespace mlbert::bert {

namespace {

inline float dot(const float* a, const float* b, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

inline void axpy(float alpha, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void check_cu_seqlens(const char* op, const Tensor& cu, int64_t sequences, int64_t tokens,
                      int max_seqlen) {
  cpu::require_tensor(cu, DType::i32, sequences + 1, op, "cu_seqlens");
  const int32_t* c = cu.as<const int32_t>();
  cpu::require(c[0] == 0, op, "cu_seqlens[0] must be 0");
  for (int64_t s = 0; s < sequences; ++s) {
    const int64_t len = c[s + 1] - c[s];
    cpu::require(len >= 1 && len <= max_seqlen, op,
                 "sequence " + std::to_string(s) + " has length " + std::to_string(len) +
                     " (max_seqlen " + std::to_string(max_seqlen) + ")");
  }
  cpu::require(c[sequences] == tokens, op, "cu_seqlens[num_sequences] must equal tokens");
}

}  // namespace

void CpuOps::attention_forward(const AttentionForwardParams& p) {
  const char* op = "attention_forward";
  const int64_t hidden = p.heads * p.head_dim, n = p.tokens * hidden;
  cpu::require(p.heads > 0 && p.head_dim > 0, op, "need heads > 0 and head_dim > 0");
  check_cu_seqlens(op, p.cu_seqlens, p.num_sequences, p.tokens, p.max_seqlen);
  cpu::require_tensor(p.q, DType::f32, n, op, "q");
  cpu::require_tensor(p.k, DType::f32, n, op, "k");
  cpu::require_tensor(p.v, DType::f32, n, op, "v");
  cpu::require_tensor(p.out, DType::f32, n, op, "out");
  cpu::require_tensor(p.softmax_lse, DType::f32, p.heads * p.tokens, op, "softmax_lse");
  const int32_t* cu = p.cu_seqlens.as<const int32_t>();
  const float* q = p.q.as<const float>();
  const float* k = p.k.as<const float>();
  const float* v = p.v.as<const float>();
  float* out = p.out.as<float>();
  float* lse = p.softmax_lse.as<float>();
  const uint64_t row_stride = attention_dropout_row_stride(p.max_seqlen);
  const int64_t tasks = p.num_sequences * p.heads;
  const int64_t d = p.head_dim;
  const int64_t work = p.heads * d * static_cast<int64_t>(p.max_seqlen) * p.tokens;
#pragma omp parallel if (work > cpu::kMinParallelWork)
  {
    std::vector<float> scores(p.max_seqlen), factors(p.max_seqlen);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t s = task / p.heads, h = task % p.heads;
      const int64_t start = cu[s], len = cu[s + 1] - cu[s];
      for (int64_t i = 0; i < len; ++i) {
        const int64_t token = start + i;
        const float* qi = q + token * hidden + h * d;
        float max_score = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < len; ++j) {
          scores[j] = p.scale * dot(qi, k + (start + j) * hidden + h * d, d);
          max_score = scores[j] > max_score ? scores[j] : max_score;
        }
        double sum = 0;
        for (int64_t j = 0; j < len; ++j) {
          scores[j] = std::exp(scores[j] - max_score);
          sum += scores[j];
        }
        lse[h * p.tokens + token] = max_score + static_cast<float>(std::log(sum));
        const float inv_sum = static_cast<float>(1.0 / sum);
        cpu::dropout_factors(p.dropout,
                             attention_dropout_element(token, static_cast<int>(h),
                                                       static_cast<int>(p.heads), row_stride, 0),
                             len, factors.data());
        float* oi = out + token * hidden + h * d;
        for (int64_t c = 0; c < d; ++c) oi[c] = 0.0f;
        for (int64_t j = 0; j < len; ++j) {
          const float weight = scores[j] * inv_sum * factors[j];
          if (weight != 0.0f) axpy(weight, v + (start + j) * hidden + h * d, oi, d);
        }
      }
    }
  }
}

void CpuOps::attention_backward(const AttentionBackwardParams& p) {
  const char* op = "attention_backward";
  const int64_t hidden = p.heads * p.head_dim, n = p.tokens * hidden;
  cpu::require(p.heads > 0 && p.head_dim > 0, op, "need heads > 0 and head_dim > 0");
  check_cu_seqlens(op, p.cu_seqlens, p.num_sequences, p.tokens, p.max_seqlen);
  for (const auto& [t, name] : {std::pair{&p.q, "q"},
                                {&p.k, "k"},
                                {&p.v, "v"},
                                {&p.out, "out"},
                                {&p.d_out, "d_out"},
                                {&p.d_q, "d_q"},
                                {&p.d_k, "d_k"},
                                {&p.d_v, "d_v"}}) {
    cpu::require_tensor(*t, DType::f32, n, op, name);
  }
  cpu::require_tensor(p.softmax_lse, DType::f32, p.heads * p.tokens, op, "softmax_lse");
  const int32_t* cu = p.cu_seqlens.as<const int32_t>();
  const float* q = p.q.as<const float>();
  const float* k = p.k.as<const float>();
  const float* v = p.v.as<const float>();
  const float* o = p.out.as<const float>();
  const float* d_o = p.d_out.as<const float>();
  const float* lse = p.softmax_lse.as<const float>();
  float* d_q = p.d_q.as<float>();
  float* d_k = p.d_k.as<float>();
  float* d_v = p.d_v.as<float>();
  const uint64_t row_stride = attention_dropout_row_stride(p.max_seqlen);
  const int64_t tasks = p.num_sequences * p.heads;
  const int64_t d = p.head_dim;
  const int64_t work = p.heads * d * static_cast<int64_t>(p.max_seqlen) * p.tokens;
#pragma omp parallel if (work > cpu::kMinParallelWork)
  {
    std::vector<float> probs(p.max_seqlen), factors(p.max_seqlen);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t s = task / p.heads, h = task % p.heads;
      const int64_t start = cu[s], len = cu[s + 1] - cu[s];
      for (int64_t j = 0; j < len; ++j) {
        for (int64_t c = 0; c < d; ++c) {
          d_k[(start + j) * hidden + h * d + c] = 0.0f;
          d_v[(start + j) * hidden + h * d + c] = 0.0f;
        }
      }
      for (int64_t i = 0; i < len; ++i) {
        const int64_t token = start + i;
        const float* qi = q + token * hidden + h * d;
        const float* d_oi = d_o + token * hidden + h * d;
        const float row_lse = lse[h * p.tokens + token];
        // D_i = sum_j dPd_ij Pd_ij = dO_i . O_i
        const float delta = dot(d_oi, o + token * hidden + h * d, d);
        cpu::dropout_factors(p.dropout,
                             attention_dropout_element(token, static_cast<int>(h),
                                                       static_cast<int>(p.heads), row_stride, 0),
                             len, factors.data());
        float* d_qi = d_q + token * hidden + h * d;
        for (int64_t c = 0; c < d; ++c) d_qi[c] = 0.0f;
        for (int64_t j = 0; j < len; ++j) {
          const int64_t key_row = (start + j) * hidden + h * d;
          const float prob = std::exp(p.scale * dot(qi, k + key_row, d) - row_lse);
          const float dropped = prob * factors[j];
          if (dropped != 0.0f) axpy(dropped, d_oi, d_v + key_row, d);
          const float d_prob = dot(d_oi, v + key_row, d) * factors[j];
          const float d_score = prob * (d_prob - delta) * p.scale;
          axpy(d_score, k + key_row, d_qi, d);
          axpy(d_score, qi, d_k + key_row, d);
        }
      }
    }
  }
}

}  // namespace mlbert::bert
