// The FlashAttention-2-class attention kernels' algorithm, emulated on the CPU at the level of
// warp lanes and mma fragments, against the CPU reference backend (bert/cpu/attention.cc).
//
// The emulation follows attention_fa2_fwd.cuh and attention_fa2_bwd.cuh step by step with the
// same index functions (attention_fa2_layout.h, attention_keep_bitmap.h, dropout_bits.h):
// shared tiles filled by the same copy loops (unwritten shared memory holds NaN, so reading it
// shows), ldmatrix and mma.sync m16n8k16 by their PTX fragment layouts, the online softmax with
// its quad shuffles, the keep bits drawn and shuffled or stored and read, the dQ staging and its
// atomic or deterministic commit. Arithmetic is fp32 (the compute-type roundings are left out),
// so the results must match the fp32 reference to rounding: a wrong index, tile order or
// recurrence gives errors of the order of the values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "bert/cpu/cpu_ops.h"
#include "bert/cuda/attention_fa2_layout.h"
#include "bert/cuda/attention_keep_bitmap.h"
#include "bert/cuda/dropout_bits.h"
#include "bert/philox.h"
#include "tests/bert/test_util.h"

namespace fa2_emulation_test {

namespace cuda = mlbert::cuda;
using namespace mlbert::cuda::attention_fa2;  // NOLINT: the emulation reads like the kernels
using mlbert::bert::DropoutMask;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- a warp's registers, ldmatrix and mma.sync ----------------------------------------------

using Reg = std::array<float, 2>;                      // one 32-bit register: two elements
using Frag = std::array<std::array<Reg, 4>, kLanes>;   // four registers per lane
using Acc = std::array<std::array<float, 4>, kLanes>;  // an n8 accumulator tile per lane
using LaneBits = std::array<uint32_t, kLanes>;

Acc zero_acc() {
  Acc a;
  for (auto& lane : a) lane.fill(0.0f);
  return a;
}

// ldmatrix.x4 (.trans): lane L gives the address of row L % 8 of matrix L / 8; register i of
// lane L receives row L / 4, columns 2 (L % 4) and + 1 of matrix i (transposed: column L / 4,
// rows 2 (L % 4) and + 1).
template <typename Offset>
Frag ldmatrix_x4(const std::vector<float>& smem, int base, Offset offset, bool trans) {
  std::array<int, kLanes> address;
  for (int lane = 0; lane < kLanes; ++lane) {
    address[lane] = base + offset(lane);
    REQUIRE(address[lane] >= 0);
    REQUIRE(address[lane] + 8 <= static_cast<int>(smem.size()));
  }
  Frag f;
  for (int lane = 0; lane < kLanes; ++lane)
    for (int i = 0; i < 4; ++i)
      for (int h = 0; h < 2; ++h)
        f[lane][i][h] = trans ? smem[address[8 * i + 2 * (lane % 4) + h] + lane / 4]
                              : smem[address[8 * i + lane / 4] + 2 * (lane % 4) + h];
  return f;
}

// mma.sync.m16n8k16: A row-major (register r of lane 4g + t: row g + 8 (r % 2), columns
// 2t + 8 (r / 2) + {0, 1}), B column-major from registers b_first, b_first + 1 of `b` (lane
// 4g + t: column g, rows 2t + 8 r + {0, 1}), D += A B in the accumulator layout.
void mma(Acc& d, const Frag& a, const Frag& b, int b_first) {
  float A[16][16], B[16][8];
  for (int lane = 0; lane < kLanes; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) A[g + 8 * (r % 2)][2 * t + 8 * (r / 2) + h] = a[lane][r][h];
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) B[2 * t + 8 * r + h][g] = b[lane][b_first + r][h];
  }
  for (int lane = 0; lane < kLanes; ++lane)
    for (int e = 0; e < 4; ++e) {
      const int row = fragment_row(lane, e), col = fragment_col(lane, e);
      float sum = d[lane][e];
      for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
      d[lane][e] = sum;
    }
}

// accumulator_to_a_fragments: two adjacent n8 tiles as one k16 A fragment.
Frag to_a_fragment(const Acc& lo, const Acc& hi) {
  Frag f;
  for (int lane = 0; lane < kLanes; ++lane) {
    f[lane][0] = {lo[lane][0], lo[lane][1]};
    f[lane][1] = {lo[lane][2], lo[lane][3]};
    f[lane][2] = {hi[lane][0], hi[lane][1]};
    f[lane][3] = {hi[lane][2], hi[lane][3]};
  }
  return f;
}

// x = op(x, x of lane ^ 1), then op(x, x of lane ^ 2): the kernels' quad reductions.
template <typename Op>
void quad_reduce(std::array<float, kLanes>& x, Op op) {
  for (int mask : {1, 2}) {
    const std::array<float, kLanes> before = x;
    for (int lane = 0; lane < kLanes; ++lane) x[lane] = op(before[lane], before[lane ^ mask]);
  }
}

// ---- the problem, its tiles ----------------------------------------------------------------

enum class KeepBits { drawn_twice, forward_keeps, kernel_keeps };

struct Problem {
  std::vector<int32_t> cu;
  int tokens = 0, heads = 0, max_seqlen = 0;
  float scale = 0.125f;
  DropoutMask mask;
  std::vector<float> q, k, v, d_out;  // [tokens][heads * 64]
  int width() const { return heads * kHeadDim; }
  uint64_t row_stride() const { return mlbert::bert::attention_dropout_row_stride(max_seqlen); }
  cuda::AttentionKeepLayout layout() const {
    return cuda::attention_keep_layout(tokens, static_cast<int64_t>(cu.size()) - 1, max_seqlen);
  }
};

