// CpuOps: memory, copies, row gather/scatter and the softmax cross-entropy of the fp32 backend.
#include "bert/cpu/cpu_ops.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "bert/cpu/check.h"
#include "bert/cpu/gemm.h"
#include "bert/cpu/math.h"

namespace mlbert::bert {

namespace {
constexpr size_t kAllocationAlignment = 256;
}  // namespace

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x)));
}

float gelu_tanh_grad(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  const float inner = kSqrt2OverPi * (x + kCubic * x * x * x);
  const float t = std::tanh(inner);
  const float d_inner = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * d_inner;
}

float gelu_erf(float x) {
  return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
}

float gelu_erf_grad(float x) {
  constexpr float kInvSqrt2Pi = 0.3989422804014327f;
  return 0.5f * (1.0f + std::erf(x * 0.7071067811865476f)) +
         x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
}

CpuOps::CpuOps() {
  cpu::use_single_threaded_blas();
}

CpuOps::CpuOps(const OpsPreferences& preferences) : CpuOps() {
  preferences_ = preferences;
}

void CpuOps::reserve_scratch(size_t floats_per_thread) {
  const size_t threads = static_cast<size_t>(omp_get_max_threads());
  if (scratch_.size() < threads) scratch_.resize(threads);
  for (auto& buffer : scratch_) {
    if (buffer.size() < floats_per_thread) buffer.resize(floats_per_thread);
  }
}

Tensor CpuOps::allocate(DType dtype, size_t numel) {
  Tensor t;
  t.dtype = dtype;
  t.numel = numel;
  if (numel == 0) return t;
  const size_t bytes = (numel * dtype_size(dtype) + kAllocationAlignment - 1) /
                       kAllocationAlignment * kAllocationAlignment;
  t.data = std::aligned_alloc(kAllocationAlignment, bytes);
  if (!t.data) throw std::bad_alloc();
  std::memset(t.data, 0, bytes);
  return t;
}

void CpuOps::release(Tensor tensor) {
  std::free(tensor.data);
}

void CpuOps::copy_from_host(Tensor dst, const void* src, size_t bytes) {
  cpu::require(bytes <= dst.bytes(), "copy_from_host", "more bytes than the tensor holds");
  if (bytes) std::memcpy(dst.data, src, bytes);
}

void CpuOps::copy_to_host(void* dst, Tensor src, size_t bytes) {
  cpu::require(bytes <= src.bytes(), "copy_to_host", "more bytes than the tensor holds");
  if (bytes) std::memcpy(dst, src.data, bytes);
}

void CpuOps::copy(Tensor dst, Tensor src) {
  cpu::require(dst.dtype == src.dtype && dst.numel == src.numel, "copy",
               "dst and src differ in dtype or size");
  if (src.numel) std::memmove(dst.data, src.data, src.bytes());
}

void CpuOps::fill_zero(Tensor tensor) {
  if (tensor.numel) std::memset(tensor.data, 0, tensor.bytes());
}

void CpuOps::cast(Tensor dst, Tensor src) {
  cpu::require(src.dtype == DType::f32 && dst.dtype == DType::f32, "cast",
               "the CPU backend computes in f32 only");
  copy(dst, src);
}

void CpuOps::gather_rows(const GatherRowsParams& p) {
  const char* op = "gather_rows";
  cpu::require_tensor(p.indices, DType::i32, p.count, op, "indices");
  cpu::require_tensor(p.out, DType::f32, p.count * p.width, op, "out");
  const int32_t* idx = p.indices.as<int32_t>();
  const size_t src_rows = p.src.numel / std::max<int64_t>(p.width, 1);
  for (int64_t i = 0; i < p.count; ++i) {
    cpu::require(idx[i] >= 0 && static_cast<size_t>(idx[i]) < src_rows, op,
                 "indices[" + std::to_string(i) + "] = " + std::to_string(idx[i]) +
                     " is outside the source's " + std::to_string(src_rows) + " rows");
  }
  const float* src = p.src.as<const float>();
  float* out = p.out.as<float>();
#pragma omp parallel for schedule(static) if (p.count * p.width > cpu::kMinParallelWork)
  for (int64_t i = 0; i < p.count; ++i) {
    std::memcpy(out + i * p.width, src + static_cast<int64_t>(idx[i]) * p.width,
                sizeof(float) * p.width);
  }
}

