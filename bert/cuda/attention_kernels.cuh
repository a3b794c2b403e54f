// Kernel templates of the fused variable-length attention (included only by the small per-dtype
// instantiation files attention_{fwd,bwd}_{fp16,bf16}.cu, so each compiles in parallel).
//
// Forward (one CTA per 64 query rows of one head of one sequence, 4 warps x 16 rows): Q stays in
// registers, K/V tiles of 64 keys stream through shared memory double-buffered with cp.async,
// S = QK^T and O += PV run on mma.sync m16n8k16, softmax is online (running max and sum in the log2
// domain) and only the log-sum-exp per row is kept. Backward (one CTA per 64 keys, 4 warps x 16
// keys): loops over query tiles, recomputes P from the log-sum-exp, accumulates dK and dV in
// registers and adds dQ into an fp32 buffer with atomics. Dropout on P draws the same Philox bits
// as the CPU reference for the same (sequence, head, query, key).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "bert/cuda/attention.h"
#include "bert/cuda/attention_fragments.cuh"
#include "bert/cuda/attention_sequence.cuh"
#include "bert/cuda/common.cuh"
#include "bert/cuda/dropout_bits.h"
#include "bert/cuda/launch_config.h"
#include "bert/cuda/mma.cuh"

namespace mlbert::cuda::attention_detail {

constexpr int kHeadDim = kAttentionHeadDim;
constexpr int kBlockM = 64;  // query rows per forward CTA and per backward inner step
constexpr int kBlockN = 64;  // keys per forward inner step and per backward CTA
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kRowsPerWarp = 16;  // one m16 tile of rows per warp
static_assert(kBlockM == kWarps * kRowsPerWarp && kBlockN == kWarps * kRowsPerWarp);
static_assert(kBlockM == kAttentionBlockRows && kBlockN == kAttentionBlockRows,
              "launch_config.h sizes the grids");
// Shared tiles are [64][64 + 8]: the 16-byte pad puts the 8 row addresses of every ldmatrix in
// distinct bank groups (a 128-byte row stride would make them all collide).
constexpr int kSmemPad = 8;
constexpr int kSmemRow = kHeadDim + kSmemPad;
constexpr int kTileElems = kBlockM * kSmemRow;
constexpr int kChunksPerRow = kHeadDim * 2 / kVectorBytes;  // 16-byte chunks in one head row
constexpr int kElemsPerChunk = kVectorBytes / 2;
constexpr int kNTiles = kBlockN / 8;  // n8 accumulator tiles across 64 columns
static_assert(kNTiles % 2 == 0, "dropout bits are drawn for pairs of n8 tiles");
static_assert(kNTiles == attention_fa2::kNTiles && kSmemRow == attention_fa2::kSmemRow,
              "the fragment steps of attention_fragments.cuh assume this geometry");
using attention_fa2::accumulate_dv_dk;
using attention_fa2::accumulator_to_a_fragments;
using attention_fa2::allow_dynamic_shared_memory;
using attention_fa2::backward_tile_keep_bits;
using attention_fa2::forward_tile_keep_bits;
using attention_fa2::launch_attention;
using attention_fa2::mma_frags_times_tile;
using attention_fa2::softmax_backward_element;
using attention_fa2::zero_accumulators;
constexpr int kKSteps = kHeadDim / 16;  // k16 steps across the head dimension
constexpr float kLog2e = 1.4426950408889634f;

// Backward dynamic shared memory: K, V, dS^T tiles, double-buffered Q and dO tiles, and
// double-buffered log-sum-exp and rowsum(dO*O) vectors.
constexpr int kBwdSmemBytes = (3 + 2 * 2) * kTileElems * 2 + 2 * 2 * kBlockM * 4;

template <typename T>
__device__ __forceinline__ const T* head_base(const void* base, int64_t row_stride, int start,
                                              int head) {
  return static_cast<const T*>(base) + static_cast<int64_t>(start) * row_stride + head * kHeadDim;
}

// Copies rows [row0, row0 + 64) of one head into a shared tile; rows at or past `len` become zero.
template <typename T>
__device__ __forceinline__ void load_tile_async(T* tile, const T* gmem, int64_t row_stride,
                                                int row0, int len) {
#pragma unroll
  for (int i = 0; i < kBlockM * kChunksPerRow / kThreads; ++i) {
    const int chunk = threadIdx.x + i * kThreads;
    const int row = chunk / kChunksPerRow;
    const int col = (chunk % kChunksPerRow) * kElemsPerChunk;
    const bool valid = row0 + row < len;
    const T* src = valid ? gmem + static_cast<int64_t>(row0 + row) * row_stride + col : gmem;
    cp_async_16(tile + row * kSmemRow + col, src, valid);
  }
}

// Copies 64 per-row floats starting at `row0`; entries at or past `len` become zero.
__device__ __forceinline__ void load_row_stats_async(float* dst, const float* src, int row0,
                                                     int len) {
  if (threadIdx.x < kBlockM) {
    const bool valid = row0 + static_cast<int>(threadIdx.x) < len;
    cp_async_4(dst + threadIdx.x, valid ? src + row0 + threadIdx.x : src, valid);
  }
}

// ldmatrix row addresses. "A pattern": matrices (rows 0-7, cols 0-7), (rows 8-15, cols 0-7),
// (rows 0-7, cols 8-15), (rows 8-15, cols 8-15), which is an A fragment, or with .trans the B
// fragments of two n8 tiles from a row-major [k][n] tile. "B pattern": (rows 0-7, cols 0-7),
// (rows 0-7, cols 8-15), (rows 8-15, cols 0-7), (rows 8-15, cols 8-15), which is the B fragments of
// two n8 tiles from an [n][k] tile, or with .trans an A fragment from a [k][m] tile.
__device__ __forceinline__ int a_pattern_offset(int lane, int row0, int col0) {
  return (row0 + (lane & 7) + ((lane >> 3) & 1) * 8) * kSmemRow + col0 + (lane >> 4) * 8;
}
__device__ __forceinline__ int b_pattern_offset(int lane, int row0, int col0) {
  return (row0 + (lane & 7) + (lane >> 4) * 8) * kSmemRow + col0 + ((lane >> 3) & 1) * 8;
}

// acc[16 x 64] += A[16 x 64] * tile^T, with tile an [n][k] row-major 64x64 shared tile.
// A comes from a shared [m][k] tile at rows a_row0.
template <typename T>
__device__ __forceinline__ void mma_rows_times_tile_t(float (&acc)[kNTiles][4], const T* a_tile,
                                                      int a_row0, const T* tile, int lane) {
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks) {
    uint32_t a[4];
    ldmatrix_x4(a, a_tile + a_pattern_offset(lane, a_row0, ks * 16));
#pragma unroll
    for (int np = 0; np < kNTiles / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, tile + b_pattern_offset(lane, np * 16, ks * 16));
      mma_m16n8k16<T>(acc[2 * np], a, b[0], b[1]);
      mma_m16n8k16<T>(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// Writes a warp's 16x64 accumulator, times `scale`, as compute-type rows: staged through the
// warp's own 16 rows of a shared tile so the global stores are 16 bytes wide and coalesced.
template <typename T>
__device__ __forceinline__ void store_warp_rows(const float (&acc)[kNTiles][4], float scale0,
                                                float scale1, T* tile, int warp_row0, T* gmem,
                                                int64_t row_stride, int block_row0, int len,
                                                int lane) {
  const int group = lane >> 2, quad = lane & 3;
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt) {
    const int col = nt * 8 + quad * 2;
    *reinterpret_cast<uint32_t*>(tile + (warp_row0 + group) * kSmemRow + col) =
        Pair<T>::pack(acc[nt][0] * scale0, acc[nt][1] * scale0);
    *reinterpret_cast<uint32_t*>(tile + (warp_row0 + group + 8) * kSmemRow + col) =
        Pair<T>::pack(acc[nt][2] * scale1, acc[nt][3] * scale1);
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < kRowsPerWarp * kChunksPerRow / kWarpSize; ++i) {
    const int chunk = lane + i * kWarpSize;
    const int row = warp_row0 + chunk / kChunksPerRow;
    const int col = (chunk % kChunksPerRow) * kElemsPerChunk;
    if (block_row0 + row < len) {
      *reinterpret_cast<int4*>(gmem + static_cast<int64_t>(block_row0 + row) * row_stride + col) =
          *reinterpret_cast<const int4*>(tile + row * kSmemRow + col);
    }
  }
}

// Keep bits of the 32 probabilities a thread holds in its warp's 16x64 tile: bit (nt * 4 + e) for
// accumulator element [nt][e]. Each lane draws one Philox block per pair of n8 tiles and gathers
// the bits it needs by shuffles (the mapping is in dropout_bits.h and unit-tested on the CPU).
// With `use_loaded`, the blocks come from `loaded` (byte j: this lane's block of pair j, filled by
// attention_keep_bits_kernel) instead of being drawn. With `save`, the drawn blocks of the first
// `save_pairs` pairs are stored for the backward: pair j's chunk at save + j * save_pair_stride
// (attention_keep_chunk).
__device__ __forceinline__ uint32_t attention_keep_bits(const AttentionTileCoords& c,
                                                        const DropoutMask& mask, int lane,
                                                        bool use_loaded, uint32_t loaded,
                                                        uint8_t* save, uint32_t save_pair_stride,
                                                        int save_pairs) {
  uint32_t bits = 0;
#pragma unroll 1
  for (int pair = 0; pair < kNTiles / 2; ++pair) {
    const uint32_t drawn =
        use_loaded ? (loaded >> (8 * pair)) & 0xffu
                   : dropout_keep_block_bits(mask, attention_forward_lane_block(c, lane, pair));
    if (pair < save_pairs)
      save[pair * save_pair_stride + attention_keep_forward_byte(lane)] =
          static_cast<uint8_t>(drawn);
#pragma unroll
    for (int half = 0; half < 2; ++half)
      bits |= forward_tile_keep_bits(drawn, lane, half) << ((2 * pair + half) * 4);
  }
  return bits;
}

// The backward's bits, drawn, or with `use_saved` taken from `saved` (byte j: this lane's block of
// pair j, as the forward stored it).
__device__ __forceinline__ uint32_t attention_keep_bits_transposed(const AttentionTileCoords& c,
                                                                   const DropoutMask& mask,
                                                                   int lane, bool use_saved,
                                                                   uint32_t saved) {
  uint32_t bits = 0;
#pragma unroll 1
  for (int pair = 0; pair < kNTiles / 2; ++pair) {
    const uint32_t drawn =
        use_saved ? (saved >> (8 * pair)) & 0xffu
                  : dropout_keep_block_bits(mask, attention_backward_lane_block(c, lane, pair));
#pragma unroll
    for (int half = 0; half < 2; ++half)
      bits |= backward_tile_keep_bits(drawn, lane, half) << ((2 * pair + half) * 4);
  }
  return bits;
}

// ---------------------------------------------------------------------------------------------
// Forward

// CTAs per SM the forward is compiled for: four on sm_90, where 128 registers hold it without
// spills (ptxas_report.sh), three on sm_80, where it needs more (161 before the keep bits).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define MLBERT_ATTENTION_FWD_MIN_BLOCKS 3
#else
#define MLBERT_ATTENTION_FWD_MIN_BLOCKS 4
#endif

template <typename T>
__global__ void __launch_bounds__(kThreads, MLBERT_ATTENTION_FWD_MIN_BLOCKS)
    attention_fwd_kernel(const AttentionParams p) {
  const int m_block = blockIdx.x, head = blockIdx.y, seq = blockIdx.z;
  int start, len;
  if (!sequence_range(p, seq, start, len)) return;
  const int row0 = m_block * kBlockM;
  if (row0 >= len) return;

  __shared__ __align__(16) T smem_q[kTileElems];
  __shared__ __align__(16) T smem_k[2][kTileElems];
  __shared__ __align__(16) T smem_v[2][kTileElems];

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int group = lane >> 2, quad = lane & 3;
  const int warp_row0 = warp * kRowsPerWarp;
  const T* q_gmem = head_base<T>(p.q, p.q_row_stride, start, head);
  const T* k_gmem = head_base<T>(p.k, p.k_row_stride, start, head);
  const T* v_gmem = head_base<T>(p.v, p.v_row_stride, start, head);

  load_tile_async(smem_q, q_gmem, p.q_row_stride, row0, len);
  load_tile_async(smem_k[0], k_gmem, p.k_row_stride, 0, len);
  load_tile_async(smem_v[0], v_gmem, p.v_row_stride, 0, len);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  uint32_t q_frag[kKSteps][4];
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks)
    ldmatrix_x4(q_frag[ks], smem_q + a_pattern_offset(lane, warp_row0, ks * 16));

  float o_acc[kNTiles][4];
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
    o_acc[nt][0] = o_acc[nt][1] = o_acc[nt][2] = o_acc[nt][3] = 0.0f;
  // Per thread: rows `group` and `group + 8` of the warp's tile. The sums are this thread's share
  // (its 16 columns); the quad's four shares are added at the end.
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.0f, 0.0f};
  const float scale_log2 = p.softmax_scale * kLog2e;
  const bool use_dropout = p.dropout.enabled;
  const float keep_scale = p.dropout.scale;
  const int num_n_blocks = (len + kBlockN - 1) / kBlockN;
  // The keep-bit chunks of this warp's 16 queries (p.keep_bits), when its rows start inside the
  // sequence: stored as drawn, or read (keep_bits_kernel filled them). Byte offsets fit 32 bits
  // (attention_forward checks the buffer's size), which keeps the kernel within 128 registers.
  // A warp whose 16 rows all lie past the sequence computes rows that are never stored: it skips
  // the dropout (no Philox draws, no keep bits).
  const bool warp_live = row0 + warp_row0 < len;
  const bool keep_active = use_dropout && p.keep_bits != nullptr && warp_live;
  const bool read_keep = keep_active && p.keep_bits_kernel;
  const uint32_t keep_chunks =
      keep_active ? static_cast<uint32_t>(attention_keep_chunk(p.keep_layout, head, seq, start, 0,
                                                               (row0 + warp_row0) / 16))
                  : 0u;
  const uint32_t keep_pair_stride = static_cast<uint32_t>(p.keep_layout.query_tiles) * 32u;