// load_rows_async: rows [row0, row0 + rows) of one head into a [rows][kSmemRow] tile, zero past
// `len`, copied by `threads` threads as the kernels copy.
void load_rows(std::vector<float>& tile, int tile_base, const std::vector<float>& x, int width,
               int start, int head, int rows, int threads, int row0, int len) {
  for (int thread = 0; thread < threads; ++thread)
    for (int i = 0; i < rows * kChunksPerRow / threads; ++i) {
      const int row = tile_copy_row(thread, i, threads), col = tile_copy_col(thread, i, threads);
      for (int c = 0; c < 8; ++c)
        tile[tile_base + row * kSmemRow + col + c] =
            row0 + row < len ? x[(start + row0 + row) * width + head * kHeadDim + col + c] : 0.0f;
    }
}

uint32_t load_u32(const std::vector<uint8_t>& buffer, uint64_t at) {
  REQUIRE(at + 4 <= buffer.size());
  uint32_t w;
  std::memcpy(&w, &buffer[at], 4);
  return w;
}

// attention_keep_bits_kernel with the bitmap byte order: every chunk of every sequence.
void fill_keep_bitmap(const Problem& pr, std::vector<uint8_t>& keep) {
  for (int s = 0; s + 1 < static_cast<int>(pr.cu.size()); ++s) {
    const int start = pr.cu[s], len = pr.cu[s + 1] - start;
    for (int head = 0; head < pr.heads; ++head)
      for (int qt = 0; qt * 16 < len; ++qt)
        for (int kt = 0; kt * 16 < len; ++kt)
          for (int lane = 0; lane < kLanes; ++lane) {
            const uint64_t block = cuda::keep_bitmap_chunk_block(
                static_cast<uint64_t>(start), head, pr.heads, pr.row_stride(), kt, qt, lane);
            keep.at(cuda::attention_keep_chunk(pr.layout(), head, s, start, kt, qt) +
                    cuda::keep_bitmap_drawn_byte(lane)) =
                static_cast<uint8_t>(cuda::dropout_keep_block_bits(pr.mask, block));
          }
  }
}

// ---- forward ---------------------------------------------------------------------------------

// forward_keep_bits_drawn: per pair each lane draws a block (and may store it), then gathers.
LaneBits forward_bits_drawn(const Problem& pr, const cuda::AttentionTileCoords& c,
                            std::vector<uint8_t>* save, uint64_t save_at, uint32_t pair_stride,
                            int save_pairs) {
  LaneBits bits{};
  for (int pair = 0; pair < kNTiles / 2; ++pair) {
    std::array<uint32_t, kLanes> drawn;
    for (int lane = 0; lane < kLanes; ++lane) {
      drawn[lane] =
          cuda::dropout_keep_block_bits(pr.mask, cuda::attention_forward_lane_block(c, lane, pair));
      if (save != nullptr && pair < save_pairs)
        save->at(save_at + pair * pair_stride + cuda::keep_bitmap_drawn_byte(lane)) =
            static_cast<uint8_t>(drawn[lane]);
    }
    for (int lane = 0; lane < kLanes; ++lane)
      for (int half = 0; half < 2; ++half) {
        int src_g, src_g8, shift;
        cuda::attention_forward_sources(lane, half, src_g, src_g8, shift);
        bits[lane] |= cuda::attention_forward_bits(drawn[src_g], drawn[src_g8], shift)
                      << ((2 * pair + half) * 4);
      }
  }
  return bits;
}

struct ForwardResult {
  std::vector<float> out, lse;
};

