// Attention forward kernel instantiated for bf16 (see attention_kernels.cuh).
#include "bert/cuda/attention_kernels.cuh"
#include "bert/cuda/attention_launch.h"

namespace mlbert::cuda::attention_detail {
template void run_attention_fwd<__nv_bfloat16>(const AttentionParams& p, cudaStream_t stream);
}  // namespace mlbert::cuda::attention_detail
