// Tile geometry and index math of the FlashAttention-2-class attention kernels
// (attention_fa2_fwd.cuh, attention_fa2_bwd.cuh): which rows a CTA, a warp and a lane own, where
// the ldmatrix lanes point, which tiles need the sequence-end mask, and where the dQ
// contributions go.
//
// Design choice: every index the kernels compute comes from a function here, and everything here
// is __host__ __device__, so tests/bert_cuda walks the kernels' loops on the CPU with these very
// functions (coverage, bounds, and an fp32 emulation of the whole algorithm at fragment level).
#pragma once

#include <cstdint>

#include "bert/philox.h"  // MLBERT_HOST_DEVICE

namespace mlbert::cuda::attention_fa2 {

constexpr int kHeadDim = 64;
constexpr int kLanes = 32;
constexpr int kNTiles = kHeadDim / 8;   // n8 accumulator tiles across 64 columns
constexpr int kKSteps = kHeadDim / 16;  // k16 steps across 64 columns
// Shared tiles are [rows][64 + 8]: the 16-byte pad puts the 8 row addresses of an ldmatrix in
// distinct bank groups.
constexpr int kSmemRow = kHeadDim + 8;
constexpr int kChunksPerRow = kHeadDim / 8;  // 16-byte chunks of 8 elements in a head row

// Forward: a CTA owns 128 queries of one head of one sequence, 4 warps x 32 rows (two m16 tiles
// a warp, so every K or V fragment loaded from shared memory feeds both), over key blocks of 64.
constexpr int kFwdBlockM = 128;
constexpr int kFwdWarps = 4;
constexpr int kFwdThreads = kFwdWarps * kLanes;
constexpr int kFwdRowsPerWarp = kFwdBlockM / kFwdWarps;
constexpr int kFwdMTiles = kFwdRowsPerWarp / 16;
constexpr int kFwdBlockN = 64;
static_assert(kFwdMTiles == 2 && kFwdBlockN == kNTiles * 8);
// Dynamic shared memory: Q [128][72], double-buffered K and V [64][72].
constexpr int kFwdSmemBytes = (kFwdBlockM + 4 * kFwdBlockN) * kSmemRow * 2;

// Backward: a CTA owns 128 keys, 8 warps x 16 keys (K and V fragments stay in registers across
// every query tile), over query tiles of 64.
constexpr int kBwdBlockN = 128;
constexpr int kBwdWarps = 8;
constexpr int kBwdThreads = kBwdWarps * kLanes;
constexpr int kBwdKeysPerWarp = kBwdBlockN / kBwdWarps;
constexpr int kBwdBlockM = 64;
static_assert(kBwdKeysPerWarp == 16 && kBwdBlockM == kNTiles * 8);
// dQ of a query tile, dQ[64 x 64] = dS[64 x 128] K[128 x 64]: warp w takes queries
// 16 * (w % 4) .. + 15 and dims 32 * (w / 4) .. + 31, staged as fp32 in its own shared slab of
// [16][32 + 8] (the pad keeps the staging float2 stores free of bank conflicts) and added with
// 16-byte atomics (or stored, deterministic dQ): one add per element per CTA.
constexpr int kDqWarpRows = 16;
constexpr int kDqWarpDims = 32;
constexpr int kDqStageRow = kDqWarpDims + 8;
constexpr int kDqStageFloats = kDqWarpRows * kDqStageRow;
constexpr int kDqVectorsPerLane = kDqWarpRows * kDqWarpDims / 4 / kLanes;
static_assert(kBwdWarps * kDqWarpRows * kDqWarpDims == kBwdBlockM * kHeadDim);
// Dynamic shared memory: K [128][72], V [128][72] (dS^T [128 keys][64 queries] once V is in
// registers), double-buffered Q and dO [64][72], double-buffered log2-domain log-sum-exp and
// rowsum(dO * O) [64], the dQ staging slabs.
constexpr int kBwdSmemBytes = 2 * kBwdBlockN * kSmemRow * 2 + 4 * kBwdBlockM * kSmemRow * 2 +
                              4 * kBwdBlockM * 4 + kBwdWarps * kDqStageFloats * 4;

// Threads of a kernel that fill the dQ of each sequence from its per-key-block partials
// (deterministic dQ): 32 tokens x 8 lanes of 8 dims.
constexpr int kDqReduceTokens = 32;
constexpr int kDqReduceThreads = kDqReduceTokens * kChunksPerRow;

MLBERT_HOST_DEVICE int ceil_div_int(int a, int b) {
  return (a + b - 1) / b;
}

// ---- mma.sync m16n8k16 fragments ------------------------------------------------------------
// Accumulator (and, two n8 tiles side by side, A operand) layout: lane 4g + t holds element e of
// an n8 tile at row g + 8 * (e >> 1), column 2t + (e & 1).
MLBERT_HOST_DEVICE int fragment_row(int lane, int e) {
  return (lane >> 2) + 8 * (e >> 1);
}
MLBERT_HOST_DEVICE int fragment_col(int lane, int e) {
  return 2 * (lane & 3) + (e & 1);
}

// ldmatrix_x4 row addresses (element offsets into a [rows][kSmemRow] tile). "A pattern":
// matrices (rows 0-7, cols 0-7), (rows 8-15, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15,
// cols 8-15): an A fragment, or with .trans the B fragments of two n8 tiles of a row-major [k][n]
// tile. "B pattern": (rows 0-7, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15, cols 0-7),
// (rows 8-15, cols 8-15): the B fragments of two n8 tiles of an [n][k] tile, or with .trans an A
// fragment of a [k][m] tile.
MLBERT_HOST_DEVICE int a_pattern_offset(int lane, int row0, int col0) {
  return (row0 + (lane & 7) + ((lane >> 3) & 1) * 8) * kSmemRow + col0 + (lane >> 4) * 8;
}
MLBERT_HOST_DEVICE int b_pattern_offset(int lane, int row0, int col0) {
  return (row0 + (lane & 7) + (lane >> 4) * 8) * kSmemRow + col0 + ((lane >> 3) & 1) * 8;
}

// ---- tile copies ----------------------------------------------------------------------------
// A tile of `rows` head rows is copied by `threads` threads in 16-byte chunks; copy i of thread
// `thread` moves chunk thread + i * threads: tile row chunk / 8, columns 8 * (chunk % 8) .. + 7.
MLBERT_HOST_DEVICE int tile_copy_row(int thread, int i, int threads) {
  return (thread + i * threads) / kChunksPerRow;
}
MLBERT_HOST_DEVICE int tile_copy_col(int thread, int i, int threads) {
  return ((thread + i * threads) % kChunksPerRow) * 8;
}

// ---- forward --------------------------------------------------------------------------------
MLBERT_HOST_DEVICE int fwd_query_blocks(int max_seqlen) {
  return ceil_div_int(max_seqlen, kFwdBlockM);
}
// First row, inside the CTA's 128, of m16 tile `m_tile` of warp `warp`.
MLBERT_HOST_DEVICE int fwd_tile_row0(int warp, int m_tile) {
  return warp * kFwdRowsPerWarp + m_tile * 16;
}
// Only the last key block of a sequence holds keys past it: the only one that is masked.
MLBERT_HOST_DEVICE bool fwd_key_block_masked(int key0, int len) {
  return key0 + kFwdBlockN > len;
}
// Output staging: a warp's 32 rows, 16-byte chunk i of lane `lane` (CTA-local row, column).
constexpr int kFwdStoreChunksPerLane = kFwdRowsPerWarp * kChunksPerRow / kLanes;
MLBERT_HOST_DEVICE int fwd_store_row(int warp, int lane, int i) {
  return warp * kFwdRowsPerWarp + (lane + i * kLanes) / kChunksPerRow;
}
MLBERT_HOST_DEVICE int fwd_store_col(int lane, int i) {
  return ((lane + i * kLanes) % kChunksPerRow) * 8;
}

// ---- backward -------------------------------------------------------------------------------
MLBERT_HOST_DEVICE int bwd_key_blocks(int max_seqlen) {
  return ceil_div_int(max_seqlen, kBwdBlockN);
}
MLBERT_HOST_DEVICE int bwd_warp_key0(int warp) {
  return warp * kBwdKeysPerWarp;
}
// A tile of a warp's 16 keys against 64 queries needs the mask when either runs past the sequence.
MLBERT_HOST_DEVICE bool bwd_tile_masked(int warp_key0, int query0, int len) {
  return warp_key0 + kBwdKeysPerWarp > len || query0 + kBwdBlockM > len;
}
// dK/dV staging: a warp's 16 rows, 16-byte chunk i of lane `lane`.
constexpr int kBwdStoreChunksPerLane = kBwdKeysPerWarp * kChunksPerRow / kLanes;
MLBERT_HOST_DEVICE int bwd_store_row(int warp, int lane, int i) {
  return bwd_warp_key0(warp) + (lane + i * kLanes) / kChunksPerRow;
}
MLBERT_HOST_DEVICE int bwd_store_col(int lane, int i) {
  return ((lane + i * kLanes) % kChunksPerRow) * 8;
}
// Key tiles of 16 (of the CTA's 8) that start inside the sequence: dS^T rows of the others are
// never written, and the dQ product stops before them.
MLBERT_HOST_DEVICE int bwd_live_key_tiles(int key_block0, int len) {
  const int tiles = ceil_div_int(len - key_block0, 16);
  return tiles < kBwdWarps ? tiles : kBwdWarps;
}
// dQ: the warp's queries (inside the 64-query tile) and dims.
MLBERT_HOST_DEVICE int dq_warp_query0(int warp) {
  return (warp % 4) * kDqWarpRows;
}
MLBERT_HOST_DEVICE int dq_warp_dim0(int warp) {
  return (warp / 4) * kDqWarpDims;
}
// Accumulator element (n8 tile nt of the warp's 4, element e) of lane `lane` in the staging slab.
MLBERT_HOST_DEVICE int dq_stage_offset(int lane, int nt, int e) {
  return fragment_row(lane, e) * kDqStageRow + nt * 8 + fragment_col(lane, e);
}
// The 16-byte vector i (0..kDqVectorsPerLane-1) lane `lane` adds: slab row and first column.
MLBERT_HOST_DEVICE int dq_vector_row(int lane, int i) {
  return (lane + i * kLanes) / 8;
}
MLBERT_HOST_DEVICE int dq_vector_col(int lane, int i) {
  return ((lane + i * kLanes) % 8) * 4;
}
// Deterministic dQ: key block `key_block`'s fp32 partial of (token, head, dim), one plane of
// [tokens][heads][64] per key block; a sequence's partials are summed in key-block order.
MLBERT_HOST_DEVICE uint64_t dq_partial_offset(int key_block, int token, int head, int num_heads,
                                              int total_tokens, int dim) {
  return ((static_cast<uint64_t>(key_block) * static_cast<uint64_t>(total_tokens) +
           static_cast<uint64_t>(token)) *
              static_cast<uint64_t>(num_heads) +
          static_cast<uint64_t>(head)) *
             kHeadDim +
         static_cast<uint64_t>(dim);
}

}  // namespace mlbert::cuda::attention_fa2
