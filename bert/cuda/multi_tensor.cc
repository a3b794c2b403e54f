// Multi-tensor chunk tables (see multi_tensor.h).
#include "bert/cuda/multi_tensor.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace mlbert::cuda {

ChunkTable build_chunk_table(std::span<const bert::TensorSegment> segments, size_t buffer_elements,
                             size_t chunk_elements) {
  if (chunk_elements == 0 || chunk_elements > std::numeric_limits<uint32_t>::max())
    throw std::invalid_argument("chunk table: chunk size must be in [1, 2^32)");
  if (segments.size() >= std::numeric_limits<uint32_t>::max())
    throw std::invalid_argument("chunk table: too many segments");
  ChunkTable table;
  table.chunk_elements = chunk_elements;
  table.segment_first_chunk.reserve(segments.size() + 1);
  for (size_t s = 0; s < segments.size(); ++s) {
    const bert::TensorSegment& seg = segments[s];
    if (seg.offset > buffer_elements || seg.numel > buffer_elements - seg.offset)
      throw std::invalid_argument(
          "chunk table: segment " + std::to_string(s) + " [" + std::to_string(seg.offset) + ", " +
          std::to_string(seg.offset + seg.numel) + ") ends past the buffer of " +
          std::to_string(buffer_elements) + " elements");
    table.segment_first_chunk.push_back(static_cast<uint32_t>(table.chunks.size()));
    for (size_t done = 0; done < seg.numel; done += chunk_elements) {
      TensorChunk chunk;
      chunk.offset = seg.offset + done;
      chunk.numel = static_cast<uint32_t>(std::min(chunk_elements, seg.numel - done));
      chunk.segment = static_cast<uint32_t>(s);
      chunk.weight_decay = seg.weight_decay ? 1u : 0u;
      table.chunks.push_back(chunk);
    }
    table.total_elements += seg.numel;
  }
  table.segment_first_chunk.push_back(static_cast<uint32_t>(table.chunks.size()));
  if (table.chunks.size() >= std::numeric_limits<uint32_t>::max())
    throw std::invalid_argument("chunk table: too many chunks");
  return table;
}

bool same_segments(std::span<const bert::TensorSegment> a, std::span<const bert::TensorSegment> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].offset != b[i].offset || a[i].numel != b[i].numel ||
        a[i].weight_decay != b[i].weight_decay)
      return false;
  }
  return true;
}

}  // namespace mlbert::cuda
