// Shared helpers of the Ops contract: dtype sizes and names, tensor slicing.
#include "bert/ops.h"

#include <stdexcept>
#include <string>

namespace mlbert::bert {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
  }
  return "?";
}

Tensor Tensor::slice(size_t offset, size_t count) const {
  if (offset > numel || count > numel - offset) {
    throw std::out_of_range("Tensor::slice: [" + std::to_string(offset) + ", " +
                            std::to_string(offset + count) + ") is outside a tensor of " +
                            std::to_string(numel) + " elements");
  }
  Tensor view = *this;
  view.data = static_cast<char*>(data) + offset * dtype_size(dtype);
  view.numel = count;
  return view;
}

}  // namespace mlbert::bert
