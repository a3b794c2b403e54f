// Per-compute-type entry points of the attention kernels; each is instantiated in its own small
// .cu file (attention_{fwd,bwd}_{fp16,bf16}.cu) so the four heavy kernels compile in parallel.
#pragma once

#include <cuda_runtime.h>

#include "bert/cuda/attention.h"

namespace mlbert::cuda::attention_detail {

template <typename T>
void run_attention_fwd(const AttentionParams& p, cudaStream_t stream);
template <typename T>
void run_attention_bwd(const AttentionBwdParams& p, cudaStream_t stream);

}  // namespace mlbert::cuda::attention_detail
