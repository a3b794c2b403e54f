// Helpers of the device check (bert_cuda_check): the same inputs on the CPU reference backend (f32
// holding values already rounded to the GPU's compute type) and on CudaOps, outputs poisoned with
// NaN before every GPU op, host emulation of fp16/bf16 rounding for the "plain low-precision"
// baselines, and the acceptance rule: the GPU's error against the fp32 reference may be at most
// twice that of a plain low-precision implementation of the same op, and never NaN.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bert/cpu/cpu_ops.h"
#include "bert/cuda/cuda_ops.h"
#include "bert/ops.h"

namespace mlbert::cuda::check {

using bert::DType;
using bert::Tensor;

// Round a float to the compute type and back (round to nearest even, as the kernels do).
inline float round_to(DType type, float x) {
  if (type == DType::bf16) return __bfloat162float(__float2bfloat16_rn(x));
  if (type == DType::f16) return __half2float(__float2half_rn(x));
  return x;
}
inline std::vector<float> rounded(DType type, std::vector<float> v) {
  for (float& x : v) x = round_to(type, x);
  return v;
}

// Host bytes of `values` in `type` (f32, f16, bf16).
inline std::vector<unsigned char> encode(DType type, const std::vector<float>& values) {
  std::vector<unsigned char> bytes(values.size() * bert::dtype_size(type));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DType::f32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    } else if (type == DType::bf16) {
      const __nv_bfloat16 h = __float2bfloat16_rn(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    } else {
      const __half h = __float2half_rn(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}
inline std::vector<float> decode(DType type, const std::vector<unsigned char>& bytes, size_t n) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) {
    if (type == DType::f32) {
      std::memcpy(&values[i], bytes.data() + 4 * i, 4);
    } else if (type == DType::bf16) {
      __nv_bfloat16 h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      values[i] = __bfloat162float(h);
    } else {
      __half h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      values[i] = __half2float(h);
    }
  }
  return values;
}

// One tensor on both backends: `cpu` is f32, `gpu` is in `gpu_type`; both hold the same values
// (rounded to gpu_type). Owned by the holder.
struct Twin {
  bert::Buffer cpu, gpu;
  DType gpu_type = DType::f32;
  size_t numel = 0;
};

class Backends {
 public:
  Backends(bert::CpuOps& cpu, CudaOps& gpu) : cpu_(cpu), gpu_(gpu) {}
  bert::CpuOps& cpu() { return cpu_; }
  CudaOps& gpu() { return gpu_; }
  DType compute() const { return gpu_.compute_dtype(); }

  Twin twin(const std::vector<float>& values, DType gpu_type) {
    Twin t;
    t.gpu_type = gpu_type;
    t.numel = values.size();
    const std::vector<float> v = rounded(gpu_type, values);
    t.cpu = bert::Buffer(cpu_, DType::f32, v.size());
    t.gpu = bert::Buffer(gpu_, gpu_type, v.size());
    cpu_.copy_from_host(t.cpu.tensor(), v.data(), v.size() * 4);
    const auto bytes = encode(gpu_type, v);
    gpu_.copy_from_host(t.gpu.tensor(), bytes.data(), bytes.size());
    return t;
  }
  Twin twin_i32(const std::vector<int32_t>& values) {
    Twin t;
    t.gpu_type = DType::i32;
    t.numel = values.size();
    t.cpu = bert::Buffer(cpu_, DType::i32, values.size());
    t.gpu = bert::Buffer(gpu_, DType::i32, values.size());
    cpu_.copy_from_host(t.cpu.tensor(), values.data(), values.size() * 4);
    gpu_.copy_from_host(t.gpu.tensor(), values.data(), values.size() * 4);
    return t;
  }
  // An output: zero on the CPU, NaN bit patterns on the GPU (every element must be written).
  Twin output(size_t n, DType gpu_type) {
    Twin t;
    t.gpu_type = gpu_type;
    t.numel = n;
    t.cpu = bert::Buffer(cpu_, DType::f32, n);
    t.gpu = bert::Buffer(gpu_, gpu_type, n);
    poison(t);
    return t;
  }
  void poison(const Twin& t) {
    std::vector<unsigned char> nan_bytes(t.numel * bert::dtype_size(t.gpu_type), 0xff);
    gpu_.copy_from_host(t.gpu.tensor(), nan_bytes.data(), nan_bytes.size());
  }
  std::vector<float> cpu_values(const Twin& t) { return cpu_values(t.cpu.tensor(), t.numel); }
  std::vector<float> cpu_values(const Tensor& t, size_t n) {
    std::vector<float> v(n);
    cpu_.copy_to_host(v.data(), t, n * 4);
    return v;
  }
  std::vector<float> gpu_values(const Twin& t) { return gpu_values(t.gpu.tensor(), t.numel); }
  std::vector<float> gpu_values(const Tensor& t, size_t n) {
    std::vector<unsigned char> bytes(n * bert::dtype_size(t.dtype));
    gpu_.copy_to_host(bytes.data(), t, bytes.size());
    return decode(t.dtype, bytes, n);
  }

