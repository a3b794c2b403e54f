// Elementwise and row-copy kernels (see elementwise.h). Contiguous tensors use 16-byte packs when
// their size and alignment allow, a scalar tail otherwise.
#include "bert/cuda/elementwise.h"

#include <stdexcept>
#include <string>
#include <type_traits>

#include "bert/bucket_clip.h"
#include "bert/cuda/common.cuh"
#include "bert/cuda/row_kernels.cuh"

namespace mlbert::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 65535 * 4;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;

unsigned grid_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : blocks);
}

__device__ __forceinline__ float activate(ActivationKind act, float x) {
  switch (act) {
    case ActivationKind::gelu_tanh:
      return gelu_tanh(x);
    case ActivationKind::gelu_erf:
      return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
    default:
      return tanhf(x);
  }
}

// Derivative of the activation, from the pre-activation (GELUs) or the output (tanh).
__device__ __forceinline__ float activation_grad(ActivationKind act, float x) {
  switch (act) {
    case ActivationKind::gelu_tanh:
      return gelu_tanh_grad(x);
    case ActivationKind::gelu_erf:
      return 0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * __expf(-0.5f * x * x);
    default:
      return 1.0f - x * x;
  }
}

template <typename T>
__global__ void activation_forward_kernel(ActivationKind act, const T* __restrict__ pre,
                                          T* __restrict__ out, int64_t n, bool vector) {
  const int64_t packs = vector ? n / kElementsPerPack : 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs;
       i += stride) {
    Pack<T> p = load_pack(pre + i * kElementsPerPack);
#pragma unroll
    for (int j = 0; j < kElementsPerPack; ++j)
      p.v[j] = from_float<T>(activate(act, to_float(p.v[j])));
    store_pack(out + i * kElementsPerPack, p);
  }
  for (int64_t i =
           packs * kElementsPerPack + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = from_float<T>(activate(act, to_float(pre[i])));
}

template <typename T>
__global__ void activation_backward_kernel(ActivationKind act, T* __restrict__ d_out,
                                           const T* __restrict__ x, int64_t n, bool vector) {
  const int64_t packs = vector ? n / kElementsPerPack : 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs;
       i += stride) {
    Pack<T> d = load_pack(d_out + i * kElementsPerPack);
    const Pack<T> v = load_pack(x + i * kElementsPerPack);
#pragma unroll
    for (int j = 0; j < kElementsPerPack; ++j)
      d.v[j] = from_float<T>(to_float(d.v[j]) * activation_grad(act, to_float(v.v[j])));
    store_pack(d_out + i * kElementsPerPack, d);
  }
  for (int64_t i =
           packs * kElementsPerPack + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    d_out[i] = from_float<T>(to_float(d_out[i]) * activation_grad(act, to_float(x[i])));
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kVectorBytes == 0;
}

template <typename D, typename S>
__global__ void convert_kernel(D* __restrict__ dst, const S* __restrict__ src, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = from_float<D>(to_float(src[i]));
}

// f32 -> 16-bit, four floats per step (the master -> compute cast of every optimizer step).
template <typename D>
__global__ void convert_f32_vec_kernel(D* __restrict__ dst, const float* __restrict__ src,
                                       int64_t n) {
  const int64_t quads = n / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < quads;
       i += stride) {
    const float4 v = reinterpret_cast<const float4*>(src)[i];
    uint2 packed;
    packed.x = Pair<D>::pack(v.x, v.y);
    packed.y = Pair<D>::pack(v.z, v.w);
    reinterpret_cast<uint2*>(dst)[i] = packed;
  }
  for (int64_t i = quads * 4 + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = from_float<D>(src[i]);
}