// One attention_fa2_fwd_kernel CTA (m_block, head, sequence s).
void forward_cta(const Problem& pr, KeepBits mode, std::vector<uint8_t>& keep, int s, int head,
                 int m_block, ForwardResult& r) {
  const int start = pr.cu[s], len = pr.cu[s + 1] - start;
  const int row0 = m_block * kFwdBlockM;
  if (row0 >= len) return;
  const int W = pr.width();
  std::vector<float> smem_q(kFwdBlockM * kSmemRow, kNaN), smem_k(2 * kFwdBlockN * kSmemRow, kNaN),
      smem_v(2 * kFwdBlockN * kSmemRow, kNaN);
  const int kv_tile = kFwdBlockN * kSmemRow;
  load_rows(smem_q, 0, pr.q, W, start, head, kFwdBlockM, kFwdThreads, row0, len);
  load_rows(smem_k, 0, pr.k, W, start, head, kFwdBlockN, kFwdThreads, 0, len);
  load_rows(smem_v, 0, pr.v, W, start, head, kFwdBlockN, kFwdThreads, 0, len);

  const float scale_log2 = pr.scale * kLog2e;
  const bool use_dropout = pr.mask.enabled;
  const bool keeps = mode != KeepBits::drawn_twice;
  const uint32_t pair_stride = static_cast<uint32_t>(pr.layout().query_tiles) * 32u;
  const int n_blocks = ceil_div_int(len, kFwdBlockN);
  struct WarpState {
    Frag q_frag[kFwdMTiles][kKSteps];
    Acc o_acc[kFwdMTiles][kNTiles];
    std::array<float, kLanes> row_max[kFwdMTiles][2], row_sum[kFwdMTiles][2];
  };
  std::vector<WarpState> warps(kFwdWarps);
  for (int w = 0; w < kFwdWarps; ++w) {
    for (int mt = 0; mt < kFwdMTiles; ++mt) {
      for (int ks = 0; ks < kKSteps; ++ks)
        warps[w].q_frag[mt][ks] = ldmatrix_x4(
            smem_q, 0,
            [&](int lane) { return a_pattern_offset(lane, fwd_tile_row0(w, mt), ks * 16); }, false);
      for (int nt = 0; nt < kNTiles; ++nt) warps[w].o_acc[mt][nt] = zero_acc();
      for (int rr = 0; rr < 2; ++rr) {
        warps[w].row_max[mt][rr].fill(-INFINITY);
        warps[w].row_sum[mt][rr].fill(0.0f);
      }
    }
  }
  for (int n_block = 0; n_block < n_blocks; ++n_block) {
    const int buf = n_block & 1, key0 = n_block * kFwdBlockN;
    const int keep_pairs = std::min(kNTiles / 2, ceil_div_int(len - key0, 16));
    if (n_block + 1 < n_blocks) {
      load_rows(smem_k, (buf ^ 1) * kv_tile, pr.k, W, start, head, kFwdBlockN, kFwdThreads,
                key0 + kFwdBlockN, len);
      load_rows(smem_v, (buf ^ 1) * kv_tile, pr.v, W, start, head, kFwdBlockN, kFwdThreads,
                key0 + kFwdBlockN, len);
    }
    for (int w = 0; w < kFwdWarps; ++w) {
      if (row0 + fwd_tile_row0(w, 0) >= len) continue;  // warp_live
      WarpState& ws = warps[w];
      const uint32_t keep_block =
          static_cast<uint32_t>(cuda::attention_keep_chunk(pr.layout(), head, s, start, 0,
                                                           (row0 + fwd_tile_row0(w, 0)) / 16)) +
          static_cast<uint32_t>(key0 / 16) * pair_stride;
      Acc sc[kFwdMTiles][kNTiles];
      for (int mt = 0; mt < kFwdMTiles; ++mt)
        for (int nt = 0; nt < kNTiles; ++nt) sc[mt][nt] = zero_acc();
      for (int ks = 0; ks < kKSteps; ++ks)
        for (int np = 0; np < kNTiles / 2; ++np) {
          const Frag b = ldmatrix_x4(
              smem_k, buf * kv_tile,
              [&](int lane) { return b_pattern_offset(lane, np * 16, ks * 16); }, false);
          for (int mt = 0; mt < kFwdMTiles; ++mt) {
            mma(sc[mt][2 * np], ws.q_frag[mt][ks], b, 0);
            mma(sc[mt][2 * np + 1], ws.q_frag[mt][ks], b, 2);
          }
        }
      if (fwd_key_block_masked(key0, len))
        for (int mt = 0; mt < kFwdMTiles; ++mt)
          for (int nt = 0; nt < kNTiles; ++nt)
            for (int lane = 0; lane < kLanes; ++lane)
              for (int e = 0; e < 4; ++e)
                if (key0 + nt * 8 + fragment_col(lane, e) >= len) sc[mt][nt][lane][e] = -INFINITY;
      Frag p_frag[kFwdMTiles][kNTiles / 2];
      for (int mt = 0; mt < kFwdMTiles; ++mt) {
        const bool tile_live = row0 + fwd_tile_row0(w, mt) < len;
        std::array<float, kLanes> block_max[2] = {ws.row_max[mt][0], ws.row_max[mt][1]};
        for (int lane = 0; lane < kLanes; ++lane)
          for (int nt = 0; nt < kNTiles; ++nt)
            for (int e = 0; e < 4; ++e)
              block_max[e >> 1][lane] = std::fmax(block_max[e >> 1][lane], sc[mt][nt][lane][e]);
        std::array<float, kLanes> correction[2], max_scaled[2];
        for (int rr = 0; rr < 2; ++rr) {
          quad_reduce(block_max[rr], [](float a, float b) { return std::fmax(a, b); });
          for (int lane = 0; lane < kLanes; ++lane) {
            correction[rr][lane] =
                std::exp2((ws.row_max[mt][rr][lane] - block_max[rr][lane]) * scale_log2);
            ws.row_max[mt][rr][lane] = block_max[rr][lane];
            max_scaled[rr][lane] = block_max[rr][lane] * scale_log2;
            ws.row_sum[mt][rr][lane] *= correction[rr][lane];
          }
        }
        for (int nt = 0; nt < kNTiles; ++nt)
          for (int lane = 0; lane < kLanes; ++lane)
            for (int e = 0; e < 4; ++e) {
              const float prob =
                  std::exp2(std::fma(sc[mt][nt][lane][e], scale_log2, -max_scaled[e >> 1][lane]));
              ws.row_sum[mt][e >> 1][lane] += prob;
              sc[mt][nt][lane][e] = prob;
              ws.o_acc[mt][nt][lane][e] *= correction[e >> 1][lane];
            }
        if (use_dropout && tile_live) {
          LaneBits bits{};
          if (mode == KeepBits::kernel_keeps) {
            for (int lane = 0; lane < kLanes; ++lane)
              for (int pair = 0; pair < keep_pairs; ++pair) {
                const uint32_t word = load_u32(keep, keep_block + mt * 32u + pair * pair_stride +
                                                         cuda::keep_bitmap_forward_word(lane));
                for (int half = 0; half < 2; ++half)
                  bits[lane] |= cuda::keep_bitmap_forward_nibble(word, half, lane)
                                << ((2 * pair + half) * 4);
              }
          } else {
            bits =
                forward_bits_drawn(pr,
                                   cuda::AttentionTileCoords{
                                       static_cast<uint64_t>(start + row0 + fwd_tile_row0(w, mt)),
                                       key0, head, pr.heads, pr.row_stride()},
                                   keeps ? &keep : nullptr, keep_block + mt * 32u, pair_stride,
                                   keeps ? keep_pairs : 0);
          }
          for (int nt = 0; nt < kNTiles; ++nt)
            for (int lane = 0; lane < kLanes; ++lane)
              for (int e = 0; e < 4; ++e)
                sc[mt][nt][lane][e] =
                    (bits[lane] >> (nt * 4 + e)) & 1u ? sc[mt][nt][lane][e] * pr.mask.scale : 0.0f;
        }
        for (int kk = 0; kk < kNTiles / 2; ++kk)
          p_frag[mt][kk] = to_a_fragment(sc[mt][2 * kk], sc[mt][2 * kk + 1]);
      }
      for (int kk = 0; kk < kNTiles / 2; ++kk)
        for (int dp = 0; dp < kNTiles / 2; ++dp) {
          const Frag b = ldmatrix_x4(
              smem_v, buf * kv_tile,
              [&](int lane) { return a_pattern_offset(lane, kk * 16, dp * 16); }, true);
          for (int mt = 0; mt < kFwdMTiles; ++mt) {
            mma(ws.o_acc[mt][2 * dp], p_frag[mt][kk], b, 0);
            mma(ws.o_acc[mt][2 * dp + 1], p_frag[mt][kk], b, 2);
          }
        }
    }
  }
  for (int w = 0; w < kFwdWarps; ++w) {
    if (row0 + fwd_tile_row0(w, 0) >= len) continue;
    WarpState& ws = warps[w];
    for (int mt = 0; mt < kFwdMTiles; ++mt) {
      for (int rr = 0; rr < 2; ++rr)
        quad_reduce(ws.row_sum[mt][rr], [](float a, float b) { return a + b; });
      for (int nt = 0; nt < kNTiles; ++nt)
        for (int lane = 0; lane < kLanes; ++lane)
          for (int e = 0; e < 4; ++e)
            smem_q[(fwd_tile_row0(w, mt) + fragment_row(lane, e)) * kSmemRow + nt * 8 +
                   fragment_col(lane, e)] =
                ws.o_acc[mt][nt][lane][e] * (1.0f / ws.row_sum[mt][e >> 1][lane]);
      for (int lane = 0; lane < kLanes; lane += 4)
        for (int rr = 0; rr < 2; ++rr) {
          const int row = row0 + fwd_tile_row0(w, mt) + fragment_row(lane, 2 * rr);
          if (row < len)
            r.lse[static_cast<size_t>(head) * pr.tokens + start + row] =
                (ws.row_max[mt][rr][lane] * scale_log2 + std::log2(ws.row_sum[mt][rr][lane])) /
                kLog2e;
        }
    }
    for (int lane = 0; lane < kLanes; ++lane)
      for (int i = 0; i < kFwdStoreChunksPerLane; ++i) {
        const int row = fwd_store_row(w, lane, i), col = fwd_store_col(lane, i);
        if (row0 + row >= len) continue;
        for (int c = 0; c < 8; ++c)
          r.out[(start + row0 + row) * W + head * kHeadDim + col + c] =
              smem_q[row * kSmemRow + col + c];
      }
  }
}