  for (int n_block = 0; n_block < num_n_blocks; ++n_block) {
    const int buf = n_block & 1;
    const int key0 = n_block * kBlockN;
    const int keep_pairs = min(kNTiles / 2, (len - key0 + 15) / 16);  // key tiles in the sequence
    const uint32_t keep_block = keep_chunks + static_cast<uint32_t>(key0 / 16) * keep_pair_stride;
    if (n_block + 1 < num_n_blocks) {
      load_tile_async(smem_k[buf ^ 1], k_gmem, p.k_row_stride, (n_block + 1) * kBlockN, len);
      load_tile_async(smem_v[buf ^ 1], v_gmem, p.v_row_stride, (n_block + 1) * kBlockN, len);
    }
    cp_async_commit();
    // Loaded before the products so that their latency hides behind them.
    uint32_t loaded = 0;
    if (read_keep) {
      const uint32_t at = keep_block + static_cast<uint32_t>(attention_keep_forward_byte(lane));
#pragma unroll
      for (int pair = 0; pair < kNTiles / 2; ++pair)
        if (pair < keep_pairs)
          loaded |= static_cast<uint32_t>(__ldg(p.keep_bits + at + pair * keep_pair_stride))
                    << (8 * pair);
    }
    cp_async_wait<1>();
    __syncthreads();

    float s[kNTiles][4];
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
#pragma unroll
      for (int np = 0; np < kNTiles / 2; ++np) {
        uint32_t b[4];
        ldmatrix_x4(b, smem_k[buf] + b_pattern_offset(lane, np * 16, ks * 16));
        mma_m16n8k16<T>(s[2 * np], q_frag[ks], b[0], b[1]);
        mma_m16n8k16<T>(s[2 * np + 1], q_frag[ks], b[2], b[3]);
      }
    }

