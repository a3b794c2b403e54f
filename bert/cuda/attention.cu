// Attention entry points: parameter validation, dispatch by compute type and kernel family
// (AttentionKernels), and the light kernels around the fused ones (rowsum(dO*O) with
// dQ-accumulator zeroing before the backward, dQ conversion or the deterministic sum of its
// partials after it, the keep bits drawn before the forward).
#include <stdexcept>
#include <string>

#include "bert/cuda/attention.h"
#include "bert/cuda/attention_fa2_layout.h"
#include "bert/cuda/attention_keep_bitmap.h"
#include "bert/cuda/attention_launch.h"
#include "bert/cuda/attention_sequence.cuh"
#include "bert/cuda/common.cuh"

namespace mlbert::cuda {
namespace {

constexpr int kHeadDim = kAttentionHeadDim;
constexpr int kPacksPerHead = kHeadDim / 8;  // 16-byte packs of 8 elements per head row
constexpr int kLightThreads = 256;

// softmax_d[h][t] = sum_d dO[t, h, d] * O[t, h, d]; also zeroes dq_accum[t, h, :] unless null.
// Eight lanes per (token, head), one 16-byte pack each.
template <typename T>
__global__ void attention_bwd_prepare_kernel(const T* __restrict__ out, int64_t out_row_stride,
                                             const T* __restrict__ dout, int64_t dout_row_stride,
                                             float* __restrict__ softmax_d,
                                             float* __restrict__ dq_accum, int total_tokens,
                                             int num_heads) {
  const int64_t item =
      (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kPacksPerHead;
  const int pack = threadIdx.x % kPacksPerHead;
  const bool active = item < static_cast<int64_t>(total_tokens) * num_heads;
  float partial = 0.0f;
  int token = 0, head = 0;
  if (active) {
    token = static_cast<int>(item / num_heads);
    head = static_cast<int>(item % num_heads);
    const int col = head * kHeadDim + pack * 8;
    const Pack<T> o = load_pack(out + token * out_row_stride + col);
    const Pack<T> d = load_pack(dout + token * dout_row_stride + col);
#pragma unroll
    for (int i = 0; i < 8; ++i) partial += to_float(o.v[i]) * to_float(d.v[i]);
    if (dq_accum != nullptr) {  // null: the backward stores every element (deterministic dQ)
      float4* acc = reinterpret_cast<float4*>(dq_accum + item * kHeadDim + pack * 8);
      acc[0] = make_float4(0.f, 0.f, 0.f, 0.f);
      acc[1] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  // Reduce across the 8 lanes of this (token, head); groups of 8 are aligned within the warp.
#pragma unroll
  for (int offset = kPacksPerHead / 2; offset > 0; offset /= 2)
    partial += __shfl_xor_sync(kFullWarpMask, partial, offset);
  if (active && pack == 0) softmax_d[static_cast<int64_t>(head) * total_tokens + token] = partial;
}

template <typename T>
__device__ __forceinline__ Pack<T> pack_of(const float4& lo, const float4& hi) {
  Pack<T> out;
  out.v[0] = from_float<T>(lo.x);
  out.v[1] = from_float<T>(lo.y);
  out.v[2] = from_float<T>(lo.z);
  out.v[3] = from_float<T>(lo.w);
  out.v[4] = from_float<T>(hi.x);
  out.v[5] = from_float<T>(hi.y);
  out.v[6] = from_float<T>(hi.z);
  out.v[7] = from_float<T>(hi.w);
  return out;
}

template <typename T>
__global__ void attention_dq_convert_kernel(const float* __restrict__ dq_accum, T* __restrict__ dq,
                                            int64_t dq_row_stride, int total_tokens,
                                            int num_heads) {
  const int64_t item =
      (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kPacksPerHead;
  const int pack = threadIdx.x % kPacksPerHead;
  if (item >= static_cast<int64_t>(total_tokens) * num_heads) return;
  const int token = static_cast<int>(item / num_heads);
  const int head = static_cast<int>(item % num_heads);
  const float4* src = reinterpret_cast<const float4*>(dq_accum + item * kHeadDim + pack * 8);
  store_pack(dq + token * dq_row_stride + head * kHeadDim + pack * 8, pack_of<T>(src[0], src[1]));
}

// Deterministic dQ of the FlashAttention-2-class backward: each token's dQ is the sum of its
// sequence's per-key-block partials (attention_fa2::dq_partial_offset) in key-block order.
// Block (32 tokens of a sequence, head, sequence); 8 lanes a token, 8 dims each.
template <typename T>
__global__ void __launch_bounds__(attention_fa2::kDqReduceThreads)
    attention_dq_partials_sum_kernel(const AttentionBwdParams p) {
  const int head = blockIdx.y, seq = blockIdx.z;
  int start, len;
  if (!sequence_range(p, seq, start, len)) return;
  const int token = blockIdx.x * attention_fa2::kDqReduceTokens + threadIdx.x / kPacksPerHead;
  if (token >= len) return;
  const int dim = (threadIdx.x % kPacksPerHead) * 8;
  float4 lo = make_float4(0.f, 0.f, 0.f, 0.f), hi = lo;
  for (int key_block = 0; key_block < attention_fa2::bwd_key_blocks(len); ++key_block) {
    const float4* src = reinterpret_cast<const float4*>(
        p.dq_accum + attention_fa2::dq_partial_offset(key_block, start + token, head, p.num_heads,
                                                      p.total_tokens, dim));
    const float4 a = src[0], b = src[1];
    lo = make_float4(lo.x + a.x, lo.y + a.y, lo.z + a.z, lo.w + a.w);
    hi = make_float4(hi.x + b.x, hi.y + b.y, hi.z + b.z, hi.w + b.w);
  }
  store_pack(static_cast<T*>(p.dq) + (start + token) * p.dq_row_stride + head * kHeadDim + dim,
             pack_of<T>(lo, hi));
}

// Fills the keep-bit chunks of the forward's dropout before the forward: one warp a chunk, in the
// byte order of the kernels that read them (dropout_bits.h: lane L the block of byte L,
// attention_keep_chunk_block; attention_keep_bitmap.h with `bitmap`). Block (query tile, head,
// sequence); sequences the kernels refuse (kAttentionBadCuSeqlens) are skipped.
constexpr int kKeepBitsWarps = 8;
__global__ void __launch_bounds__(kKeepBitsWarps* kWarpSize)
    attention_keep_bits_kernel(const AttentionParams p, bool bitmap) {
  const int query_tile = blockIdx.x, head = blockIdx.y, seq = blockIdx.z;
  int start, len;
  if (!sequence_range(p, seq, start, len) || query_tile * 16 >= len) return;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int key_tiles = (len + 15) / 16;
  for (int key_tile = warp; key_tile < key_tiles; key_tile += kKeepBitsWarps) {
    const uint64_t block =
        bitmap ? keep_bitmap_chunk_block(static_cast<uint64_t>(start), head, p.num_heads,
                                         p.dropout_row_stride, key_tile, query_tile, lane)
               : attention_keep_chunk_block(static_cast<uint64_t>(start), head, p.num_heads,
                                            p.dropout_row_stride, key_tile, query_tile, lane);
    const int byte = bitmap ? keep_bitmap_drawn_byte(lane) : lane;
    p.keep_bits[attention_keep_chunk(p.keep_layout, head, seq, start, key_tile, query_tile) +
                byte] = static_cast<uint8_t>(dropout_keep_block_bits(p.dropout, block));
  }
}

void require_aligned(const void* ptr, const char* name) {
  if (ptr == nullptr) throw std::invalid_argument(std::string("attention: ") + name + " is null");
  if (reinterpret_cast<uintptr_t>(ptr) % kVectorBytes != 0)
    throw std::invalid_argument(std::string("attention: ") + name + " is not 16-byte aligned");
}

void require_stride(int64_t stride, int num_heads, const char* name) {
  if (stride % 8 != 0 || stride < static_cast<int64_t>(num_heads) * kHeadDim)
    throw std::invalid_argument(std::string("attention: ") + name + " = " + std::to_string(stride) +
                                " must be a multiple of 8 and at least num_heads * 64 = " +
                                std::to_string(num_heads * kHeadDim));
}

template <typename T>
void forward_typed(const AttentionParams& p, cudaStream_t stream) {
  if (attention_uses_fa2(p.kernels, p.max_seqlen)) {
    attention_fa2::run_attention_fa2_fwd<T>(p, stream);
  } else {
    attention_detail::run_attention_fwd<T>(p, stream);
  }
}

template <typename T>
void backward_typed(const AttentionBwdParams& p, cudaStream_t stream) {
  const bool fa2 = attention_uses_fa2(p.kernels, p.max_seqlen);
  const int64_t items = static_cast<int64_t>(p.total_tokens) * p.num_heads;
  const unsigned blocks = ceil_div(items * kPacksPerHead, kLightThreads);
  attention_bwd_prepare_kernel<T><<<blocks, kLightThreads, 0, stream>>>(
      static_cast<const T*>(p.out), p.out_row_stride, static_cast<const T*>(p.dout),
      p.dout_row_stride, p.softmax_d, p.deterministic_dq ? nullptr : p.dq_accum, p.total_tokens,
      p.num_heads);
  CUDA_CHECK_LAUNCH();
  if (fa2) {
    attention_fa2::run_attention_fa2_bwd<T>(p, stream);
  } else {
    attention_detail::run_attention_bwd<T>(p, stream);
  }
  if (p.deterministic_dq) {
    const dim3 grid(ceil_div(p.max_seqlen, attention_fa2::kDqReduceTokens),
                    static_cast<unsigned>(p.num_heads), static_cast<unsigned>(p.num_seqs));
    attention_dq_partials_sum_kernel<T><<<grid, attention_fa2::kDqReduceThreads, 0, stream>>>(p);
  } else {
    attention_dq_convert_kernel<T><<<blocks, kLightThreads, 0, stream>>>(
        p.dq_accum, static_cast<T*>(p.dq), p.dq_row_stride, p.total_tokens, p.num_heads);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void validate_attention_params(const AttentionParams& p) {
  if (p.num_seqs <= 0 || p.num_heads <= 0 || p.total_tokens <= 0 || p.max_seqlen <= 0)
    throw std::invalid_argument(
        "attention: num_seqs, num_heads, total_tokens and max_seqlen must be positive");
  if (p.cu_seqlens == nullptr) throw std::invalid_argument("attention: cu_seqlens is null");
  if (p.softmax_lse == nullptr) throw std::invalid_argument("attention: softmax_lse is null");
  if (p.dropout.enabled && p.dropout.keep_threshold == 0)
    throw std::invalid_argument("attention: dropout mask keeps nothing (keep_threshold 0)");
  // The 128-row kernels take the maximum of the unscaled scores, which needs a positive scale.
  if (attention_uses_fa2(p.kernels, p.max_seqlen) && !(p.softmax_scale > 0.0f))
    throw std::invalid_argument("attention: softmax_scale = " + std::to_string(p.softmax_scale) +
                                " must be positive for the 128-row kernels");
  require_aligned(p.q, "q");
  require_aligned(p.k, "k");
  require_aligned(p.v, "v");
  require_aligned(p.out, "out");
  require_stride(p.q_row_stride, p.num_heads, "q_row_stride");
  require_stride(p.k_row_stride, p.num_heads, "k_row_stride");
  require_stride(p.v_row_stride, p.num_heads, "v_row_stride");
  require_stride(p.out_row_stride, p.num_heads, "out_row_stride");
}

void attention_forward(ComputeType type, const AttentionParams& params, cudaStream_t stream) {
  validate_attention_params(params);
  AttentionParams p = params;
  p.dropout_row_stride = bert::attention_dropout_row_stride(p.max_seqlen);
  p.keep_layout = attention_keep_layout(p.total_tokens, p.num_seqs, p.max_seqlen);
  if (p.keep_bits == nullptr || !p.dropout.enabled) p.keep_bits_kernel = false;
  if (p.keep_bits != nullptr &&
      attention_keep_bytes(p.total_tokens, p.num_seqs, p.num_heads, p.max_seqlen) > UINT32_MAX)
    throw std::invalid_argument(
        "attention: the dropout keep bits of " + std::to_string(p.total_tokens) + " tokens in " +
        std::to_string(p.num_seqs) + " sequences exceed the kernels' 4 GiB of byte offsets");
  if (p.keep_bits_kernel) {
    const dim3 grid(static_cast<unsigned>(p.keep_layout.query_tiles),
                    static_cast<unsigned>(p.num_heads), static_cast<unsigned>(p.num_seqs));
    attention_keep_bits_kernel<<<grid, kKeepBitsWarps * kWarpSize, 0, stream>>>(
        p, attention_uses_fa2(p.kernels, p.max_seqlen));
    CUDA_CHECK_LAUNCH();
  }
  if (type == ComputeType::f16) {
    forward_typed<__half>(p, stream);
  } else {
    forward_typed<__nv_bfloat16>(p, stream);
  }
}

void attention_backward(ComputeType type, const AttentionBwdParams& params, cudaStream_t stream) {
  validate_attention_params(params);
  AttentionBwdParams p = params;
  p.dropout_row_stride = bert::attention_dropout_row_stride(p.max_seqlen);
  p.keep_layout = attention_keep_layout(p.total_tokens, p.num_seqs, p.max_seqlen);
  require_aligned(p.dout, "dout");
  require_aligned(p.dq, "dq");
  require_aligned(p.dk, "dk");
  require_aligned(p.dv, "dv");
  require_aligned(p.dq_accum, "dq_accum");
  if (p.softmax_d == nullptr) throw std::invalid_argument("attention: softmax_d is null");
  require_stride(p.dout_row_stride, p.num_heads, "dout_row_stride");
  require_stride(p.dq_row_stride, p.num_heads, "dq_row_stride");
  require_stride(p.dk_row_stride, p.num_heads, "dk_row_stride");
  require_stride(p.dv_row_stride, p.num_heads, "dv_row_stride");
  attention_dq_accum_floats(p.kernels, p.deterministic_dq, p.total_tokens, p.num_heads,
                            p.max_seqlen);  // refuses deterministic dQ on the 64-row kernels
  if (type == ComputeType::f16) {
    backward_typed<__half>(p, stream);
  } else {
    backward_typed<__nv_bfloat16>(p, stream);
  }
}

size_t attention_dq_accum_floats(AttentionKernels kernels, bool deterministic_dq, int64_t tokens,
                                 int64_t heads, int max_seqlen) {
  const size_t plane = static_cast<size_t>(tokens) * static_cast<size_t>(heads) * kHeadDim;
  if (!deterministic_dq) return plane;
  if (!attention_uses_fa2(kernels, max_seqlen))
    throw std::invalid_argument(
        "attention: deterministic dQ needs the 128-row (fa2) kernels; max_seqlen " +
        std::to_string(max_seqlen) + " resolves to the 64-row ones");
  return plane * static_cast<size_t>(attention_fa2::bwd_key_blocks(max_seqlen));
}

void attention_configure_device() {
  attention_detail::configure_attention_bwd<__half>();
  attention_detail::configure_attention_bwd<__nv_bfloat16>();
  attention_fa2::configure_attention_fa2_fwd<__half>();
  attention_fa2::configure_attention_fa2_fwd<__nv_bfloat16>();
  attention_fa2::configure_attention_fa2_bwd<__half>();
  attention_fa2::configure_attention_fa2_bwd<__nv_bfloat16>();
}

}  // namespace mlbert::cuda
