// Argument checks shared by the CPU kernels: a violated contract is a clear exception naming the
// op and the field, never a silent out-of-bounds write.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "bert/ops.h"

namespace mlbert::bert::cpu {

// Loops over fewer elements than this stay on one thread: an OpenMP region costs more than it
// saves on tiny tensors, and far more when the cores are shared.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 15;

inline void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(op) + ": " + what);
}

// `t` must be defined, of `dtype`, and hold at least `numel` elements.
inline void require_tensor(const Tensor& t, DType dtype, size_t numel, const char* op,
                           const char* field) {
  require(t.defined() || numel == 0, op, std::string(field) + " is not set");
  require(
      t.dtype == dtype, op,
      std::string(field) + " has dtype " + dtype_name(t.dtype) + ", expected " + dtype_name(dtype));
  require(t.numel >= numel, op,
          std::string(field) + " holds " + std::to_string(t.numel) + " elements, needs " +
              std::to_string(numel));
}

}  // namespace mlbert::bert::cpu
