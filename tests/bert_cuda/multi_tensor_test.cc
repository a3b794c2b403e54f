// Chunk tables of the multi-tensor optimizer kernels: every element of every segment in exactly
// one chunk, chunks never crossing segments, the per-segment chunk ranges contiguous.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "bert/config.h"
#include "bert/cuda/multi_tensor.h"
#include "bert/parameters.h"

namespace cuda = mlbert::cuda;
using mlbert::bert::TensorSegment;

TEST_CASE("chunk table covers each segment exactly once with chunks inside the segment") {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<TensorSegment> segments;
    size_t offset = 0;
    const int count = 1 + static_cast<int>(rng() % 40);
    for (int s = 0; s < count; ++s) {
      offset += rng() % 70;  // gaps between tensors
      const size_t numel = rng() % 5 == 0 ? 0 : 1 + rng() % 3000;
      segments.push_back({offset, numel, rng() % 2 == 0});
      offset += numel;
    }
    const size_t chunk = 1 + rng() % 700;
    const cuda::ChunkTable table = cuda::build_chunk_table(segments, offset, chunk);
    REQUIRE(table.segment_first_chunk.size() == segments.size() + 1);
    std::vector<int> covered(offset, 0);
    for (size_t s = 0; s < segments.size(); ++s) {
      for (uint32_t c = table.segment_first_chunk[s]; c < table.segment_first_chunk[s + 1]; ++c) {
        const cuda::TensorChunk& ch = table.chunks[c];
        REQUIRE(ch.segment == s);
        REQUIRE(ch.weight_decay == (segments[s].weight_decay ? 1u : 0u));
        REQUIRE(ch.numel >= 1);
        REQUIRE(ch.numel <= chunk);
        REQUIRE(ch.offset >= segments[s].offset);
        REQUIRE(ch.offset + ch.numel <= segments[s].offset + segments[s].numel);
        for (uint32_t i = 0; i < ch.numel; ++i) covered[ch.offset + i] += 1;
      }
    }
    for (size_t s = 0; s < segments.size(); ++s)
      for (size_t i = 0; i < segments[s].numel; ++i) REQUIRE(covered[segments[s].offset + i] == 1);
  }
}

TEST_CASE("chunk table rejects a segment past the buffer, naming it") {
  std::vector<TensorSegment> segments{{0, 10, true}, {10, 10, false}};
  CHECK_NOTHROW(cuda::build_chunk_table(segments, 20));
  CHECK_THROWS_WITH(cuda::build_chunk_table(segments, 19), Catch::Contains("segment 1"));
}

TEST_CASE("chunk table of BERT-large: every chunk starts 16-byte aligned for float4 access") {
  const auto config = mlbert::bert::BertConfig::preset("bert-large");
  const auto layout = mlbert::bert::bert_parameter_layout(config);
  std::vector<TensorSegment> segments;
  size_t end = 0;
  for (const auto& info : layout) {
    segments.push_back({info.offset, info.numel, info.weight_decay});
    end = std::max(end, info.offset + info.numel);
  }
  const cuda::ChunkTable table = cuda::build_chunk_table(segments, end);
  CHECK(segments.size() == 398);
  CHECK(table.total_elements == 336232258);
  size_t expected_chunks = 0;
  for (const auto& s : segments)
    expected_chunks += (s.numel + cuda::kDefaultChunkElements - 1) / cuda::kDefaultChunkElements;
  CHECK(table.chunks.size() == expected_chunks);
  for (const auto& ch : table.chunks) REQUIRE(ch.offset % 4 == 0);
  CHECK(cuda::same_segments(segments, segments));
  auto other = segments;
  other[5].weight_decay = !other[5].weight_decay;
  CHECK_FALSE(cuda::same_segments(segments, other));
}
