// Per-compute-type entry points of the attention kernels; each is instantiated in its own small
// .cu file (attention_{fwd,bwd}_{fp16,bf16}.cu, attention_fa2_{fwd,bwd}_{fp16,bf16}.cu) so the
// heavy kernels compile in parallel.
#pragma once

#include <cuda_runtime.h>

#include "bert/cuda/attention.h"

namespace mlbert::cuda::attention_detail {

template <typename T>
void run_attention_fwd(const AttentionParams& p, cudaStream_t stream);
template <typename T>
void run_attention_bwd(const AttentionBwdParams& p, cudaStream_t stream);
// Raises the backward's dynamic shared memory limit on the current device.
template <typename T>
void configure_attention_bwd();

}  // namespace mlbert::cuda::attention_detail

namespace mlbert::cuda::attention_fa2 {

template <typename T>
void run_attention_fa2_fwd(const AttentionParams& p, cudaStream_t stream);
template <typename T>
void run_attention_fa2_bwd(const AttentionBwdParams& p, cudaStream_t stream);
// Raise the kernels' dynamic shared memory limits on the current device.
template <typename T>
void configure_attention_fa2_fwd();
template <typename T>
void configure_attention_fa2_bwd();

}  // namespace mlbert::cuda::attention_fa2
