// The FlashAttention-2-class attention backward (included only by
// attention_fa2_bwd_{bf16,fp16}.cu).
//
// One CTA per 128 keys of one head of one sequence, 8 warps x 16 keys. A warp's K and V
// fragments are loaded once and stay in registers across every query tile of 64 (the 64-key
// kernel reloaded them from shared memory for each); dK and dV accumulate in registers. Per query
// tile: S^T = K Q^T and dP^T = V dO^T, P from the log-sum-exp (log2 domain, one FFMA before
// exp2), the sequence-end mask on boundary tiles only, dropout bits drawn or read from the keep
// bitmap without shuffles, dV += P^T dO and dK += dS^T Q, then dS^T through shared memory for
// dQ = dS K over the CTA's 128 keys, added to the fp32 accumulator with one 16-byte atomic per
// four elements per CTA (or, deterministic dQ, stored as this key block's partial).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "bert/cuda/attention.h"
#include "bert/cuda/attention_fa2_common.cuh"
#include "bert/cuda/attention_sequence.cuh"

namespace mlbert::cuda::attention_fa2 {

// The row statistics of a query tile, read into registers while the previous tile computes and
// stored to shared memory at its end: the log-sum-exp times log2(e), and rowsum(dO * O).
struct RowStats {
  float lse_log2 = 0.0f;
  float dsum = 0.0f;
};
__device__ __forceinline__ RowStats load_row_stats(const float* lse, const float* dsum, int query0,
                                                   int len) {
  RowStats s;
  const int q = query0 + static_cast<int>(threadIdx.x);
  if (threadIdx.x < kBwdBlockM && q < len) {
    s.lse_log2 = __ldg(lse + q) * kLog2e;
    s.dsum = __ldg(dsum + q);
  }
  return s;
}
__device__ __forceinline__ void store_row_stats(const RowStats& s, float* smem_lse,
                                                float* smem_dsum) {
  if (threadIdx.x < kBwdBlockM) {
    smem_lse[threadIdx.x] = s.lse_log2;
    smem_dsum[threadIdx.x] = s.dsum;
  }
}

// dQ of the warp's 16 queries x 32 dims of the tile: dS (from dS^T in shared memory) times K,
// over the key tiles that start inside the sequence.
template <typename T>
__device__ __forceinline__ void dq_product(float (&dq)[kDqWarpDims / 8][4], const T* smem_ds,
                                           const T* smem_k, int warp, int live_key_tiles,
                                           int lane) {
#pragma unroll
  for (int nt = 0; nt < kDqWarpDims / 8; ++nt) dq[nt][0] = dq[nt][1] = dq[nt][2] = dq[nt][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < kBwdWarps; ++kk) {
    if (kk < live_key_tiles) {
      uint32_t a[4];
      ldmatrix_x4_trans(a, smem_ds + b_pattern_offset(lane, kk * 16, dq_warp_query0(warp)));
#pragma unroll
      for (int dp = 0; dp < kDqWarpDims / 16; ++dp) {
        uint32_t b[4];
        ldmatrix_x4_trans(b,
                          smem_k + a_pattern_offset(lane, kk * 16, dq_warp_dim0(warp) + dp * 16));
        mma_m16n8k16<T>(dq[2 * dp], a, b[0], b[1]);
        mma_m16n8k16<T>(dq[2 * dp + 1], a, b[2], b[3]);
      }
    }
  }
}

// Adds (or, deterministic, stores as key block `n_block`'s partial) the warp's staged dQ.
__device__ __forceinline__ void dq_commit(const float* stage, const AttentionBwdParams& p,
                                          int n_block, int head, int start, int query0, int len,
                                          int warp, int lane) {
#pragma unroll
  for (int i = 0; i < kDqVectorsPerLane; ++i) {
    const int row = dq_vector_row(lane, i), col = dq_vector_col(lane, i);
    const int query = query0 + dq_warp_query0(warp) + row;
    if (query >= len) continue;
    const float4 v = *reinterpret_cast<const float4*>(stage + row * kDqStageRow + col);
    const int dim = dq_warp_dim0(warp) + col;
    if (p.deterministic_dq) {
      *reinterpret_cast<float4*>(p.dq_accum + dq_partial_offset(n_block, start + query, head,
                                                                p.num_heads, p.total_tokens, dim)) =
          v;
    } else {
      float* dst =
          p.dq_accum + dq_partial_offset(0, start + query, head, p.num_heads, p.total_tokens, dim);
#if __CUDA_ARCH__ >= 900
      atomicAdd(reinterpret_cast<float4*>(dst), v);
#else
      atomicAdd(dst, v.x);
      atomicAdd(dst + 1, v.y);
      atomicAdd(dst + 2, v.z);
      atomicAdd(dst + 3, v.w);
#endif
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kBwdThreads, 1)
    attention_fa2_bwd_kernel(const AttentionBwdParams p) {
  const int n_block = blockIdx.x, head = blockIdx.y, seq = blockIdx.z;
  int start, len;
  if (!sequence_range(p, seq, start, len)) return;
  const int key_block0 = n_block * kBwdBlockN;
  if (key_block0 >= len) return;

  extern __shared__ __align__(16) unsigned char attention_fa2_bwd_smem[];
  constexpr int kKeyTile = kBwdBlockN * kSmemRow, kQueryTile = kBwdBlockM * kSmemRow;
  T* smem_k = reinterpret_cast<T*>(attention_fa2_bwd_smem);  // [128][72]
  T* smem_v = smem_k + kKeyTile;                             // [128][72], then dS^T
  T* smem_ds = smem_v;
  T* smem_q = smem_v + kKeyTile;                                         // [2][64][72]
  T* smem_do = smem_q + 2 * kQueryTile;                                  // [2][64][72]
  float* smem_lse = reinterpret_cast<float*>(smem_do + 2 * kQueryTile);  // [2][64]
  float* smem_dsum = smem_lse + 2 * kBwdBlockM;                          // [2][64]
  float* smem_dq = smem_dsum + 2 * kBwdBlockM;                           // [8][16][40]

  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int warp_key0 = key_block0 + bwd_warp_key0(warp);
  const T* q_gmem = head_base<T>(p.q, p.q_row_stride, start, head);
  const T* k_gmem = head_base<T>(p.k, p.k_row_stride, start, head);
  const T* v_gmem = head_base<T>(p.v, p.v_row_stride, start, head);
  const T* do_gmem = head_base<T>(p.dout, p.dout_row_stride, start, head);
  const float* lse_gmem = p.softmax_lse + static_cast<int64_t>(head) * p.total_tokens + start;
  const float* dsum_gmem = p.softmax_d + static_cast<int64_t>(head) * p.total_tokens + start;

  load_rows_async<kBwdBlockN, kBwdThreads>(smem_k, k_gmem, p.k_row_stride, key_block0, len);
  load_rows_async<kBwdBlockN, kBwdThreads>(smem_v, v_gmem, p.v_row_stride, key_block0, len);
  load_rows_async<kBwdBlockM, kBwdThreads>(smem_q, q_gmem, p.q_row_stride, 0, len);
  load_rows_async<kBwdBlockM, kBwdThreads>(smem_do, do_gmem, p.dout_row_stride, 0, len);
  cp_async_commit();
  store_row_stats(load_row_stats(lse_gmem, dsum_gmem, 0, len), smem_lse, smem_dsum);
  cp_async_wait<0>();
  __syncthreads();

  // The warp's K and V as A fragments, for every query tile.
  uint32_t k_frag[kKSteps][4], v_frag[kKSteps][4];
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks) {
    ldmatrix_x4(k_frag[ks], smem_k + a_pattern_offset(lane, bwd_warp_key0(warp), ks * 16));
    ldmatrix_x4(v_frag[ks], smem_v + a_pattern_offset(lane, bwd_warp_key0(warp), ks * 16));
  }
  float dk_acc[kNTiles][4], dv_acc[kNTiles][4];
  zero_accumulators(dk_acc, dv_acc);
  const float scale_log2 = p.softmax_scale * kLog2e;
  const bool use_dropout = p.dropout.enabled;
  const float keep_scale = p.dropout.scale;
  // A warp whose 16 keys all lie past the sequence has no probability (they are 0): it takes part
  // in the copies, barriers and dQ only.
  const bool warp_live = warp_key0 < len;
  const bool use_saved = use_dropout && p.keep_bits != nullptr && warp_live;
  // The warp's key tile: one chunk per 16 queries, adjacent.
  const uint8_t* saved_keys =
      use_saved
          ? p.keep_bits + attention_keep_chunk(p.keep_layout, head, seq, start, warp_key0 / 16, 0) +
                keep_bitmap_backward_words(lane)
          : nullptr;
  const int live_key_tiles = bwd_live_key_tiles(key_block0, len);
  float* stage = smem_dq + warp * kDqStageFloats;
  const int num_m_blocks = ceil_div_int(len, kBwdBlockM);

  for (int m_block = 0; m_block < num_m_blocks; ++m_block) {
    const int buf = m_block & 1;
    const int query0 = m_block * kBwdBlockM;
    // Tile m_block has landed, and every warp is done with the other buffers, dS^T and its slab.
    cp_async_wait<0>();
    __syncthreads();
    RowStats next_stats;
    if (m_block + 1 < num_m_blocks) {
      const int next0 = query0 + kBwdBlockM;
      load_rows_async<kBwdBlockM, kBwdThreads>(smem_q + (buf ^ 1) * kQueryTile, q_gmem,
                                               p.q_row_stride, next0, len);
      load_rows_async<kBwdBlockM, kBwdThreads>(smem_do + (buf ^ 1) * kQueryTile, do_gmem,
                                               p.dout_row_stride, next0, len);
      next_stats = load_row_stats(lse_gmem, dsum_gmem, next0, len);
    }
    cp_async_commit();
    const T* sq = smem_q + buf * kQueryTile;
    const T* sdo = smem_do + buf * kQueryTile;
    const float* slse = smem_lse + buf * kBwdBlockM;
    const float* sdsum = smem_dsum + buf * kBwdBlockM;

    if (warp_live) {
      uint2 saved_words[kNTiles / 2];
#pragma unroll
      for (int pair = 0; pair < kNTiles / 2; ++pair) {
        saved_words[pair] = make_uint2(0u, 0u);
        if (saved_keys != nullptr && query0 + 16 * pair < len)
          saved_words[pair] = __ldg(reinterpret_cast<const uint2*>(
              saved_keys + static_cast<uint32_t>(query0 / 16 + pair) * 32u));
      }
      // S^T = K_w Q^T and dP^T = V_w dO^T for the warp's 16 keys against 64 queries.
      float st[kNTiles][4], dpt[kNTiles][4];
      zero_accumulators(st, dpt);
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
#pragma unroll
        for (int np = 0; np < kNTiles / 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b, sq + b_pattern_offset(lane, np * 16, ks * 16));
          mma_m16n8k16<T>(st[2 * np], k_frag[ks], b[0], b[1]);
          mma_m16n8k16<T>(st[2 * np + 1], k_frag[ks], b[2], b[3]);
          ldmatrix_x4(b, sdo + b_pattern_offset(lane, np * 16, ks * 16));
          mma_m16n8k16<T>(dpt[2 * np], v_frag[ks], b[0], b[1]);
          mma_m16n8k16<T>(dpt[2 * np + 1], v_frag[ks], b[2], b[3]);
        }
      }
      uint32_t keep_bits = 0u;
      if (use_dropout) {
        keep_bits = use_saved
                        ? backward_keep_bits_read(saved_words, lane)
                        : backward_keep_bits_drawn(
                              AttentionTileCoords{static_cast<uint64_t>(start + query0), warp_key0,
                                                  head, p.num_heads, p.dropout_row_stride},
                              p.dropout, lane);
      }
      const bool masked = bwd_tile_masked(warp_key0, query0, len);
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int query_local = nt * 8 + fragment_col(lane, e);
          float prob = exp2f(fmaf(st[nt][e], scale_log2, -slse[query_local]));
          if (masked && (warp_key0 + fragment_row(lane, e) >= len || query0 + query_local >= len))
            prob = 0.0f;
          softmax_backward_element(prob, st[nt][e], dpt[nt][e], sdsum[query_local], use_dropout,
                                   keep_bits, nt * 4 + e, keep_scale);
        }
      }
      uint32_t frag[kNTiles / 2][4];
      accumulate_dv_dk<T>(dv_acc, dk_acc, st, dpt, sdo, sq, lane, frag);
      // dS^T to shared memory: the A fragments' registers are the compute-type pairs.
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        const int col = nt * 8 + fragment_col(lane, 0);
        *reinterpret_cast<uint32_t*>(
            smem_ds + (bwd_warp_key0(warp) + fragment_row(lane, 0)) * kSmemRow + col) =
            frag[nt / 2][(nt & 1) * 2];
        *reinterpret_cast<uint32_t*>(
            smem_ds + (bwd_warp_key0(warp) + fragment_row(lane, 2)) * kSmemRow + col) =
            frag[nt / 2][(nt & 1) * 2 + 1];
      }
    }
    __syncthreads();  // dS^T complete

    if (query0 + dq_warp_query0(warp) < len) {
      float dq[kDqWarpDims / 8][4];
      dq_product<T>(dq, smem_ds, smem_k, warp, live_key_tiles, lane);
#pragma unroll
      for (int nt = 0; nt < kDqWarpDims / 8; ++nt) {
        *reinterpret_cast<float2*>(stage + dq_stage_offset(lane, nt, 0)) =
            make_float2(dq[nt][0] * p.softmax_scale, dq[nt][1] * p.softmax_scale);
        *reinterpret_cast<float2*>(stage + dq_stage_offset(lane, nt, 2)) =
            make_float2(dq[nt][2] * p.softmax_scale, dq[nt][3] * p.softmax_scale);
      }
      __syncwarp();
      dq_commit(stage, p, n_block, head, start, query0, len, warp, lane);
    }
    if (m_block + 1 < num_m_blocks)
      store_row_stats(next_stats, smem_lse + (buf ^ 1) * kBwdBlockM,
                      smem_dsum + (buf ^ 1) * kBwdBlockM);
  }
  __syncthreads();  // every warp's dQ product has read smem_k; dV is staged where dS^T was
  if (!warp_live) return;

  T* dk_gmem =
      static_cast<T*>(p.dk) + static_cast<int64_t>(start) * p.dk_row_stride + head * kHeadDim;
  T* dv_gmem =
      static_cast<T*>(p.dv) + static_cast<int64_t>(start) * p.dv_row_stride + head * kHeadDim;
  stage_rows<T>(dk_acc, p.softmax_scale, p.softmax_scale, smem_k, bwd_warp_key0(warp), lane);
  stage_rows<T>(dv_acc, 1.0f, 1.0f, smem_v, bwd_warp_key0(warp), lane);
  __syncwarp();
