// Attention backward kernel instantiated for fp16 (see attention_kernels.cuh).
#include "bert/cuda/attention_kernels.cuh"
#include "bert/cuda/attention_launch.h"

namespace mlbert::cuda::attention_detail {
template void run_attention_bwd<__half>(const AttentionBwdParams& p, cudaStream_t stream);
template void configure_attention_bwd<__half>();
}  // namespace mlbert::cuda::attention_detail
