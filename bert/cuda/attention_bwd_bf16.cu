// Attention backward kernel instantiated for bf16 (see attention_kernels.cuh).
#include "bert/cuda/attention_kernels.cuh"
#include "bert/cuda/attention_launch.h"

namespace mlbert::cuda::attention_detail {
template void run_attention_bwd<__nv_bfloat16>(const AttentionBwdParams& p, cudaStream_t stream);
template void configure_attention_bwd<__nv_bfloat16>();
}  // namespace mlbert::cuda::attention_detail
