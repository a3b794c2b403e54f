// CpuOps: multi-head self-attention over variable-length sequences (cu_seqlens), forward and
// backward with recomputation of the probabilities from the saved log-sum-exp.
//
// One task per (sequence, head): it owns that sequence's rows of that head's columns in every
// output, so tasks never share a write. Inside a task the products are small GEMMs on strided
// views of the [tokens, hidden] tensors (single-threaded OpenBLAS on the task's thread).
#include <omp.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bert/cpu/check.h"
#include "bert/cpu/cpu_ops.h"
#include "bert/cpu/dropout.h"
#include "bert/cpu/gemm.h"
#include "bert/cpu/math.h"

namespace mlbert::bert {

namespace {

inline float dot(const float* a, const float* b, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
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

// Rows of q, k and v (and their gradients): qkv_row_stride apart, hidden when 0.
int64_t qkv_stride_of(const char* op, int64_t stride, int64_t hidden) {
  cpu::require(stride == 0 || stride >= hidden, op, "qkv_row_stride must be 0 or at least hidden");
  return stride == 0 ? hidden : stride;
}

}  // namespace

void CpuOps::attention_forward(const AttentionForwardParams& p) {
  const char* op = "attention_forward";
  const int64_t hidden = p.heads * p.head_dim, n = p.tokens * hidden;
  cpu::require(p.heads > 0 && p.head_dim > 0, op, "need heads > 0 and head_dim > 0");
  check_cu_seqlens(op, p.cu_seqlens, p.num_sequences, p.tokens, p.max_seqlen);
  const int64_t qs = qkv_stride_of(op, p.qkv_row_stride, hidden);
  const int64_t strided = p.tokens > 0 ? (p.tokens - 1) * qs + hidden : 0;
  cpu::require_tensor(p.q, DType::f32, strided, op, "q");
  cpu::require_tensor(p.k, DType::f32, strided, op, "k");
  cpu::require_tensor(p.v, DType::f32, strided, op, "v");
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
  const size_t square = static_cast<size_t>(p.max_seqlen) * p.max_seqlen;
  reserve_scratch(square + p.max_seqlen);
#pragma omp parallel if (work > cpu::kMinParallelWork)
  {
    // Per task: S = scale * Q_h K_h^T as one small GEMM (single-threaded BLAS inside the pool),
    // row softmax with dropout in place, then O_h = P V_h as a second GEMM.
    float* probs = scratch(omp_get_thread_num());
    float* factors = probs + square;
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t s = task / p.heads, h = task % p.heads;
      const int64_t start = cu[s], len = cu[s + 1] - cu[s];
      const int64_t col = start * hidden + h * d, qkv_col = start * qs + h * d;
      cpu::sgemm(false, true, len, len, d, p.scale, q + qkv_col, qs, k + qkv_col, qs, 0.0f, probs,
                 len);
      for (int64_t i = 0; i < len; ++i) {
        float* row = probs + i * len;
        float max_score = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < len; ++j) max_score = row[j] > max_score ? row[j] : max_score;
        double sum = 0;
        float partial = 0.0f;
#pragma omp simd reduction(+ : partial)
        for (int64_t j = 0; j < len; ++j) {
          row[j] = cpu::fast_exp(row[j] - max_score);
          partial += row[j];
        }
        sum = partial;
        const int64_t token = start + i;
        lse[h * p.tokens + token] = max_score + static_cast<float>(std::log(sum));
        const float inv_sum = static_cast<float>(1.0 / sum);
        cpu::dropout_factors(p.dropout,
                             attention_dropout_element(token, static_cast<int>(h),
                                                       static_cast<int>(p.heads), row_stride, 0),
                             len, factors);
        for (int64_t j = 0; j < len; ++j) row[j] *= inv_sum * factors[j];
      }
      cpu::sgemm(false, false, len, d, len, 1.0f, probs, len, v + qkv_col, qs, 0.0f, out + col,
                 hidden);
    }
  }
}

