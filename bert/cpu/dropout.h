// Dropout factors for a run of consecutive elements, one Philox block per eight elements.
#pragma once
#include <cstdint>

#include "bert/philox.h"

namespace mlbert::bert::cpu {

// out[i] = dropout_factor(mask, first + i) for i < count.
inline void dropout_factors(const DropoutMask& mask, uint64_t first, int64_t count, float* out) {
  if (!mask.enabled) {
    for (int64_t i = 0; i < count; ++i) out[i] = 1.0f;
    return;
  }
  uint64_t element = first;
  int64_t i = 0;
  while (i < count) {
    const Philox4x32 block = dropout_block(mask, element);
    for (uint32_t index = static_cast<uint32_t>(element & 7u);
         index < kDropoutBlockElements && i < count; ++index, ++i, ++element) {
      out[i] = dropout_word(block, index) < mask.keep_threshold ? mask.scale : 0.0f;
    }
  }
}

}  // namespace mlbert::bert::cpu
