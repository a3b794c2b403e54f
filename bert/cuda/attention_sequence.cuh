// The token range of one sequence of an attention call, read from cu_seqlens on the device, shared
// by the attention kernels and the kernel that fills their dropout keep bits.
#pragma once

#include "bert/cuda/attention.h"

namespace mlbert::cuda {

// The sequence's token range, or false (and an error bit) when cu_seqlens is inconsistent.
__device__ __forceinline__ bool sequence_range(const AttentionParams& p, int seq, int& start,
                                               int& len) {
  start = p.cu_seqlens[seq];
  len = p.cu_seqlens[seq + 1] - start;
  const bool ok = start >= 0 && len > 0 && len <= p.max_seqlen && start + len <= p.total_tokens;
  if (!ok && threadIdx.x == 0 && blockIdx.x == 0 && p.error_flags != nullptr)
    atomicOr(p.error_flags, kAttentionBadCuSeqlens);
  return ok;
}

}  // namespace mlbert::cuda