ForwardResult emulate_forward(const Problem& pr, KeepBits mode, std::vector<uint8_t>& keep) {
  ForwardResult r{std::vector<float>(pr.q.size(), kNaN),
                  std::vector<float>(static_cast<size_t>(pr.tokens) * pr.heads, kNaN)};
  if (mode == KeepBits::kernel_keeps && pr.mask.enabled) fill_keep_bitmap(pr, keep);
  for (int s = 0; s + 1 < static_cast<int>(pr.cu.size()); ++s)
    for (int head = 0; head < pr.heads; ++head)
      for (int m_block = 0; m_block < fwd_query_blocks(pr.max_seqlen); ++m_block)
        forward_cta(pr, mode, keep, s, head, m_block, r);
  return r;
}

// ---- backward --------------------------------------------------------------------------------

LaneBits backward_bits_drawn(const Problem& pr, const cuda::AttentionTileCoords& c) {
  LaneBits bits{};
  for (int pair = 0; pair < kNTiles / 2; ++pair) {
    std::array<uint32_t, kLanes> drawn;
    for (int lane = 0; lane < kLanes; ++lane)
      drawn[lane] = cuda::dropout_keep_block_bits(
          pr.mask, cuda::attention_backward_lane_block(c, lane, pair));
    for (int lane = 0; lane < kLanes; ++lane)
      for (int half = 0; half < 2; ++half) {
        int src_g, src_g8, shift;
        cuda::attention_backward_sources(lane, half, src_g, src_g8, shift);
        bits[lane] |= cuda::attention_backward_bits(drawn[src_g], drawn[src_g + 1], drawn[src_g8],
                                                    drawn[src_g8 + 1], shift)
                      << ((2 * pair + half) * 4);
      }
  }
  return bits;
}