    float block_max[2] = {row_max[0], row_max[1]};
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + nt * 8 + quad * 2 + (e & 1);
        s[nt][e] = key < len ? s[nt][e] * scale_log2 : -INFINITY;
        block_max[e >> 1] = fmaxf(block_max[e >> 1], s[nt][e]);
      }
    }
    float correction[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(kFullWarpMask, block_max[r], 1));
      block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(kFullWarpMask, block_max[r], 2));
      // Every key block holds at least one valid key, so block_max is finite from here on.
      correction[r] = exp2f(row_max[r] - block_max[r]);
      row_max[r] = block_max[r];
      row_sum[r] *= correction[r];
    }
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float prob = exp2f(s[nt][e] - row_max[e >> 1]);
        row_sum[e >> 1] += prob;
        s[nt][e] = prob;
        o_acc[nt][e] *= correction[e >> 1];
      }
    }
    if (use_dropout && warp_live) {
      const bool save = keep_active && !read_keep;
      const uint32_t keep = attention_keep_bits(
          AttentionTileCoords{static_cast<uint64_t>(start + row0 + warp_row0), key0, head,
                              p.num_heads, p.dropout_row_stride},
          p.dropout, lane, read_keep, loaded, save ? p.keep_bits + keep_block : nullptr,
          keep_pair_stride, save ? keep_pairs : 0);
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          s[nt][e] = (keep >> (nt * 4 + e)) & 1u ? s[nt][e] * keep_scale : 0.0f;
      }
    }
    uint32_t p_frag[kNTiles / 2][4];
    accumulator_to_a_fragments<T>(s, p_frag);
    mma_frags_times_tile<T>(o_acc, p_frag, smem_v[buf], lane);
    __syncthreads();  // the next iteration's prefetch overwrites this buffer
  }

  float inv_sum[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(kFullWarpMask, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(kFullWarpMask, row_sum[r], 2);
    inv_sum[r] = 1.0f / row_sum[r];  // row_sum >= 1: the row's maximum contributes exp2(0)
  }
  T* out_gmem =
      static_cast<T*>(p.out) + static_cast<int64_t>(start) * p.out_row_stride + head * kHeadDim;
  // smem_q is free: Q lives in registers, and each warp stages only its own rows.
  store_warp_rows<T>(o_acc, inv_sum[0], inv_sum[1], smem_q, warp_row0, out_gmem, p.out_row_stride,
                     row0, len, lane);
  if (quad == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + warp_row0 + group + r * 8;
      if (row < len) {
        p.softmax_lse[static_cast<int64_t>(head) * p.total_tokens + start + row] =
            (row_max[r] + log2f(row_sum[r])) / kLog2e;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Backward

template <typename T>
__global__ void __launch_bounds__(kThreads) attention_bwd_kernel(const AttentionBwdParams p) {
  const int n_block = blockIdx.x, head = blockIdx.y, seq = blockIdx.z;
  int start, len;
  if (!sequence_range(p, seq, start, len)) return;
  const int key_block0 = n_block * kBlockN;
  if (key_block0 >= len) return;

  extern __shared__ __align__(16) unsigned char attention_bwd_smem[];
  T* smem_k = reinterpret_cast<T*>(attention_bwd_smem);
  T* smem_v = smem_k + kTileElems;
  T* smem_ds = smem_v + kTileElems;  // dS^T: [key][query]
  T* smem_q = smem_ds + kTileElems;  // [2][tile]
  T* smem_do = smem_q + 2 * kTileElems;
  float* smem_lse = reinterpret_cast<float*>(smem_do + 2 * kTileElems);  // [2][64]
  float* smem_dsum = smem_lse + 2 * kBlockM;                             // [2][64]

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int group = lane >> 2, quad = lane & 3;
  const int warp_key0 = warp * kRowsPerWarp;
  const T* q_gmem = head_base<T>(p.q, p.q_row_stride, start, head);
  const T* k_gmem = head_base<T>(p.k, p.k_row_stride, start, head);
  const T* v_gmem = head_base<T>(p.v, p.v_row_stride, start, head);
  const T* do_gmem = head_base<T>(p.dout, p.dout_row_stride, start, head);
  const float* lse_gmem = p.softmax_lse + static_cast<int64_t>(head) * p.total_tokens + start;
  const float* dsum_gmem = p.softmax_d + static_cast<int64_t>(head) * p.total_tokens + start;

  load_tile_async(smem_k, k_gmem, p.k_row_stride, key_block0, len);
  load_tile_async(smem_v, v_gmem, p.v_row_stride, key_block0, len);
  load_tile_async(smem_q, q_gmem, p.q_row_stride, 0, len);
  load_tile_async(smem_do, do_gmem, p.dout_row_stride, 0, len);
  load_row_stats_async(smem_lse, lse_gmem, 0, len);
  load_row_stats_async(smem_dsum, dsum_gmem, 0, len);
  cp_async_commit();

  float dk_acc[kNTiles][4], dv_acc[kNTiles][4];
  zero_accumulators(dk_acc, dv_acc);
  const float scale_log2 = p.softmax_scale * kLog2e;
  const bool use_dropout = p.dropout.enabled;
  const float keep_scale = p.dropout.scale;
  const int num_m_blocks = (len + kBlockM - 1) / kBlockM;
  // The forward's saved keep bits of this warp's 16 keys: one chunk per 16 queries, adjacent.
  const bool use_saved = use_dropout && p.keep_bits != nullptr;
  // A warp whose 16 keys all lie past the sequence has no probability to drop (they are 0): it
  // draws no Philox blocks and reads no bits.
  const bool warp_live = key_block0 + warp_key0 < len;
  const uint8_t* saved_keys = use_saved && warp_live
                                  ? p.keep_bits +
                                        attention_keep_chunk(p.keep_layout, head, seq, start,
                                                             (key_block0 + warp_key0) / 16, 0) +
                                        lane
                                  : nullptr;
  float* dq_accum =
      p.dq_accum + static_cast<int64_t>(start) * p.num_heads * kHeadDim + head * kHeadDim;
  const int64_t dq_row_stride = static_cast<int64_t>(p.num_heads) * kHeadDim;

  for (int m_block = 0; m_block < num_m_blocks; ++m_block) {
    const int buf = m_block & 1;
    const int query0 = m_block * kBlockM;
    if (m_block + 1 < num_m_blocks) {
      const int next0 = query0 + kBlockM;
      load_tile_async(smem_q + (buf ^ 1) * kTileElems, q_gmem, p.q_row_stride, next0, len);
      load_tile_async(smem_do + (buf ^ 1) * kTileElems, do_gmem, p.dout_row_stride, next0, len);
      load_row_stats_async(smem_lse + (buf ^ 1) * kBlockM, lse_gmem, next0, len);
      load_row_stats_async(smem_dsum + (buf ^ 1) * kBlockM, dsum_gmem, next0, len);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const T* sq = smem_q + buf * kTileElems;
    const T* sdo = smem_do + buf * kTileElems;
    const float* slse = smem_lse + buf * kBlockM;
    const float* sdsum = smem_dsum + buf * kBlockM;
    // Loaded before the products so that their latency hides behind them.
    uint32_t saved = 0;
    if (saved_keys != nullptr) {
      const int pairs = min(kNTiles / 2, (len - query0 + 15) / 16);
      const uint8_t* src = saved_keys + static_cast<int64_t>(query0 / 16) * 32;
#pragma unroll
      for (int pair = 0; pair < kNTiles / 2; ++pair)
        if (pair < pairs) saved |= static_cast<uint32_t>(__ldg(src + pair * 32)) << (8 * pair);
    }

    // S^T = K_w Q^T and dP^T = V_w dO^T for this warp's 16 keys against 64 queries.
    float st[kNTiles][4], dpt[kNTiles][4];
    zero_accumulators(st, dpt);
    mma_rows_times_tile_t<T>(st, smem_k, warp_key0, sq, lane);
    mma_rows_times_tile_t<T>(dpt, smem_v, warp_key0, sdo, lane);

    const uint32_t keep_bits =
        use_dropout && warp_live
            ? attention_keep_bits_transposed(
                  AttentionTileCoords{static_cast<uint64_t>(start + query0), key_block0 + warp_key0,
                                      head, p.num_heads, p.dropout_row_stride},
                  p.dropout, lane, use_saved, saved)
            : 0u;
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key_block0 + warp_key0 + group + (e >> 1) * 8;
        const int query_local = nt * 8 + quad * 2 + (e & 1);
        const int query = query0 + query_local;
        const bool valid = key < len && query < len;
        const float prob =
            valid ? exp2f(st[nt][e] * scale_log2 - slse[query_local] * kLog2e) : 0.0f;
        softmax_backward_element(prob, st[nt][e], dpt[nt][e], sdsum[query_local], use_dropout,
                                 keep_bits, nt * 4 + e, keep_scale);
      }
    }

    uint32_t frag[kNTiles / 2][4];
    accumulate_dv_dk<T>(dv_acc, dk_acc, st, dpt, sdo, sq, lane, frag);

    // dS^T to shared memory, then dQ[64 x 64] = dS K with each warp taking 16 queries.
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      const int col = nt * 8 + quad * 2;
      *reinterpret_cast<uint32_t*>(smem_ds + (warp_key0 + group) * kSmemRow + col) =
          frag[nt / 2][(nt & 1) * 2];
      *reinterpret_cast<uint32_t*>(smem_ds + (warp_key0 + group + 8) * kSmemRow + col) =
          frag[nt / 2][(nt & 1) * 2 + 1];
    }
    __syncthreads();
    float dq[kNTiles][4];
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) dq[nt][0] = dq[nt][1] = dq[nt][2] = dq[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kNTiles / 2; ++kk) {
      uint32_t a[4];
      ldmatrix_x4_trans(a, smem_ds + b_pattern_offset(lane, kk * 16, warp_key0));
#pragma unroll
      for (int dp = 0; dp < kNTiles / 2; ++dp) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, smem_k + a_pattern_offset(lane, kk * 16, dp * 16));
        mma_m16n8k16<T>(dq[2 * dp], a, b[0], b[1]);
        mma_m16n8k16<T>(dq[2 * dp + 1], a, b[2], b[3]);
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int query = query0 + warp_key0 + group + r * 8;
      if (query < len) {
        float* row = dq_accum + static_cast<int64_t>(query) * dq_row_stride;
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
          float* dst = row + nt * 8 + quad * 2;
#if __CUDA_ARCH__ >= 900
          atomicAdd(
              reinterpret_cast<float2*>(dst),
              make_float2(dq[nt][2 * r] * p.softmax_scale, dq[nt][2 * r + 1] * p.softmax_scale));
#else
          atomicAdd(dst, dq[nt][2 * r] * p.softmax_scale);
          atomicAdd(dst + 1, dq[nt][2 * r + 1] * p.softmax_scale);
#endif
        }
      }
    }
    __syncthreads();  // the next iteration overwrites dS^T and this iteration's Q/dO buffers
  }

  T* dk_gmem =
      static_cast<T*>(p.dk) + static_cast<int64_t>(start) * p.dk_row_stride + head * kHeadDim;
  T* dv_gmem =
      static_cast<T*>(p.dv) + static_cast<int64_t>(start) * p.dv_row_stride + head * kHeadDim;
  store_warp_rows<T>(dk_acc, p.softmax_scale, p.softmax_scale, smem_k, warp_key0, dk_gmem,
                     p.dk_row_stride, key_block0, len, lane);
  store_warp_rows<T>(dv_acc, 1.0f, 1.0f, smem_v, warp_key0, dv_gmem, p.dv_row_stride, key_block0,
                     len, lane);
}

// ---------------------------------------------------------------------------------------------
// Launchers (instantiated per compute type in attention_{fwd,bwd}_{fp16,bf16}.cu)

inline dim3 attention_grid_dim(int max_seqlen, int num_heads, int num_seqs) {
  const AttentionGrid g = attention_grid(max_seqlen, num_heads, num_seqs);
  return dim3(g.x, g.y, g.z);
}

template <typename T>
void run_attention_fwd(const AttentionParams& p, cudaStream_t stream) {
  launch_attention(attention_fwd_kernel<T>,
                   attention_grid_dim(p.max_seqlen, p.num_heads, p.num_seqs), kThreads, 0, stream,
                   p);
}

template <typename T>
void run_attention_bwd(const AttentionBwdParams& p, cudaStream_t stream) {
  launch_attention(attention_bwd_kernel<T>,
                   attention_grid_dim(p.max_seqlen, p.num_heads, p.num_seqs), kThreads,
                   kBwdSmemBytes, stream, p);
}

// Once per device (attention_configure_device).
template <typename T>
void configure_attention_bwd() {
  allow_dynamic_shared_memory(attention_bwd_kernel<T>, kBwdSmemBytes);
}

}  // namespace mlbert::cuda::attention_detail
