// The FlashAttention-2-class attention backward for fp16 (see attention_fa2_bwd.cuh).
#include "bert/cuda/attention_fa2_bwd.cuh"
#include "bert/cuda/attention_launch.h"

namespace mlbert::cuda::attention_fa2 {
template void run_attention_fa2_bwd<__half>(const AttentionBwdParams& p, cudaStream_t stream);
template void configure_attention_fa2_bwd<__half>();
}  // namespace mlbert::cuda::attention_fa2
