// Shared helpers of the Ops contract: dtype sizes and names, tensor slicing.
#include "bert/ops.h"

#include "bert/bucket_clip.h"

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

void require_input_activation_fusable(const char* op, const LinearBackwardParams& p) {
  const char* problem = nullptr;
  if (p.input_activation != Activation::gelu && p.input_activation != Activation::gelu_erf)
    problem = "input_activation must be gelu or gelu_erf";
  else if (p.batch != 1)
    problem = "input_activation needs batch 1";
  else if (!p.d_input.defined())
    problem = "input_activation needs d_input";
  else if (p.accumulate_d_input)
    problem = "input_activation cannot accumulate into d_input";
  if (problem) throw std::invalid_argument(std::string(op) + ": " + problem);
}

void Ops::bucket_clip(const BucketClipParams& p) {
  float total[2];
  copy_to_host(total, p.total, sizeof(total));
  scale(p.x, bucket_clip_scale(total[0], total[1] != 0.0f, p.loss_scale,
                               bucket_clip_tau(p.num_buckets), p.world));
}

}  // namespace mlbert::bert
