// Memory-bound elementwise and row-copy kernels of the CUDA backend: activations and their
// gradients, dtype casts, scaling, gathers and scatters of rows, and a two-stage column sum (the
// bias gradient when cuBLASLt's BGRAD epilogue is unavailable).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "bert/cuda/types.h"

namespace mlbert::cuda {

enum class ActivationKind : uint8_t { gelu_tanh, gelu_erf, tanh };

// out = act(pre), n elements of the compute type.
void activation_forward(ComputeType type, ActivationKind act, const void* pre, void* out, int64_t n,
                        cudaStream_t stream);
// d_out *= act'(x) in place, x = pre-activation (GELUs) or the forward's output (tanh).
void activation_backward(ComputeType type, ActivationKind act, void* d_out, const void* x,
                         int64_t n, cudaStream_t stream);

enum class ElementType : uint8_t { f32, f16, bf16 };
// dst = src converted (any pair of f32/f16/bf16), n elements.
void convert(ElementType dst_type, void* dst, ElementType src_type, const void* src, int64_t n,
             cudaStream_t stream);
// x *= factor over n floats.
void scale_f32(float* x, float factor, int64_t n, cudaStream_t stream);
// x *= bert::bucket_clip_scale(total[0], total[1] != 0, loss_scale, tau, world) over n floats,
// tau = bert::bucket_clip_tau(num_buckets), `total` read on the device (l2_norm's [norm, inf/nan
// flag] of the same bucket).
void bucket_clip_f32(float* x, int64_t n, const float* total, double loss_scale,
                     int64_t num_buckets, int world, cudaStream_t stream);
// dst += src over n elements, src f32, f16 or bf16 (a cuBLASLt bias gradient into the f32
// gradient buffer), the sum in f32.
void add_to_f32(float* dst, ElementType src_type, const void* src, int64_t n, cudaStream_t stream);

// out[i] = src[indices[i]] (rows of `width` elements of `element_bytes` each). An index outside
// [0, src_rows) leaves the row zero and raises `error_bit` in error_flags.
void gather_rows(const void* src, int64_t src_rows, const int32_t* indices, void* out,
                 int64_t count, int64_t width, size_t element_bytes, uint32_t* error_flags,
                 uint32_t error_bit, cudaStream_t stream);
// d_src[indices[i]] += d_out[i] for compute-type rows (atomics: indices may repeat).
void scatter_add_rows(ComputeType type, const void* d_out, const int32_t* indices, void* d_src,
                      int64_t src_rows, int64_t count, int64_t width, uint32_t* error_flags,
                      uint32_t error_bit, cudaStream_t stream);

// target[c] += sum over rows r of x[r * width + c] (compute type x, f32 target): per-chunk
// partials then a per-column sum in chunk order. `workspace` holds column_sum_workspace_floats.
int64_t column_sum_chunks(int64_t rows);
size_t column_sum_workspace_bytes(int64_t rows, int64_t width);
void column_sum_add(ComputeType type, const void* x, int64_t rows, int64_t width, float* target,
                    float* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace mlbert::cuda
