// Philox 4x32-10 (Salmon et al., SC'11) and the dropout-mask mapping shared by every backend.
//
// Design choice: a dropout mask is a pure function of (seed, step, site, element), so the CPU and
// CUDA backends draw the same mask bit for bit and a backward can recompute it. (The CUDA attention
// forward may keep the bits it drew for its backward, bert/cuda/dropout_bits.h: the same bits.)
// This header compiles as plain C++ and under nvcc (functions become __host__ __device__).
//
// The exact mapping (part of the Ops contract; changing it changes every mask):
//   key     = (k0, k1) = (low 32 bits of seed, high 32 bits of seed)
//   counter = (c0, c1, c2, c3) = (low 32 bits of element/8, high 32 bits of element/8, site, step)
//   word    = 16-bit half (element % 2) of output[(element % 8) / 2] of philox4x32_10(counter, key)
//             (half 0 the low 16 bits)
//   keep    = word < keep_threshold,  keep_threshold = floor((1 - p) * 2^16) clamped to 2^16 - 1
//   value   = keep ? x * (1 / (1 - p)) : 0        (p == 0: no mask at all, every element kept)
// One Philox call thus covers 8 elements: a 16-bit word keeps 1 - p to within 2^-16 (p = 0.1:
// 0.899994), and the attention kernels, whose speed the Philox rounds bound, draw half as often
// as with a 32-bit word per element (BENCHMARKS.md, "CUDA backend").
// `element` is the row-major index of the element in the tensor the dropout applies to (see
// dropout_site() and attention_dropout_element() for the sites and the attention-probability
// index).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define MLBERT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define MLBERT_HOST_DEVICE inline
#endif

namespace mlbert::bert {

struct Philox4x32 {
  uint32_t v[4];
};

// Multipliers and Weyl key increments of Philox 4x32 (Random123).
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
inline constexpr int kPhiloxRounds = 10;

MLBERT_HOST_DEVICE Philox4x32 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                            uint32_t k0, uint32_t k1) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return Philox4x32{{c0, c1, c2, c3}};
}

// Where a dropout mask is drawn. Site ids: 0 = embeddings output; for encoder layer l,
// 1 + 3l = attention probabilities, 2 + 3l = attention output (before residual + LayerNorm),
// 3 + 3l = FFN output (before residual + LayerNorm). The heads have no dropout.
enum class DropoutSiteKind : uint32_t { attention_probs = 0, attention_output = 1, ffn_output = 2 };
inline constexpr uint32_t kEmbeddingDropoutSite = 0;
MLBERT_HOST_DEVICE uint32_t dropout_site(int layer, DropoutSiteKind kind) {
  return 1u + 3u * static_cast<uint32_t>(layer) + static_cast<uint32_t>(kind);
}

// The seed and step of the step being run, in device memory: a CUDA graph recorded once reads
// them there, so each replay draws that step's masks (the CUDA backend writes them before it).
struct DropoutKeyWords {
  uint64_t seed = 0;
  uint32_t step = 0;
  uint32_t unused = 0;
};

// Everything a kernel needs to draw one site's mask. `enabled == false` keeps every element and
// does not scale (evaluation, p == 0).
struct DropoutMask {
  uint64_t seed = 0;
  uint32_t step = 0;
  uint32_t site = 0;
  uint32_t keep_threshold = 0;  // keep iff the element's 16-bit Philox word < keep_threshold
  float scale = 1.0f;           // 1 / (1 - p) for kept elements
  bool enabled = false;
  // Device memory or null (always null on the CPU): when set, a kernel takes seed and step from
  // here (resolve_dropout_key, once at its start) instead of the two fields above.
  const DropoutKeyWords* device_key = nullptr;
};

// The mask with seed and step read from mask.device_key where it is set. Device code only when it
// is set (it dereferences device memory).
MLBERT_HOST_DEVICE DropoutMask resolve_dropout_key(DropoutMask mask) {
  if (mask.device_key != nullptr) {
    mask.seed = mask.device_key->seed;
    mask.step = mask.device_key->step;
    mask.device_key = nullptr;
  }
  return mask;
}

// Host-side construction; `p` in [0, 1). p == 0 yields a disabled mask.
inline DropoutMask make_dropout_mask(uint64_t seed, uint32_t step, uint32_t site, double p) {
  DropoutMask mask;
  mask.seed = seed;
  mask.step = step;
  mask.site = site;
  if (!(p > 0.0)) return mask;
  const double threshold = (1.0 - p) * 65536.0;
  mask.keep_threshold = threshold >= 65535.0 ? 65535u : static_cast<uint32_t>(threshold);
  mask.scale = static_cast<float>(1.0 / (1.0 - p));
  mask.enabled = true;
  return mask;
}

// Elements per Philox call (a "block"): 4 outputs x 2 16-bit words.
inline constexpr uint32_t kDropoutBlockElements = 8;

// The Philox block that holds elements [8*(element/8), 8*(element/8) + 8).
MLBERT_HOST_DEVICE Philox4x32 dropout_block(const DropoutMask& mask, uint64_t element) {
  const uint64_t group = element >> 3;
  return philox4x32_10(static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), mask.site,
                       mask.step, static_cast<uint32_t>(mask.seed),
                       static_cast<uint32_t>(mask.seed >> 32));
}

// The 16-bit word of element `index` (0..7) of a block.
MLBERT_HOST_DEVICE uint32_t dropout_word(const Philox4x32& block, uint32_t index) {
  return (block.v[index >> 1] >> (16u * (index & 1u))) & 0xffffu;
}

MLBERT_HOST_DEVICE bool dropout_keep(const DropoutMask& mask, uint64_t element) {
  if (!mask.enabled) return true;
  return dropout_word(dropout_block(mask, element), static_cast<uint32_t>(element & 7u)) <
         mask.keep_threshold;
}

// The multiplier dropout applies to element `element`: 0, or `scale` when kept (1 when disabled).
MLBERT_HOST_DEVICE float dropout_factor(const DropoutMask& mask, uint64_t element) {
  if (!mask.enabled) return 1.0f;
  return dropout_keep(mask, element) ? mask.scale : 0.0f;
}

// Attention probabilities of sequence-local query row i (global token index `query_token`), head
// `head`, key column j: element = (query_token * num_heads + head) * row_stride + j, with
// row_stride = max_seqlen rounded up to a multiple of 8 so one Philox block never spans two rows.
MLBERT_HOST_DEVICE uint64_t attention_dropout_row_stride(int max_seqlen) {
  return (static_cast<uint64_t>(max_seqlen) + 7u) & ~static_cast<uint64_t>(7u);
}
MLBERT_HOST_DEVICE uint64_t attention_dropout_element(uint64_t query_token, int head, int num_heads,
                                                      uint64_t row_stride, int key_index) {
  return (query_token * static_cast<uint64_t>(num_heads) + static_cast<uint64_t>(head)) *
             row_stride +
         static_cast<uint64_t>(key_index);
}

}  // namespace mlbert::bert
