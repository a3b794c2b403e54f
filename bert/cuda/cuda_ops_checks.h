// What every file of CudaOps checks and maps (cuda_ops.cc, cuda_ops_attention.cc,
// cuda_ops_norm.cc, cuda_ops_optimizer.cc): argument checks that throw std::invalid_argument naming
// the op and the field, and the mapping of bert's dtypes to the kernels' types. Internal to
// bert/cuda.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "bert/cuda/elementwise.h"
#include "bert/cuda/gemm_plan.h"
#include "bert/ops.h"

namespace mlbert::cuda::ops_checks {

using bert::DType;
using bert::Tensor;

// Device error bits beyond the embedding's (see embedding.h).
inline constexpr uint32_t kErrorGatherIndex = 1u << 8;
inline constexpr uint32_t kErrorScatterIndex = 1u << 9;
inline constexpr uint32_t kErrorLabel = 1u << 10;

inline void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(op) + ": " + what);
}

// `t` must be defined (unless numel is 0), of `dtype`, and hold at least `numel` elements.
inline void require_tensor(const Tensor& t, DType dtype, size_t numel, const char* op,
                           const char* field) {
  require(t.defined() || numel == 0, op, std::string(field) + " is not set");
  require(t.dtype == dtype, op,
          std::string(field) + " has dtype " + bert::dtype_name(t.dtype) + ", expected " +
              bert::dtype_name(dtype));
  require(t.numel >= numel, op,
          std::string(field) + " holds " + std::to_string(t.numel) + " elements, needs " +
              std::to_string(numel));
}

inline ComputeType compute_type_of(DType dtype) {
  if (dtype == DType::f16) return ComputeType::f16;
  if (dtype == DType::bf16) return ComputeType::bf16;
  throw std::invalid_argument(std::string("CudaOps: compute dtype must be f16 or bf16, not ") +
                              bert::dtype_name(dtype));
}

inline MatrixType matrix_type_of(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return MatrixType::f16;
    case DType::bf16:
      return MatrixType::bf16;
    case DType::f32:
      return MatrixType::f32;
    default:
      throw std::invalid_argument("gemm: integer matrices are not supported");
  }
}

inline ElementType element_type_of(DType dtype, const char* op) {
  switch (dtype) {
    case DType::f32:
      return ElementType::f32;
    case DType::f16:
      return ElementType::f16;
    case DType::bf16:
      return ElementType::bf16;
    default:
      throw std::invalid_argument(std::string(op) + ": i32 tensors cannot be converted");
  }
}

inline ElementType element_type_of(MatrixType type) {
  switch (type) {
    case MatrixType::f32:
      return ElementType::f32;
    case MatrixType::f16:
      return ElementType::f16;
    case MatrixType::bf16:
      return ElementType::bf16;
  }
  return ElementType::f32;
}

inline ActivationKind activation_kind(bert::Activation act) {
  switch (act) {
    case bert::Activation::gelu:
      return ActivationKind::gelu_tanh;
    case bert::Activation::gelu_erf:
      return ActivationKind::gelu_erf;
    case bert::Activation::tanh:
      return ActivationKind::tanh;
    default:
      throw std::invalid_argument("activation: none has no kernel");
  }
}

template <typename P>
char* byte_ptr(const Tensor& t, size_t element_offset) {
  return static_cast<char*>(t.data) + element_offset * bert::dtype_size(t.dtype);
}
}  // namespace mlbert::cuda::ops_checks