struct Gradients {
  std::vector<float> dq, dk, dv;
};

// acc += frag * tile ([k][n] rows of a shared tile at `base`), as mma_frags_times_tile.
void frags_times_tile(std::array<Acc, kNTiles>& acc, const std::array<Frag, kNTiles / 2>& frag,
                      const std::vector<float>& smem, int base) {
  for (int kk = 0; kk < kNTiles / 2; ++kk)
    for (int dp = 0; dp < kNTiles / 2; ++dp) {
      const Frag b = ldmatrix_x4(
          smem, base, [&](int lane) { return a_pattern_offset(lane, kk * 16, dp * 16); }, true);
      mma(acc[2 * dp], frag[kk], b, 0);
      mma(acc[2 * dp + 1], frag[kk], b, 2);
    }
}

// One attention_fa2_bwd_kernel CTA (n_block, head, sequence s). `dq_accum`: [tokens][heads][64]
// added to (atomics), or deterministic: the planes of dq_partial_offset, stored.
void backward_cta(const Problem& pr, const std::vector<float>& lse,
                  const std::vector<float>& softmax_d, const std::vector<uint8_t>* keep,
                  bool deterministic, int s, int head, int n_block, std::vector<float>& dq_accum,
                  Gradients& g) {
  const int start = pr.cu[s], len = pr.cu[s + 1] - start;
  const int key_block0 = n_block * kBwdBlockN;
  if (key_block0 >= len) return;
  const int W = pr.width();
  const int key_tile = kBwdBlockN * kSmemRow, query_tile = kBwdBlockM * kSmemRow;
  std::vector<float> smem_k(key_tile, kNaN), smem_v(key_tile, kNaN), smem_q(2 * query_tile, kNaN),
      smem_do(2 * query_tile, kNaN), smem_lse(2 * kBwdBlockM, kNaN),
      smem_dsum(2 * kBwdBlockM, kNaN), smem_dq(kBwdWarps * kDqStageFloats, kNaN);
  std::vector<float>& smem_ds = smem_v;    // dS^T once V is in registers
  auto stats = [&](int query0, int buf) {  // load_row_stats + store_row_stats
    for (int thread = 0; thread < kBwdBlockM; ++thread) {
      const int q = query0 + thread;
      smem_lse[buf * kBwdBlockM + thread] =
          q < len ? lse[static_cast<size_t>(head) * pr.tokens + start + q] * kLog2e : 0.0f;
      smem_dsum[buf * kBwdBlockM + thread] =
          q < len ? softmax_d[static_cast<size_t>(head) * pr.tokens + start + q] : 0.0f;
    }
  };
  load_rows(smem_k, 0, pr.k, W, start, head, kBwdBlockN, kBwdThreads, key_block0, len);
  load_rows(smem_v, 0, pr.v, W, start, head, kBwdBlockN, kBwdThreads, key_block0, len);
  load_rows(smem_q, 0, pr.q, W, start, head, kBwdBlockM, kBwdThreads, 0, len);
  load_rows(smem_do, 0, pr.d_out, W, start, head, kBwdBlockM, kBwdThreads, 0, len);
  stats(0, 0);

  const float scale_log2 = pr.scale * kLog2e;
  struct WarpState {
    Frag k_frag[kKSteps], v_frag[kKSteps];
    std::array<Acc, kNTiles> dk_acc, dv_acc;
  };
  std::vector<WarpState> warps(kBwdWarps);
  for (int w = 0; w < kBwdWarps; ++w) {
    for (int ks = 0; ks < kKSteps; ++ks) {
      auto at = [&](int lane) { return a_pattern_offset(lane, bwd_warp_key0(w), ks * 16); };
      warps[w].k_frag[ks] = ldmatrix_x4(smem_k, 0, at, false);
      warps[w].v_frag[ks] = ldmatrix_x4(smem_v, 0, at, false);
    }
    for (int nt = 0; nt < kNTiles; ++nt) warps[w].dk_acc[nt] = warps[w].dv_acc[nt] = zero_acc();
  }
  const int live_key_tiles = bwd_live_key_tiles(key_block0, len);
  const int m_blocks = ceil_div_int(len, kBwdBlockM);
  for (int m_block = 0; m_block < m_blocks; ++m_block) {
    const int buf = m_block & 1, query0 = m_block * kBwdBlockM;
    if (m_block + 1 < m_blocks) {
      load_rows(smem_q, (buf ^ 1) * query_tile, pr.q, W, start, head, kBwdBlockM, kBwdThreads,
                query0 + kBwdBlockM, len);
      load_rows(smem_do, (buf ^ 1) * query_tile, pr.d_out, W, start, head, kBwdBlockM, kBwdThreads,
                query0 + kBwdBlockM, len);
    }
    for (int w = 0; w < kBwdWarps; ++w) {
      const int warp_key0 = key_block0 + bwd_warp_key0(w);
      if (warp_key0 >= len) continue;  // warp_live
      WarpState& ws = warps[w];
      std::array<Acc, kNTiles> st, dpt;
      for (int nt = 0; nt < kNTiles; ++nt) st[nt] = dpt[nt] = zero_acc();
      for (int ks = 0; ks < kKSteps; ++ks)
        for (int np = 0; np < kNTiles / 2; ++np) {
          auto at = [&](int lane) { return b_pattern_offset(lane, np * 16, ks * 16); };
          const Frag bq = ldmatrix_x4(smem_q, buf * query_tile, at, false);
          mma(st[2 * np], ws.k_frag[ks], bq, 0);
          mma(st[2 * np + 1], ws.k_frag[ks], bq, 2);
          const Frag bo = ldmatrix_x4(smem_do, buf * query_tile, at, false);
          mma(dpt[2 * np], ws.v_frag[ks], bo, 0);
          mma(dpt[2 * np + 1], ws.v_frag[ks], bo, 2);
        }
      LaneBits bits{};
      if (pr.mask.enabled) {
        if (keep != nullptr) {
          const uint64_t saved_keys =
              cuda::attention_keep_chunk(pr.layout(), head, s, start, warp_key0 / 16, 0);
          for (int lane = 0; lane < kLanes; ++lane)
            for (int pair = 0; pair < kNTiles / 2 && query0 + 16 * pair < len; ++pair) {
              const uint64_t at = saved_keys + cuda::keep_bitmap_backward_words(lane) +
                                  static_cast<uint64_t>(query0 / 16 + pair) * 32u;
              const uint32_t w0 = load_u32(*keep, at), w1 = load_u32(*keep, at + 4);
              for (int half = 0; half < 2; ++half)
                bits[lane] |= cuda::keep_bitmap_backward_nibble(w0, w1, half, lane)
                              << ((2 * pair + half) * 4);
            }
        } else {
          bits = backward_bits_drawn(
              pr, cuda::AttentionTileCoords{static_cast<uint64_t>(start + query0), warp_key0, head,
                                            pr.heads, pr.row_stride()});
        }
      }
      const bool masked = bwd_tile_masked(warp_key0, query0, len);
      for (int nt = 0; nt < kNTiles; ++nt)
        for (int lane = 0; lane < kLanes; ++lane)
          for (int e = 0; e < 4; ++e) {
            const int query_local = nt * 8 + fragment_col(lane, e);
            float prob = std::exp2(
                std::fma(st[nt][lane][e], scale_log2, -smem_lse[buf * kBwdBlockM + query_local]));
            if (masked && (warp_key0 + fragment_row(lane, e) >= len || query0 + query_local >= len))
              prob = 0.0f;
            float dprob = dpt[nt][lane][e], prob_dropped = prob;
            if (pr.mask.enabled) {
              const bool kept = (bits[lane] >> (nt * 4 + e)) & 1u;
              prob_dropped = kept ? prob * pr.mask.scale : 0.0f;
              dprob = kept ? dprob * pr.mask.scale : 0.0f;
            }
            st[nt][lane][e] = prob_dropped;
            dpt[nt][lane][e] = prob * (dprob - smem_dsum[buf * kBwdBlockM + query_local]);
          }
      std::array<Frag, kNTiles / 2> frag;
      for (int kk = 0; kk < kNTiles / 2; ++kk) frag[kk] = to_a_fragment(st[2 * kk], st[2 * kk + 1]);
      frags_times_tile(ws.dv_acc, frag, smem_do, buf * query_tile);
      for (int kk = 0; kk < kNTiles / 2; ++kk)
        frag[kk] = to_a_fragment(dpt[2 * kk], dpt[2 * kk + 1]);
      frags_times_tile(ws.dk_acc, frag, smem_q, buf * query_tile);
      for (int nt = 0; nt < kNTiles; ++nt)
        for (int lane = 0; lane < kLanes; ++lane) {
          const int col = nt * 8 + fragment_col(lane, 0);
          const Reg lo = frag[nt / 2][lane][(nt & 1) * 2],
                    hi = frag[nt / 2][lane][(nt & 1) * 2 + 1];
          for (int h = 0; h < 2; ++h) {
            smem_ds[(bwd_warp_key0(w) + fragment_row(lane, 0)) * kSmemRow + col + h] = lo[h];
            smem_ds[(bwd_warp_key0(w) + fragment_row(lane, 2)) * kSmemRow + col + h] = hi[h];
          }
        }
    }
    // (barrier) dQ of the tile: each warp its 16 queries x 32 dims.
    for (int w = 0; w < kBwdWarps; ++w) {
      if (query0 + dq_warp_query0(w) >= len) continue;
      std::array<Acc, kDqWarpDims / 8> dq;
      for (auto& a : dq) a = zero_acc();
      for (int kk = 0; kk < kBwdWarps; ++kk) {
        if (kk >= live_key_tiles) continue;
        const Frag a = ldmatrix_x4(
            smem_ds, 0,
            [&](int lane) { return b_pattern_offset(lane, kk * 16, dq_warp_query0(w)); }, true);
        for (int dp = 0; dp < kDqWarpDims / 16; ++dp) {
          const Frag b = ldmatrix_x4(
              smem_k, 0,
              [&](int lane) { return a_pattern_offset(lane, kk * 16, dq_warp_dim0(w) + dp * 16); },
              true);
          mma(dq[2 * dp], a, b, 0);
          mma(dq[2 * dp + 1], a, b, 2);
        }
      }
      float* stage = &smem_dq[w * kDqStageFloats];
      for (int nt = 0; nt < kDqWarpDims / 8; ++nt)
        for (int lane = 0; lane < kLanes; ++lane)
          for (int e = 0; e < 4; ++e)
            stage[dq_stage_offset(lane, nt, e)] = dq[nt][lane][e] * pr.scale;
      for (int lane = 0; lane < kLanes; ++lane)
        for (int i = 0; i < kDqVectorsPerLane; ++i) {
          const int row = dq_vector_row(lane, i), col = dq_vector_col(lane, i);
          const int query = query0 + dq_warp_query0(w) + row;
          if (query >= len) continue;
          const int dim = dq_warp_dim0(w) + col;
          for (int c = 0; c < 4; ++c) {
            const float x = stage[row * kDqStageRow + col + c];
            if (deterministic) {
              dq_accum.at(dq_partial_offset(n_block, start + query, head, pr.heads, pr.tokens,
                                            dim + c)) = x;
            } else {
              dq_accum.at(
                  dq_partial_offset(0, start + query, head, pr.heads, pr.tokens, dim + c)) += x;
            }
          }
        }
    }
    if (m_block + 1 < m_blocks) stats(query0 + kBwdBlockM, buf ^ 1);
  }
  // (barrier) dK and dV staged where K and dS^T were, each warp its own 16 rows.
  for (int w = 0; w < kBwdWarps; ++w) {
    if (key_block0 + bwd_warp_key0(w) >= len) continue;
    for (int nt = 0; nt < kNTiles; ++nt)
      for (int lane = 0; lane < kLanes; ++lane)
        for (int e = 0; e < 4; ++e) {
          const int at = (bwd_warp_key0(w) + fragment_row(lane, e)) * kSmemRow + nt * 8 +
                         fragment_col(lane, e);
          smem_k[at] = warps[w].dk_acc[nt][lane][e] * pr.scale;
          smem_v[at] = warps[w].dv_acc[nt][lane][e];
        }
    for (int lane = 0; lane < kLanes; ++lane)
      for (int i = 0; i < kBwdStoreChunksPerLane; ++i) {
        const int row = bwd_store_row(w, lane, i), col = bwd_store_col(lane, i);
        if (key_block0 + row >= len) continue;
        for (int c = 0; c < 8; ++c) {
          const size_t at = (start + key_block0 + row) * W + head * kHeadDim + col + c;
          g.dk[at] = smem_k[row * kSmemRow + col + c];
          g.dv[at] = smem_v[row * kSmemRow + col + c];
        }
      }
  }
}

