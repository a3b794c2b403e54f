// Fused softmax cross-entropy with its gradient and accuracy counts: the masked-LM loss over the
// decoder's [masked positions, padded vocab] logits and the 2-class NSP loss use the same kernel.
// One block per row computes max/argmax/sum-exp in one pass and writes the gradient in a second;
// per-row losses and hits go to a workspace and are summed by one block in row order, so the
// statistics are deterministic (no float atomics).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "bert/cuda/types.h"

namespace mlbert::cuda {

struct CrossEntropyArgs {
  ComputeType type = ComputeType::bf16;
  const void* logits = nullptr;  // [rows, row_stride]
  const int32_t* labels = nullptr;
  void* d_logits = nullptr;  // may alias logits; padding columns get 0
  float* stats = nullptr;    // [2], written: loss sum, argmax hits
  int64_t rows = 0, classes = 0, row_stride = 0;
  float grad_scale = 1.0f;
  uint32_t* error_flags = nullptr;  // raised with error_bit for a label outside [0, classes)
  uint32_t error_bit = 0;
};

size_t cross_entropy_workspace_bytes(int64_t rows);
void cross_entropy(const CrossEntropyArgs& args, float* workspace, size_t workspace_bytes,
                   cudaStream_t stream);

}  // namespace mlbert::cuda
