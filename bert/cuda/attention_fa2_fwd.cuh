// The FlashAttention-2-class attention forward (included only by attention_fa2_fwd_{bf16,fp16}.cu).
//
// One CTA per 128 queries of one head of one sequence, 4 warps x 32 rows (two m16 tiles a warp):
// every K or V fragment a warp loads from shared memory feeds the MMAs of both its tiles (the
// 64-row kernel's 16 rows a warp fed one). Q stays in registers; K/V tiles of 64 keys stream
// through shared memory double-buffered with cp.async. The online softmax keeps the running
// maximum of the raw scores, so the scale and log2(e) fold into the one FFMA before exp2, and
// only the sequence's last key block is masked. Dropout draws the Philox bits of
// dropout_bits.h (the CPU's mask) or reads them from the keep bitmap (attention_keep_bitmap.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "bert/cuda/attention.h"
#include "bert/cuda/attention_fa2_common.cuh"
#include "bert/cuda/attention_sequence.cuh"

namespace mlbert::cuda::attention_fa2 {

// Two CTAs an SM: the 64 + 64 accumulator floats, the Q fragments and the keep words of a thread
// need up to 255 registers (ptxas_report.sh has the count).
constexpr int kFwdMinBlocks = 2;

template <typename T>
__global__ void __launch_bounds__(kFwdThreads, kFwdMinBlocks)
    attention_fa2_fwd_kernel(const AttentionParams p) {
  const int m_block = blockIdx.x, head = blockIdx.y, seq = blockIdx.z;
  int start, len;
  if (!sequence_range(p, seq, start, len)) return;
  const int row0 = m_block * kFwdBlockM;
  if (row0 >= len) return;

  extern __shared__ __align__(16) unsigned char attention_fa2_fwd_smem[];
  T* smem_q = reinterpret_cast<T*>(attention_fa2_fwd_smem);  // [128][72]
  T* smem_k = smem_q + kFwdBlockM * kSmemRow;                // [2][64][72]
  T* smem_v = smem_k + 2 * kFwdBlockN * kSmemRow;            // [2][64][72]
  constexpr int kKvTile = kFwdBlockN * kSmemRow;

  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const T* q_gmem = head_base<T>(p.q, p.q_row_stride, start, head);
  const T* k_gmem = head_base<T>(p.k, p.k_row_stride, start, head);
  const T* v_gmem = head_base<T>(p.v, p.v_row_stride, start, head);

  load_rows_async<kFwdBlockM, kFwdThreads>(smem_q, q_gmem, p.q_row_stride, row0, len);
  load_rows_async<kFwdBlockN, kFwdThreads>(smem_k, k_gmem, p.k_row_stride, 0, len);
  load_rows_async<kFwdBlockN, kFwdThreads>(smem_v, v_gmem, p.v_row_stride, 0, len);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  // A warp whose 32 rows all lie past the sequence only takes part in the copies and barriers.
  const bool warp_live = row0 + fwd_tile_row0(warp, 0) < len;
  const bool tile_live[kFwdMTiles] = {warp_live, row0 + fwd_tile_row0(warp, 1) < len};
  uint32_t q_frag[kFwdMTiles][kKSteps][4];
#pragma unroll
  for (int mt = 0; mt < kFwdMTiles; ++mt) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks)
      ldmatrix_x4(q_frag[mt][ks],
                  smem_q + a_pattern_offset(lane, fwd_tile_row0(warp, mt), ks * 16));
  }

  float o_acc[kFwdMTiles][kNTiles][4];