 private:
  bert::CpuOps& cpu_;
  CudaOps& gpu_;
};

struct ErrorStats {
  double max_abs = 0, rel_l2 = 0, ref_max = 0;
  size_t nan_count = 0;
};
inline ErrorStats compare(const std::vector<float>& got, const std::vector<float>& ref) {
  ErrorStats e;
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ++e.nan_count;
      continue;
    }
    const double d = static_cast<double>(got[i]) - ref[i];
    e.max_abs = std::max(e.max_abs, std::fabs(d));
    e.ref_max = std::max(e.ref_max, std::fabs(static_cast<double>(ref[i])));
    diff2 += d * d;
    ref2 += static_cast<double>(ref[i]) * ref[i];
  }
  e.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return e;
}

struct CheckRow {
  std::string op, tensor, dtype;
  ErrorStats gpu, plain;
  double allowance = 0;  // judge(): the largest gpu error that passes
  bool pass = false;
  std::string note;
};

// The acceptance rule. `floor` (relative to the reference's largest magnitude) keeps outputs that
// both implementations get exactly right from failing on a zero baseline.
inline CheckRow judge(std::string op, std::string tensor, DType type, const std::vector<float>& gpu,
                      const std::vector<float>& plain, const std::vector<float>& ref,
                      double floor = 1e-6) {
  CheckRow row;
  row.op = std::move(op);
  row.tensor = std::move(tensor);
  row.dtype = bert::dtype_name(type);
  row.gpu = compare(gpu, ref);
  row.plain = compare(plain, ref);
  row.allowance = 2.0 * row.plain.max_abs + floor * std::max(row.gpu.ref_max, 1e-30);
  row.pass = row.gpu.nan_count == 0 && row.gpu.max_abs <= row.allowance;
  if (row.gpu.nan_count) row.note = std::to_string(row.gpu.nan_count) + " NaN/inf or unwritten";
  return row;
}

// An exact check (copies, masks, counts): every element equal.
inline CheckRow judge_exact(std::string op, std::string tensor, DType type,
                            const std::vector<float>& gpu, const std::vector<float>& ref) {
  CheckRow row;
  row.op = std::move(op);
  row.tensor = std::move(tensor);
  row.dtype = bert::dtype_name(type);
  row.gpu = compare(gpu, ref);
  size_t mismatches = 0;
  for (size_t i = 0; i < ref.size(); ++i) mismatches += !(gpu[i] == ref[i]);
  row.pass = mismatches == 0;
  row.note = mismatches
                 ? std::to_string(mismatches) + " of " + std::to_string(ref.size()) + " differ"
                 : "exact";
  return row;
}

// A fixed relative tolerance (f32 computations: optimizer updates, norms).
inline CheckRow judge_tolerance(std::string op, std::string tensor, DType type,
                                const std::vector<float>& gpu, const std::vector<float>& ref,
                                double rel_l2_tolerance) {
  CheckRow row;
  row.op = std::move(op);
  row.tensor = std::move(tensor);
  row.dtype = bert::dtype_name(type);
  row.gpu = compare(gpu, ref);
  row.pass = row.gpu.nan_count == 0 && row.gpu.rel_l2 <= rel_l2_tolerance;
  row.note = "tolerance rel_l2 " + std::to_string(rel_l2_tolerance);
  return row;
}

inline std::vector<float> normal(std::mt19937_64& rng, size_t n, float scale = 1.0f,
                                 float mean = 0.0f) {
  std::normal_distribution<float> dist(mean, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace mlbert::cuda::check
