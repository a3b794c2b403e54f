// CRC-32C (Castagnoli), as TensorFlow and LevelDB tables use it, with their "mask" transform.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mlbert::bert {

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c(const void* data, size_t size) {
  return crc32c_extend(0, data, size);
}

// Stored CRCs are masked so that CRCs of data containing CRCs stay well distributed.
inline constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;
inline uint32_t crc32c_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}
inline uint32_t crc32c_unmask(uint32_t masked) {
  const uint32_t rot = masked - kCrcMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace mlbert::bert
