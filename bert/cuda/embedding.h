// BERT's embedding layer as one fused kernel each way:
//   forward   s = word[id] + position[pos] + token_type[seg]; out = dropout(LN(s) * gamma + beta)
//   backward  d_ln = d_out * mask / (1 - p); d_s = LN'(d_ln); tables[ids] += d_s; gamma/beta grads
// The table gradients are scattered with fp32 atomics (ids repeat); the two token-type rows, hit
// by every token, are first summed per block in shared memory so the global atomics stay few.
// An id outside its table is never read or written: the kernel raises a bit in `error_flags`
// (kEmbeddingBadInputId, ...) which the backend reports at its next synchronization.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "bert/cuda/types.h"
#include "bert/philox.h"

namespace mlbert::cuda {

constexpr uint32_t kEmbeddingBadInputId = 1u << 0;
constexpr uint32_t kEmbeddingBadPositionId = 1u << 1;
constexpr uint32_t kEmbeddingBadSegmentId = 1u << 2;

struct EmbeddingTables {
  const int32_t* input_ids = nullptr;  // [tokens]
  const int32_t* position_ids = nullptr;
  const int32_t* segment_ids = nullptr;
  int64_t word_rows = 0, position_rows = 0, token_type_rows = 0;
};

struct EmbeddingForwardArgs {
  ComputeType type = ComputeType::bf16;
  EmbeddingTables ids;
  const void* word = nullptr;  // [rows, hidden] tables in the compute type
  const void* position = nullptr;
  const void* token_type = nullptr;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  void* out = nullptr;       // [tokens, hidden], written
  void* ln_input = nullptr;  // s, written
  float* mean = nullptr;
  float* rstd = nullptr;
  bert::DropoutMask dropout;  // over out, element t * hidden + c
  int64_t tokens = 0, hidden = 0;
  float eps = 1e-12f;
  uint32_t* error_flags = nullptr;
};

struct EmbeddingBackwardArgs {
  ComputeType type = ComputeType::bf16;
  EmbeddingTables ids;
  const void* d_out = nullptr;
  const void* ln_input = nullptr;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  const void* gamma = nullptr;
  float* d_word = nullptr;  // f32, accumulated
  float* d_position = nullptr;
  float* d_token_type = nullptr;
  float* d_gamma = nullptr;
  float* d_beta = nullptr;
  bert::DropoutMask dropout;
  int64_t tokens = 0, hidden = 0;
  uint32_t* error_flags = nullptr;
};

void embedding_forward(const EmbeddingForwardArgs& args, int sm_count, cudaStream_t stream);
size_t embedding_backward_workspace_bytes(int64_t tokens, int64_t hidden, int sm_count);
void embedding_backward(const EmbeddingBackwardArgs& args, float* workspace, size_t workspace_bytes,
                        int sm_count, cudaStream_t stream);

}  // namespace mlbert::cuda