template <typename D>
void convert_from(void* dst, ElementType src_type, const void* src, int64_t n,
                  cudaStream_t stream) {
  switch (src_type) {
    case ElementType::f32:
      if constexpr (!std::is_same_v<D, float>) {
        if (aligned16(dst) && aligned16(src)) {
          convert_f32_vec_kernel<D><<<grid_for(n / 4), kThreads, 0, stream>>>(
              static_cast<D*>(dst), static_cast<const float*>(src), n);
          break;
        }
      }
      convert_kernel<D, float><<<grid_for(n), kThreads, 0, stream>>>(
          static_cast<D*>(dst), static_cast<const float*>(src), n);
      break;
    case ElementType::f16:
      convert_kernel<D, __half><<<grid_for(n), kThreads, 0, stream>>>(
          static_cast<D*>(dst), static_cast<const __half*>(src), n);
      break;
    case ElementType::bf16:
      convert_kernel<D, __nv_bfloat16><<<grid_for(n), kThreads, 0, stream>>>(
          static_cast<D*>(dst), static_cast<const __nv_bfloat16*>(src), n);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

__global__ void scale_kernel(float* __restrict__ x, float factor, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    x[i] *= factor;
}

// Each thread forms the factor from `total` (two floats every thread reads from cache) with the
// host's own function (bert/bucket_clip.h): the same f32 factor as the CPU backend.
__global__ void bucket_clip_kernel(float* __restrict__ x, int64_t n,
                                   const float* __restrict__ total, double loss_scale, double tau,
                                   int world) {
  const float factor = bert::bucket_clip_scale(total[0], total[1] != 0.0f, loss_scale, tau, world);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    x[i] *= factor;
}

template <typename S>
__global__ void add_kernel(float* __restrict__ dst, const S* __restrict__ src, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] += to_float(src[i]);
}

// One block per gathered row; bytes copied in 16-byte units when the rows allow, else bytewise.
__global__ void gather_rows_kernel(const unsigned char* __restrict__ src, int64_t src_rows,
                                   const int32_t* __restrict__ indices,
                                   unsigned char* __restrict__ out, int64_t row_bytes, bool vector,
                                   uint32_t* error_flags, uint32_t error_bit) {
  const int64_t i = blockIdx.x;
  const int32_t index = indices[i];
  const bool valid = index >= 0 && index < src_rows;
  if (!valid && threadIdx.x == 0 && error_flags != nullptr) atomicOr(error_flags, error_bit);
  unsigned char* dst = out + i * row_bytes;
  const unsigned char* from = src + static_cast<int64_t>(valid ? index : 0) * row_bytes;
  if (vector) {
    for (int64_t b = threadIdx.x * kVectorBytes; b < row_bytes;
         b += static_cast<int64_t>(blockDim.x) * kVectorBytes)
      *reinterpret_cast<int4*>(dst + b) =
          valid ? *reinterpret_cast<const int4*>(from + b) : make_int4(0, 0, 0, 0);
  } else {
    for (int64_t b = threadIdx.x; b < row_bytes; b += blockDim.x) dst[b] = valid ? from[b] : 0;
  }
}

template <typename T>
__global__ void scatter_add_rows_kernel(const T* __restrict__ d_out,
                                        const int32_t* __restrict__ indices, T* __restrict__ d_src,
                                        int64_t src_rows, int64_t width, uint32_t* error_flags,
                                        uint32_t error_bit) {
  const int64_t i = blockIdx.x;
  const int32_t index = indices[i];
  if (index < 0 || index >= src_rows) {
    if (threadIdx.x == 0 && error_flags != nullptr) atomicOr(error_flags, error_bit);
    return;
  }
  T* dst = d_src + static_cast<int64_t>(index) * width;
  const T* from = d_out + i * width;
  if (width % 2 == 0 && reinterpret_cast<uintptr_t>(dst) % 4 == 0) {
    using T2 = typename Pair<T>::type;
    for (int64_t c = threadIdx.x * 2; c < width; c += static_cast<int64_t>(blockDim.x) * 2)
      atomicAdd(reinterpret_cast<T2*>(dst + c), *reinterpret_cast<const T2*>(from + c));
  } else {
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x) atomicAdd(dst + c, from[c]);
  }
}

// Rows per column-sum chunk: enough chunks to fill the device, few enough partials.
constexpr int64_t kColumnSumRowsPerChunk = 64;
constexpr int kColumnSumThreads = 256;

template <typename T>
__global__ void column_partial_kernel(const T* __restrict__ x, int64_t rows, int64_t width,
                                      float* __restrict__ partials) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= width) return;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * kColumnSumRowsPerChunk;
  const int64_t r1 = min(r0 + kColumnSumRowsPerChunk, rows);
  float sum = 0.0f;
  for (int64_t r = r0; r < r1; ++r) sum += to_float(x[r * width + col]);
  partials[chunk * width + col] = sum;
}

}  // namespace

void activation_forward(ComputeType type, ActivationKind act, const void* pre, void* out, int64_t n,
                        cudaStream_t stream) {
  if (n == 0) return;
  const bool vector = aligned16(pre) && aligned16(out);
  const int64_t work = vector ? n / kElementsPerPack + n % kElementsPerPack : n;
  if (type == ComputeType::f16)
    activation_forward_kernel<__half><<<grid_for(work), kThreads, 0, stream>>>(
        act, static_cast<const __half*>(pre), static_cast<__half*>(out), n, vector);
  else
    activation_forward_kernel<__nv_bfloat16><<<grid_for(work), kThreads, 0, stream>>>(
        act, static_cast<const __nv_bfloat16*>(pre), static_cast<__nv_bfloat16*>(out), n, vector);
  CUDA_CHECK_LAUNCH();
}

void activation_backward(ComputeType type, ActivationKind act, void* d_out, const void* x,
                         int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const bool vector = aligned16(d_out) && aligned16(x);
  const int64_t work = vector ? n / kElementsPerPack + n % kElementsPerPack : n;
  if (type == ComputeType::f16)
    activation_backward_kernel<__half><<<grid_for(work), kThreads, 0, stream>>>(
        act, static_cast<__half*>(d_out), static_cast<const __half*>(x), n, vector);
  else
    activation_backward_kernel<__nv_bfloat16><<<grid_for(work), kThreads, 0, stream>>>(
        act, static_cast<__nv_bfloat16*>(d_out), static_cast<const __nv_bfloat16*>(x), n, vector);
  CUDA_CHECK_LAUNCH();
}