#pragma unroll
  for (int i = 0; i < kBwdStoreChunksPerLane; ++i) {
    const int row = bwd_store_row(warp, lane, i), col = bwd_store_col(lane, i);
    if (key_block0 + row < len) {
      *reinterpret_cast<int4*>(dk_gmem + static_cast<int64_t>(key_block0 + row) * p.dk_row_stride +
                               col) = *reinterpret_cast<const int4*>(smem_k + row * kSmemRow + col);
      *reinterpret_cast<int4*>(dv_gmem + static_cast<int64_t>(key_block0 + row) * p.dv_row_stride +
                               col) = *reinterpret_cast<const int4*>(smem_v + row * kSmemRow + col);
    }
  }
}

template <typename T>
void run_attention_fa2_bwd(const AttentionBwdParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(bwd_key_blocks(p.max_seqlen)),
                  static_cast<unsigned>(p.num_heads), static_cast<unsigned>(p.num_seqs));
  launch_attention(attention_fa2_bwd_kernel<T>, grid, kBwdThreads, kBwdSmemBytes, stream, p);
}

template <typename T>
void configure_attention_fa2_bwd() {
  allow_dynamic_shared_memory(attention_fa2_bwd_kernel<T>, kBwdSmemBytes);
}

}  // namespace mlbert::cuda::attention_fa2
