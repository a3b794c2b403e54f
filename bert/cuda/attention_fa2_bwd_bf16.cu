// The FlashAttention-2-class attention backward for bf16 (see attention_fa2_bwd.cuh).
#include "bert/cuda/attention_fa2_bwd.cuh"
#include "bert/cuda/attention_launch.h"

namespace mlbert::cuda::attention_fa2 {
template void run_attention_fa2_bwd<__nv_bfloat16>(const AttentionBwdParams& p,
                                                   cudaStream_t stream);
template void configure_attention_fa2_bwd<__nv_bfloat16>();
}  // namespace mlbert::cuda::attention_fa2