Gradients emulate_backward(const Problem& pr, const std::vector<float>& out,
                           const std::vector<float>& lse, const std::vector<uint8_t>* keep,
                           bool deterministic) {
  const int W = pr.width();
  // attention_bwd_prepare_kernel: rowsum(dO * O); the accumulator zeroed unless deterministic.
  std::vector<float> softmax_d(static_cast<size_t>(pr.heads) * pr.tokens);
  for (int t = 0; t < pr.tokens; ++t)
    for (int h = 0; h < pr.heads; ++h) {
      float sum = 0;
      for (int d = 0; d < kHeadDim; ++d)
        sum += pr.d_out[t * W + h * kHeadDim + d] * out[t * W + h * kHeadDim + d];
      softmax_d[static_cast<size_t>(h) * pr.tokens + t] = sum;
    }
  const size_t plane = static_cast<size_t>(pr.tokens) * W;
  std::vector<float> dq_accum(deterministic ? plane * bwd_key_blocks(pr.max_seqlen) : plane,
                              deterministic ? kNaN : 0.0f);
  Gradients g{std::vector<float>(plane, kNaN), std::vector<float>(plane, kNaN),
              std::vector<float>(plane, kNaN)};
  for (int s = 0; s + 1 < static_cast<int>(pr.cu.size()); ++s)
    for (int head = 0; head < pr.heads; ++head)
      for (int n_block = 0; n_block < bwd_key_blocks(pr.max_seqlen); ++n_block)
        backward_cta(pr, lse, softmax_d, keep, deterministic, s, head, n_block, dq_accum, g);
  // attention_dq_partials_sum_kernel, or attention_dq_convert_kernel.
  for (int s = 0; s + 1 < static_cast<int>(pr.cu.size()); ++s) {
    const int start = pr.cu[s], len = pr.cu[s + 1] - start;
    for (int t = start; t < start + len; ++t)
      for (int h = 0; h < pr.heads; ++h)
        for (int d = 0; d < kHeadDim; ++d) {
          float sum = 0.0f;
          for (int kb = 0; kb < (deterministic ? bwd_key_blocks(len) : 1); ++kb)
            sum += dq_accum[dq_partial_offset(kb, t, h, pr.heads, pr.tokens, d)];
          g.dq[t * W + h * kHeadDim + d] = sum;
        }
  }
  return g;
}