void CpuOps::attention_backward(const AttentionBackwardParams& p) {
  const char* op = "attention_backward";
  const int64_t hidden = p.heads * p.head_dim, n = p.tokens * hidden;
  cpu::require(p.heads > 0 && p.head_dim > 0, op, "need heads > 0 and head_dim > 0");
  check_cu_seqlens(op, p.cu_seqlens, p.num_sequences, p.tokens, p.max_seqlen);
  const int64_t qs = qkv_stride_of(op, p.qkv_row_stride, hidden);
  const int64_t strided = p.tokens > 0 ? (p.tokens - 1) * qs + hidden : 0;
  for (const auto& [t, name] : {std::pair{&p.q, "q"},
                                {&p.k, "k"},
                                {&p.v, "v"},
                                {&p.d_q, "d_q"},
                                {&p.d_k, "d_k"},
                                {&p.d_v, "d_v"}}) {
    cpu::require_tensor(*t, DType::f32, strided, op, name);
  }
  cpu::require_tensor(p.out, DType::f32, n, op, "out");
  cpu::require_tensor(p.d_out, DType::f32, n, op, "d_out");
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
  const size_t square = static_cast<size_t>(p.max_seqlen) * p.max_seqlen;
  reserve_scratch(2 * square + p.max_seqlen);
#pragma omp parallel if (work > cpu::kMinParallelWork)
  {
    // Per task, with L = len and everything for head h of one sequence:
    //   P = exp(scale Q K^T - lse) (recomputed), Pd = P * dropout, dPd = dO V^T,
    //   dV = Pd^T dO, dS = P * (dPd * dropout - D) with D_i = dO_i . O_i,
    //   dQ = scale dS K, dK = scale dS^T Q.
    float* probs = scratch(omp_get_thread_num());
    float* d_probs = probs + square;
    float* factors = d_probs + square;
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t s = task / p.heads, h = task % p.heads;
      const int64_t start = cu[s], len = cu[s + 1] - cu[s];
      const int64_t col = start * hidden + h * d, qkv_col = start * qs + h * d;
      cpu::sgemm(false, true, len, len, d, p.scale, q + qkv_col, qs, k + qkv_col, qs, 0.0f, probs,
                 len);
      cpu::sgemm(false, true, len, len, d, 1.0f, d_o + col, hidden, v + qkv_col, qs, 0.0f, d_probs,
                 len);
      for (int64_t i = 0; i < len; ++i) {
        const int64_t token = start + i;
        const float row_lse = lse[h * p.tokens + token];
        const float delta = dot(d_o + token * hidden + h * d, o + token * hidden + h * d, d);
        cpu::dropout_factors(p.dropout,
                             attention_dropout_element(token, static_cast<int>(h),
                                                       static_cast<int>(p.heads), row_stride, 0),
                             len, factors);
        float* prob_row = probs + i * len;
        float* d_row = d_probs + i * len;
        for (int64_t j = 0; j < len; ++j) {
          const float prob = cpu::fast_exp(prob_row[j] - row_lse);
          d_row[j] = prob * (d_row[j] * factors[j] - delta) * p.scale;  // dS, scaled for dQ/dK
          prob_row[j] = prob * factors[j];                              // Pd, for dV
        }
      }
      cpu::sgemm(true, false, len, d, len, 1.0f, probs, len, d_o + col, hidden, 0.0f, d_v + qkv_col,
                 qs);
      cpu::sgemm(false, false, len, d, len, 1.0f, d_probs, len, k + qkv_col, qs, 0.0f,
                 d_q + qkv_col, qs);
      cpu::sgemm(true, false, len, d, len, 1.0f, d_probs, len, q + qkv_col, qs, 0.0f, d_k + qkv_col,
                 qs);
    }
  }
}

}  // namespace mlbert::bert
