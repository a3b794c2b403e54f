// Multi-tensor chunk tables: the flat fp32 master/gradient buffers cut into fixed-size chunks that
// never cross a tensor (segment) boundary, so one launch visits every parameter tensor with equal
// work per block and per-tensor reductions (LAMB trust ratios, per-tensor L2 norms) are sums over
// a contiguous run of chunks. Pure host logic: built once per segment list, uploaded once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "bert/ops.h"

namespace mlbert::cuda {

// 64 Ki elements: 256 KiB of fp32 per chunk, a few thousand chunks for BERT-large.
constexpr size_t kDefaultChunkElements = size_t{1} << 16;

struct TensorChunk {
  uint64_t offset = 0;   // first element in the flat buffer
  uint32_t numel = 0;    // 1 .. chunk_elements
  uint32_t segment = 0;  // index into the segment list
  uint32_t weight_decay = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(TensorChunk) == 24);

struct ChunkTable {
  std::vector<TensorChunk> chunks;
  // chunks[segment_first_chunk[s] .. segment_first_chunk[s + 1]) belong to segment s.
  std::vector<uint32_t> segment_first_chunk;
  size_t chunk_elements = kDefaultChunkElements;
  size_t total_elements = 0;
};

// Throws std::invalid_argument naming the segment when one ends past `buffer_elements`.
ChunkTable build_chunk_table(std::span<const bert::TensorSegment> segments, size_t buffer_elements,
                             size_t chunk_elements = kDefaultChunkElements);

// True when two segment lists are identical (the table of one can serve the other).
bool same_segments(std::span<const bert::TensorSegment> a, std::span<const bert::TensorSegment> b);

}  // namespace mlbert::cuda
