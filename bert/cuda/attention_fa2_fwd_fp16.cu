// The FlashAttention-2-class attention forward for fp16 (see attention_fa2_fwd.cuh).
#include "bert/cuda/attention_fa2_fwd.cuh"
#include "bert/cuda/attention_launch.h"

namespace mlbert::cuda::attention_fa2 {
template void run_attention_fa2_fwd<__half>(const AttentionParams& p, cudaStream_t stream);
template void configure_attention_fa2_fwd<__half>();
}  // namespace mlbert::cuda::attention_fa2
