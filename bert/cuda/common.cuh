// Device-side helpers shared by every bert/cuda kernel: the compute element types (fp16, bf16) with
// their fp32 conversions, 16-byte vector packs, warp and block reductions. Every kernel reads and
// writes compute-precision tensors in 16-byte packs of 8 elements and accumulates in fp32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "bert/cuda/cuda_check.h"

namespace mlbert::cuda {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarpMask = 0xffffffffu;
// Bytes per vectorised global access: one 128-bit load/store per thread.
constexpr int kVectorBytes = 16;

// ---------------------------------------------------------------------------------------------
// Element types

template <typename T>
__device__ __forceinline__ float to_float(T x);
template <>
__device__ __forceinline__ float to_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ float to_float<__half>(__half x) {
  return __half2float(x);
}
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Two adjacent elements packed in one 32-bit register, the unit of mma fragments.
template <typename T>
struct Pair;
template <>
struct Pair<__half> {
  using type = __half2;
  __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  __device__ __forceinline__ static float2 unpack(uint32_t bits) {
    return __half22float2(*reinterpret_cast<__half2*>(&bits));
  }
};
template <>
struct Pair<__nv_bfloat16> {
  using type = __nv_bfloat162;
  __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  __device__ __forceinline__ static float2 unpack(uint32_t bits) {
    return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&bits));
  }
};

// ---------------------------------------------------------------------------------------------
// 16-byte packs: kPack elements of T moved with one 128-bit access.

template <typename T>
struct alignas(kVectorBytes) Pack {
  static constexpr int kSize = kVectorBytes / sizeof(T);
  T v[kSize];
};

template <typename T>
__device__ __forceinline__ Pack<T> load_pack(const T* p) {
  Pack<T> pack;
  *reinterpret_cast<int4*>(&pack) = *reinterpret_cast<const int4*>(p);
  return pack;
}
// Streaming load for data read exactly once (keeps L1 for reused tiles).
template <typename T>
__device__ __forceinline__ Pack<T> load_pack_stream(const T* p) {
  Pack<T> pack;
  *reinterpret_cast<int4*>(&pack) = __ldcs(reinterpret_cast<const int4*>(p));
  return pack;
}
template <typename T>
__device__ __forceinline__ void store_pack(T* p, const Pack<T>& pack) {
  *reinterpret_cast<int4*>(p) = *reinterpret_cast<const int4*>(&pack);
}

// ---------------------------------------------------------------------------------------------
// Reductions

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x += __shfl_xor_sync(kFullWarpMask, x, offset);
  return x;
}
__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(kFullWarpMask, x, offset));
  return x;
}
__device__ __forceinline__ double warp_sum(double x) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x += __shfl_xor_sync(kFullWarpMask, x, offset);
  return x;
}

// Block-wide sum; `scratch` holds one value per warp. Every thread gets the total.
template <typename Acc>
__device__ __forceinline__ Acc block_sum(Acc x, Acc* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int num_warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  x = warp_sum(x);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  Acc total = 0;
  for (int w = 0; w < num_warps; ++w) total += scratch[w];
  return total;
}

__device__ __forceinline__ float block_max(float x, float* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int num_warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  x = warp_max(x);
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float total = -INFINITY;
  for (int w = 0; w < num_warps; ++w) total = fmaxf(total, scratch[w]);
  return total;
}

__device__ __forceinline__ bool is_finite(float x) {
  return isfinite(x);
}

// GELU, tanh approximation (BERT's `gelu_new`): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
__device__ __forceinline__ float gelu_tanh(float x) {
  const float inner = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}
__device__ __forceinline__ float gelu_tanh_grad(float x) {
  const float inner = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const float t = tanhf(inner);
  const float dinner = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner;
}

inline unsigned ceil_div(long long a, long long b) {
  return static_cast<unsigned>((a + b - 1) / b);
}

}  // namespace mlbert::cuda