#pragma unroll
  for (int mt = 0; mt < kFwdMTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
      o_acc[mt][nt][0] = o_acc[mt][nt][1] = o_acc[mt][nt][2] = o_acc[mt][nt][3] = 0.0f;
  }
  // Per thread and m16 tile: rows fragment_row(lane, 0) and + 8. The maxima are of raw scores
  // (the scale is positive); the sums are this thread's share, the quad's added at the end.
  float row_max[kFwdMTiles][2], row_sum[kFwdMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kFwdMTiles; ++mt) {
    row_max[mt][0] = row_max[mt][1] = -INFINITY;
    row_sum[mt][0] = row_sum[mt][1] = 0.0f;
  }
  const float scale_log2 = p.softmax_scale * kLog2e;
  const bool use_dropout = p.dropout.enabled;
  const float keep_scale = p.dropout.scale;
  // Keep bits (p.keep_bits): stored as drawn, or read (keep_bits_kernel filled them). Chunk
  // offsets fit 32 bits (attention_forward checks the buffer's size).
  const bool keep_active = use_dropout && p.keep_bits != nullptr && warp_live;
  const bool read_keep = keep_active && p.keep_bits_kernel;
  const uint32_t keep_chunks =
      keep_active ? static_cast<uint32_t>(attention_keep_chunk(
                        p.keep_layout, head, seq, start, 0, (row0 + fwd_tile_row0(warp, 0)) / 16))
                  : 0u;
  const uint32_t keep_pair_stride = static_cast<uint32_t>(p.keep_layout.query_tiles) * 32u;
  const int num_n_blocks = ceil_div_int(len, kFwdBlockN);

  for (int n_block = 0; n_block < num_n_blocks; ++n_block) {
    const int buf = n_block & 1;
    const int key0 = n_block * kFwdBlockN;
    const int keep_pairs = min(kNTiles / 2, ceil_div_int(len - key0, 16));
    // m16 tile mt's chunks follow tile 0's by 32 bytes (query tiles are adjacent).
    const uint32_t keep_block = keep_chunks + static_cast<uint32_t>(key0 / 16) * keep_pair_stride;
    if (n_block + 1 < num_n_blocks) {
      load_rows_async<kFwdBlockN, kFwdThreads>(smem_k + (buf ^ 1) * kKvTile, k_gmem, p.k_row_stride,
                                               key0 + kFwdBlockN, len);
      load_rows_async<kFwdBlockN, kFwdThreads>(smem_v + (buf ^ 1) * kKvTile, v_gmem, p.v_row_stride,
                                               key0 + kFwdBlockN, len);
    }
    cp_async_commit();
    // Loaded before the products so that their latency hides behind them.
    uint32_t keep_words[kFwdMTiles][kNTiles / 2];
#pragma unroll
    for (int mt = 0; mt < kFwdMTiles; ++mt) {
#pragma unroll
      for (int pair = 0; pair < kNTiles / 2; ++pair) {
        keep_words[mt][pair] = 0u;
        if (read_keep && tile_live[mt] && pair < keep_pairs)
          keep_words[mt][pair] = __ldg(reinterpret_cast<const uint32_t*>(
              p.keep_bits + keep_block + mt * 32u + pair * keep_pair_stride +
              keep_bitmap_forward_word(lane)));
      }
    }
    cp_async_wait<1>();
    __syncthreads();
    const T* sk = smem_k + buf * kKvTile;
    const T* sv = smem_v + buf * kKvTile;

    if (warp_live) {
      float s[kFwdMTiles][kNTiles][4];
#pragma unroll
      for (int mt = 0; mt < kFwdMTiles; ++mt) {
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
          s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
      }
      // S = Q K^T: one K fragment load feeds both m16 tiles.
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
#pragma unroll
        for (int np = 0; np < kNTiles / 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b, sk + b_pattern_offset(lane, np * 16, ks * 16));
#pragma unroll
          for (int mt = 0; mt < kFwdMTiles; ++mt) {
            mma_m16n8k16<T>(s[mt][2 * np], q_frag[mt][ks], b[0], b[1]);
            mma_m16n8k16<T>(s[mt][2 * np + 1], q_frag[mt][ks], b[2], b[3]);
          }
        }
      }
      if (fwd_key_block_masked(key0, len)) {
#pragma unroll
        for (int mt = 0; mt < kFwdMTiles; ++mt) {
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (key0 + nt * 8 + fragment_col(lane, e) >= len) s[mt][nt][e] = -INFINITY;
          }
        }
      }

      uint32_t p_frag[kFwdMTiles][kNTiles / 2][4];