void CpuOps::scatter_add_rows(const ScatterAddRowsParams& p) {
  const char* op = "scatter_add_rows";
  cpu::require_tensor(p.indices, DType::i32, p.count, op, "indices");
  cpu::require_tensor(p.d_out, DType::f32, p.count * p.width, op, "d_out");
  const int32_t* idx = p.indices.as<int32_t>();
  const size_t dst_rows = p.d_src.numel / std::max<int64_t>(p.width, 1);
  for (int64_t i = 0; i < p.count; ++i) {
    cpu::require(idx[i] >= 0 && static_cast<size_t>(idx[i]) < dst_rows, op,
                 "indices[" + std::to_string(i) + "] is outside d_src");
  }
  const float* d_out = p.d_out.as<const float>();
  float* d_src = p.d_src.as<float>();
  // Rows may repeat: split the work by columns so each thread owns its column range.
#pragma omp parallel if (p.count * p.width > cpu::kMinParallelWork)
  {
    const int threads = omp_get_num_threads();
    const int thread = omp_get_thread_num();
    const int64_t begin = p.width * thread / threads;
    const int64_t end = p.width * (thread + 1) / threads;
    for (int64_t i = 0; i < p.count; ++i) {
      float* dst = d_src + static_cast<int64_t>(idx[i]) * p.width;
      const float* src = d_out + i * p.width;
      for (int64_t c = begin; c < end; ++c) dst[c] += src[c];
    }
  }
}

void CpuOps::cross_entropy(const CrossEntropyParams& p) {
  const char* op = "cross_entropy";
  cpu::require(p.classes > 0 && p.row_stride >= p.classes, op, "need 0 < classes <= row_stride");
  cpu::require_tensor(p.logits, DType::f32, p.rows * p.row_stride, op, "logits");
  cpu::require_tensor(p.d_logits, DType::f32, p.rows * p.row_stride, op, "d_logits");
  cpu::require_tensor(p.labels, DType::i32, p.rows, op, "labels");
  cpu::require_tensor(p.stats, DType::f32, 2, op, "stats");
  const int32_t* labels = p.labels.as<int32_t>();
  for (int64_t r = 0; r < p.rows; ++r) {
    cpu::require(labels[r] >= 0 && labels[r] < p.classes, op,
                 "labels[" + std::to_string(r) + "] = " + std::to_string(labels[r]) +
                     " is outside [0, " + std::to_string(p.classes) + ")");
  }
  const float* logits = p.logits.as<const float>();
  float* d_logits = p.d_logits.as<float>();
  double loss_sum = 0;
  int64_t correct = 0;
#pragma omp parallel for schedule(static) reduction(+ : loss_sum, correct) \
    if (p.rows * p.classes > cpu::kMinParallelWork)
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* row = logits + r * p.row_stride;
    float* d_row = d_logits + r * p.row_stride;
    int64_t argmax = 0;
    float max_value = row[0];
    for (int64_t c = 1; c < p.classes; ++c) {
      if (row[c] > max_value) {
        max_value = row[c];
        argmax = c;
      }
    }
    // d_logits may alias logits: read the label's logit before overwriting the row with exp().
    const int32_t label = labels[r];
    const float label_logit = row[label];
    double sum = 0;
    float partial = 0.0f;  // vectorized in float per row; rows are summed in double
#pragma omp simd reduction(+ : partial)
    for (int64_t c = 0; c < p.classes; ++c) {
      const float e = cpu::fast_exp(row[c] - max_value);
      d_row[c] = e;
      partial += e;
    }
    sum = partial;
    loss_sum += std::log(sum) - static_cast<double>(label_logit - max_value);
    correct += argmax == label ? 1 : 0;
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int64_t c = 0; c < p.classes; ++c) d_row[c] = d_row[c] * inv_sum * p.grad_scale;
    d_row[label] -= p.grad_scale;
    for (int64_t c = p.classes; c < p.row_stride; ++c) d_row[c] = 0.0f;
  }
  float* stats = p.stats.as<float>();
  stats[0] = static_cast<float>(loss_sum);
  stats[1] = static_cast<float>(correct);
}

}  // namespace mlbert::bert