// ---- the reference and the comparison -------------------------------------------------------

Problem make_problem(const std::vector<int32_t>& lengths, int heads, double p_drop, uint32_t seed) {
  Problem pr;
  pr.cu = {0};
  for (int len : lengths) pr.cu.push_back(pr.cu.back() + len);
  pr.tokens = pr.cu.back();
  pr.heads = heads;
  pr.max_seqlen = *std::max_element(lengths.begin(), lengths.end());
  pr.mask = mlbert::bert::make_dropout_mask(
      0x5eed0000u + seed, 3,
      mlbert::bert::dropout_site(1, mlbert::bert::DropoutSiteKind::attention_probs), p_drop);
  const size_t n = static_cast<size_t>(pr.tokens) * pr.width();
  // Scores of a few units (scale 0.125 x 64 products of N(0, 1.5^2)): softmaxes far from flat.
  pr.q = mlbert::test::random_vector(n, seed + 1, 1.5f);
  pr.k = mlbert::test::random_vector(n, seed + 2, 1.5f);
  pr.v = mlbert::test::random_vector(n, seed + 3);
  pr.d_out = mlbert::test::random_vector(n, seed + 4);
  return pr;
}

struct Reference {
  std::vector<float> out, lse, dq, dk, dv;
};

Reference reference(const Problem& pr) {
  using mlbert::test::HostTensor;
  mlbert::bert::CpuOps ops;
  const size_t n = pr.q.size();
  HostTensor q(ops, pr.q), k(ops, pr.k), v(ops, pr.v), d_out(ops, pr.d_out), cu(ops, pr.cu),
      out(ops, std::vector<float>(n)), lse(ops, std::vector<float>(pr.heads * pr.tokens)),
      dq(ops, std::vector<float>(n)), dk(ops, std::vector<float>(n)),
      dv(ops, std::vector<float>(n));
  mlbert::bert::AttentionForwardParams f;
  f.q = q;
  f.k = k;
  f.v = v;
  f.cu_seqlens = cu;
  f.out = out;
  f.softmax_lse = lse;
  f.dropout = pr.mask;
  f.tokens = pr.tokens;
  f.num_sequences = static_cast<int64_t>(pr.cu.size()) - 1;
  f.heads = pr.heads;
  f.head_dim = kHeadDim;
  f.max_seqlen = pr.max_seqlen;
  f.scale = pr.scale;
  ops.attention_forward(f);
  mlbert::bert::AttentionBackwardParams b;
  b.q = q;
  b.k = k;
  b.v = v;
  b.out = out;
  b.d_out = d_out;
  b.softmax_lse = lse;
  b.cu_seqlens = cu;
  b.d_q = dq;
  b.d_k = dk;
  b.d_v = dv;
  b.dropout = pr.mask;
  b.tokens = f.tokens;
  b.num_sequences = f.num_sequences;
  b.heads = f.heads;
  b.head_dim = kHeadDim;
  b.max_seqlen = f.max_seqlen;
  b.scale = f.scale;
  ops.attention_backward(b);
  return {out.host(ops), lse.host(ops), dq.host(ops), dk.host(ops), dv.host(ops)};
}

