// The compute precisions of the CUDA backend. Master weights, optimizer state, gradients' norms and
// every accumulation stay fp32; activations and the compute copy of the weights are fp16 or bf16.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace mlbert::cuda {

enum class ComputeType { f16, bf16 };

constexpr std::size_t element_bytes(ComputeType) {
  return 2;
}

inline const char* compute_type_name(ComputeType type) {
  return type == ComputeType::f16 ? "fp16" : "bf16";
}

inline ComputeType parse_compute_type(const std::string& name) {
  if (name == "fp16" || name == "f16" || name == "float16") return ComputeType::f16;
  if (name == "bf16" || name == "bfloat16") return ComputeType::bf16;
  throw std::invalid_argument("unknown compute precision '" + name + "' (expected fp16 or bf16)");
}

}  // namespace mlbert::cuda