#pragma unroll
      for (int mt = 0; mt < kFwdMTiles; ++mt) {
        float block_max[2] = {row_max[mt][0], row_max[mt][1]};
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) block_max[e >> 1] = fmaxf(block_max[e >> 1], s[mt][nt][e]);
        }
        float correction[2], max_scaled[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(kFullWarpMask, block_max[r], 1));
          block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(kFullWarpMask, block_max[r], 2));
          // Every key block holds a key of the sequence, so block_max is finite from here on.
          correction[r] = exp2f((row_max[mt][r] - block_max[r]) * scale_log2);
          row_max[mt][r] = block_max[r];
          max_scaled[r] = block_max[r] * scale_log2;
          row_sum[mt][r] *= correction[r];
        }
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float prob = exp2f(fmaf(s[mt][nt][e], scale_log2, -max_scaled[e >> 1]));
            row_sum[mt][e >> 1] += prob;
            s[mt][nt][e] = prob;
            o_acc[mt][nt][e] *= correction[e >> 1];
          }
        }
        if (use_dropout && tile_live[mt]) {
          const bool save = keep_active && !read_keep;
          const uint32_t keep =
              read_keep ? forward_keep_bits_read(keep_words[mt], lane)
                        : forward_keep_bits_drawn(
                              AttentionTileCoords{
                                  static_cast<uint64_t>(start + row0 + fwd_tile_row0(warp, mt)),
                                  key0, head, p.num_heads, p.dropout_row_stride},
                              p.dropout, lane, save ? p.keep_bits + keep_block + mt * 32u : nullptr,
                              keep_pair_stride, save ? keep_pairs : 0);
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e)
              s[mt][nt][e] = (keep >> (nt * 4 + e)) & 1u ? s[mt][nt][e] * keep_scale : 0.0f;
          }
        }
        accumulator_to_a_fragments<T>(s[mt], p_frag[mt]);
      }

      // O += P V: one V fragment load feeds both m16 tiles.
#pragma unroll
      for (int kk = 0; kk < kNTiles / 2; ++kk) {
#pragma unroll
        for (int dp = 0; dp < kNTiles / 2; ++dp) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, sv + a_pattern_offset(lane, kk * 16, dp * 16));
#pragma unroll
          for (int mt = 0; mt < kFwdMTiles; ++mt) {
            mma_m16n8k16<T>(o_acc[mt][2 * dp], p_frag[mt][kk], b[0], b[1]);
            mma_m16n8k16<T>(o_acc[mt][2 * dp + 1], p_frag[mt][kk], b[2], b[3]);
          }
        }
      }
    }
    __syncthreads();  // the next iteration's prefetch overwrites this buffer
  }
  if (!warp_live) return;

  // smem_q is free (Q lives in registers) and each warp stages only its own rows.
  T* out_gmem =
      static_cast<T*>(p.out) + static_cast<int64_t>(start) * p.out_row_stride + head * kHeadDim;
#pragma unroll
  for (int mt = 0; mt < kFwdMTiles; ++mt) {
    float inv_sum[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_sum[mt][r] += __shfl_xor_sync(kFullWarpMask, row_sum[mt][r], 1);
      row_sum[mt][r] += __shfl_xor_sync(kFullWarpMask, row_sum[mt][r], 2);
      inv_sum[r] = 1.0f / row_sum[mt][r];  // >= 1: the row's maximum contributes exp2(0)
    }
    stage_rows<T>(o_acc[mt], inv_sum[0], inv_sum[1], smem_q, fwd_tile_row0(warp, mt), lane);
    if ((lane & 3) == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = row0 + fwd_tile_row0(warp, mt) + fragment_row(lane, 2 * r);
        if (row < len) {
          p.softmax_lse[static_cast<int64_t>(head) * p.total_tokens + start + row] =
              (row_max[mt][r] * scale_log2 + log2f(row_sum[mt][r])) / kLog2e;
        }
      }
    }
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < kFwdStoreChunksPerLane; ++i) {
    const int row = fwd_store_row(warp, lane, i);
    const int col = fwd_store_col(lane, i);
    if (row0 + row < len) {
      *reinterpret_cast<int4*>(out_gmem + static_cast<int64_t>(row0 + row) * p.out_row_stride +
                               col) = *reinterpret_cast<const int4*>(smem_q + row * kSmemRow + col);
    }
  }
}

template <typename T>
void run_attention_fa2_fwd(const AttentionParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(fwd_query_blocks(p.max_seqlen)),
                  static_cast<unsigned>(p.num_heads), static_cast<unsigned>(p.num_seqs));
  launch_attention(attention_fa2_fwd_kernel<T>, grid, kFwdThreads, kFwdSmemBytes, stream, p);
}

template <typename T>
void configure_attention_fa2_fwd() {
  allow_dynamic_shared_memory(attention_fa2_fwd_kernel<T>, kFwdSmemBytes);
}

}  // namespace mlbert::cuda::attention_fa2