// Largest |got - want| relative to the largest |want|, or to 1 where every |want| is smaller (a
// sequence of length 1 has dQ = dK = 0); NaN (an unwritten or poisoned value) fails.
double max_relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0, scale = 1.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return worst / scale;
}

// fp32 throughout, sums of up to 512 terms in another order: ~1e-6 of the largest value here
// (5.5e-6 at most when written), 1e-4 allowed; a misplaced element, tile or keep bit costs
// errors of the order of the values.
constexpr double kTolerance = 1e-4;

void check_against_reference(const std::vector<int32_t>& lengths, int heads, double p_drop,
                             KeepBits mode, bool deterministic, uint32_t seed) {
  const Problem pr = make_problem(lengths, heads, p_drop, seed);
  const Reference ref = reference(pr);
  std::vector<uint8_t> keep(
      cuda::attention_keep_bytes(pr.tokens, static_cast<int64_t>(pr.cu.size()) - 1, heads,
                                 pr.max_seqlen),
      0);  // 0: every element dropped, where a read finds no stored byte
  const ForwardResult fwd = emulate_forward(pr, mode, keep);
  // The backward starts from the reference forward's out and lse, as the device check does.
  const Gradients grad = emulate_backward(
      pr, ref.out, ref.lse, mode == KeepBits::drawn_twice ? nullptr : &keep, deterministic);
  std::string lens;
  for (int len : lengths) lens += std::to_string(len) + " ";
  INFO("lengths " << lens << "heads " << heads << " dropout " << p_drop << " keep bits "
                  << static_cast<int>(mode) << " deterministic dQ " << deterministic);
  CHECK(max_relative_error(fwd.out, ref.out) < kTolerance);
  CHECK(max_relative_error(fwd.lse, ref.lse) < kTolerance);
  CHECK(max_relative_error(grad.dq, ref.dq) < kTolerance);
  CHECK(max_relative_error(grad.dk, ref.dk) < kTolerance);
  CHECK(max_relative_error(grad.dv, ref.dv) < kTolerance);
}

}  // namespace fa2_emulation_test

TEST_CASE(
    "attention fa2 emulation: forward and backward match the CPU reference at lengths 1, "
    "not multiples of the tiles, and 512") {
  using namespace fa2_emulation_test;  // NOLINT
  check_against_reference({1}, 2, 0.1, KeepBits::kernel_keeps, false, 1);
  check_against_reference({37, 1, 200}, 2, 0.1, KeepBits::kernel_keeps, false, 2);
  check_against_reference({512}, 1, 0.1, KeepBits::kernel_keeps, false, 3);
  check_against_reference({130, 64, 257}, 1, 0.0, KeepBits::drawn_twice, false, 4);
}

TEST_CASE(
    "attention fa2 emulation: every source of the dropout bits, and deterministic dQ, give "
    "the reference's gradients") {
  using namespace fa2_emulation_test;  // NOLINT
  check_against_reference({129, 17}, 2, 0.3, KeepBits::forward_keeps, false, 5);
  check_against_reference({129, 17}, 2, 0.3, KeepBits::drawn_twice, false, 6);
  check_against_reference({300, 45}, 1, 0.1, KeepBits::kernel_keeps, true, 7);
  check_against_reference({512, 128}, 1, 0.1, KeepBits::forward_keeps, true, 8);
}