void convert(ElementType dst_type, void* dst, ElementType src_type, const void* src, int64_t n,
             cudaStream_t stream) {
  if (n == 0) return;
  if (dst_type == src_type) {
    const size_t bytes = static_cast<size_t>(n) * (dst_type == ElementType::f32 ? 4 : 2);
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  switch (dst_type) {
    case ElementType::f32:
      convert_from<float>(dst, src_type, src, n, stream);
      break;
    case ElementType::f16:
      convert_from<__half>(dst, src_type, src, n, stream);
      break;
    case ElementType::bf16:
      convert_from<__nv_bfloat16>(dst, src_type, src, n, stream);
      break;
  }
}

void scale_f32(float* x, float factor, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, factor, n);
  CUDA_CHECK_LAUNCH();
}

void bucket_clip_f32(float* x, int64_t n, const float* total, double loss_scale,
                     int64_t num_buckets, int world, cudaStream_t stream) {
  if (n == 0) return;
  bucket_clip_kernel<<<grid_for(n), kThreads, 0, stream>>>(
      x, n, total, loss_scale, bert::bucket_clip_tau(static_cast<size_t>(num_buckets)), world);
  CUDA_CHECK_LAUNCH();
}

void add_to_f32(float* dst, ElementType src_type, const void* src, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  switch (src_type) {
    case ElementType::f32:
      add_kernel<<<grid_for(n), kThreads, 0, stream>>>(dst, static_cast<const float*>(src), n);
      break;
    case ElementType::f16:
      add_kernel<<<grid_for(n), kThreads, 0, stream>>>(dst, static_cast<const __half*>(src), n);
      break;
    case ElementType::bf16:
      add_kernel<<<grid_for(n), kThreads, 0, stream>>>(dst, static_cast<const __nv_bfloat16*>(src),
                                                       n);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

void gather_rows(const void* src, int64_t src_rows, const int32_t* indices, void* out,
                 int64_t count, int64_t width, size_t element_bytes, uint32_t* error_flags,
                 uint32_t error_bit, cudaStream_t stream) {
  if (count == 0) return;
  if (count > 0x7fffffff) throw std::invalid_argument("gather_rows: too many rows");
  const int64_t row_bytes = width * static_cast<int64_t>(element_bytes);
  const bool vector = row_bytes % kVectorBytes == 0 && aligned16(src) && aligned16(out);
  gather_rows_kernel<<<static_cast<unsigned>(count), 128, 0, stream>>>(
      static_cast<const unsigned char*>(src), src_rows, indices, static_cast<unsigned char*>(out),
      row_bytes, vector, error_flags, error_bit);
  CUDA_CHECK_LAUNCH();
}

void scatter_add_rows(ComputeType type, const void* d_out, const int32_t* indices, void* d_src,
                      int64_t src_rows, int64_t count, int64_t width, uint32_t* error_flags,
                      uint32_t error_bit, cudaStream_t stream) {
  if (count == 0) return;
  if (count > 0x7fffffff) throw std::invalid_argument("scatter_add_rows: too many rows");
  if (type == ComputeType::f16)
    scatter_add_rows_kernel<__half><<<static_cast<unsigned>(count), 128, 0, stream>>>(
        static_cast<const __half*>(d_out), indices, static_cast<__half*>(d_src), src_rows, width,
        error_flags, error_bit);
  else
    scatter_add_rows_kernel<__nv_bfloat16><<<static_cast<unsigned>(count), 128, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(d_out), indices, static_cast<__nv_bfloat16*>(d_src),
        src_rows, width, error_flags, error_bit);
  CUDA_CHECK_LAUNCH();
}

int64_t column_sum_chunks(int64_t rows) {
  return (rows + kColumnSumRowsPerChunk - 1) / kColumnSumRowsPerChunk;
}

size_t column_sum_workspace_bytes(int64_t rows, int64_t width) {
  return static_cast<size_t>(column_sum_chunks(rows)) * static_cast<size_t>(width) * sizeof(float);
}

void column_sum_add(ComputeType type, const void* x, int64_t rows, int64_t width, float* target,
                    float* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  const int64_t chunks = column_sum_chunks(rows);
  if (chunks > 65535) throw std::invalid_argument("column_sum_add: too many rows");
  if (workspace_bytes < column_sum_workspace_bytes(rows, width))
    throw std::invalid_argument("column_sum_add: workspace too small");
  const dim3 grid(ceil_div(width, kColumnSumThreads), static_cast<unsigned>(chunks));
  if (type == ComputeType::f16)
    column_partial_kernel<__half><<<grid, kColumnSumThreads, 0, stream>>>(
        static_cast<const __half*>(x), rows, width, workspace);
  else
    column_partial_kernel<__nv_bfloat16><<<grid, kColumnSumThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(x), rows, width, workspace);
  CUDA_CHECK_LAUNCH();
  rows::ColumnTargets targets;
  targets.target[0] = target;
  rows::launch_column_reduce(workspace, chunks, 1, static_cast<int>(width), targets, stream);
}

}  // namespace mlbert::cuda
