// The token scan (see token_scan.h). The vector code tests each 32- or 64-byte block for the
// starts of ":?:M" (three compares; real log text rarely holds them) and takes the block's '\n'
// and '\r' masks from the same load, so every byte is read once; candidates are confirmed with
// memcmp.
#include "mlperf_logging/log/token_scan.h"

#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#define MLBERT_TOKEN_SCAN_X86 1
// glibc 2.33 and later; its declarations use C's _Bool, which clang's C++ does not take (the fuzz
// and sanitizer builds ask the CPU instead).
#if __has_include(<sys/platform/x86.h>) && !defined(__clang__)
#include <sys/platform/x86.h>
#define MLBERT_GLIBC_CPU_FEATURES 1
#endif
#endif

namespace mlbert::mllog {
namespace {

constexpr std::size_t kTokenSize = kMllogToken.size();

bool token_at(const char* p) {
  return std::memcmp(p, kMllogToken.data(), kTokenSize) == 0;
}

// Number of '\n' in [from, to), eight bytes at a time: an exact per-byte zero test leaves a 1 in
// each byte that was '\n', and these add up per byte for at most 255 blocks before being summed.
std::size_t count_newlines(const char* from, const char* to) {
  constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  std::size_t count = 0;
  std::uint64_t lanes = 0;
  int blocks = 0;
  const auto fold = [&] {
    for (int byte = 0; byte < 8; ++byte) count += (lanes >> (8 * byte)) & 0xFF;
    lanes = 0;
    blocks = 0;
  };
  for (; to - from >= 8; from += 8) {
    std::uint64_t v;
    std::memcpy(&v, from, 8);
    v ^= ones * '\n';  // newline bytes become zero
    lanes += (~(((v & ~highs) + ~highs) | v | ~highs)) >> 7;
    if (++blocks == 255) fold();
  }
  fold();
  for (; from < to; ++from) count += *from == '\n';
  return count;
}

#if MLBERT_TOKEN_SCAN_X86
__attribute__((target("avx2,popcnt"))) TokenScan scan_avx2(const char* begin, const char* end) {
  TokenScan scan;
  const char* p = begin;
  if (end - begin >= static_cast<std::ptrdiff_t>(kTokenSize) + 32) {
    const char* last = end - kTokenSize;  // the last possible token start
    const __m256i colon = _mm256_set1_epi8(':'), m = _mm256_set1_epi8('M');
    const __m256i newline = _mm256_set1_epi8('\n'), cr = _mm256_set1_epi8('\r');
    std::uint32_t cr_seen = 0;
    for (; last - p >= 32; p += 32) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      const __m256i bytes2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
      const __m256i bytes3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 3));
      const auto newlines =
          static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(bytes, newline)));
      const auto crs =
          static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(bytes, cr)));
      const __m256i hit = _mm256_and_si256(
          _mm256_and_si256(_mm256_cmpeq_epi8(bytes, colon), _mm256_cmpeq_epi8(bytes2, colon)),
          _mm256_cmpeq_epi8(bytes3, m));
      for (auto mask = static_cast<std::uint32_t>(_mm256_movemask_epi8(hit)); mask;
           mask &= mask - 1) {
        const unsigned offset = static_cast<unsigned>(__builtin_ctz(mask));
        if (!token_at(p + offset)) continue;
        const auto before = static_cast<std::uint32_t>((std::uint64_t{1} << offset) - 1);
        scan.token = p + offset;
        scan.newlines += static_cast<std::size_t>(_mm_popcnt_u32(newlines & before));
        scan.has_cr = ((cr_seen | (crs & before)) != 0);
        return scan;
      }
      scan.newlines += static_cast<std::size_t>(_mm_popcnt_u32(newlines));
      cr_seen |= crs;
    }
    scan.has_cr = cr_seen != 0;
  }
  const TokenScan rest = detail::scan_to_token_portable(p, end);
  scan.token = rest.token;
  scan.newlines += rest.newlines;
  scan.has_cr = scan.has_cr || rest.has_cr;
  return scan;
}
// The same 64 bytes at a time, the compares writing mask registers directly.
__attribute__((target("avx512bw,popcnt"))) TokenScan scan_avx512(const char* begin,
                                                                 const char* end) {
  TokenScan scan;
  const char* p = begin;
  if (end - begin >= static_cast<std::ptrdiff_t>(kTokenSize) + 64) {
    const char* last = end - kTokenSize;  // the last possible token start
    const __m512i colon = _mm512_set1_epi8(':'), m = _mm512_set1_epi8('M');
    const __m512i newline = _mm512_set1_epi8('\n'), cr = _mm512_set1_epi8('\r');
    std::uint64_t cr_seen = 0;
    for (; last - p >= 64; p += 64) {
      const __m512i bytes = _mm512_loadu_si512(p);
      const std::uint64_t newlines = _mm512_cmpeq_epi8_mask(bytes, newline);
      const std::uint64_t crs = _mm512_cmpeq_epi8_mask(bytes, cr);
      const __mmask64 colons = _mm512_cmpeq_epi8_mask(bytes, colon);
      const __mmask64 colons2 =
          _mm512_mask_cmpeq_epi8_mask(colons, _mm512_loadu_si512(p + 2), colon);
      for (std::uint64_t mask = _mm512_mask_cmpeq_epi8_mask(colons2, _mm512_loadu_si512(p + 3), m);
           mask; mask &= mask - 1) {
        const unsigned offset = static_cast<unsigned>(__builtin_ctzll(mask));
        if (!token_at(p + offset)) continue;
        const std::uint64_t before = (std::uint64_t{1} << offset) - 1;
        scan.token = p + offset;
        scan.newlines += static_cast<std::size_t>(_mm_popcnt_u64(newlines & before));
        scan.has_cr = ((cr_seen | (crs & before)) != 0);
        return scan;
      }
      scan.newlines += static_cast<std::size_t>(_mm_popcnt_u64(newlines));
      cr_seen |= crs;
    }
    scan.has_cr = cr_seen != 0;
  }
  const TokenScan rest = scan_avx2(p, end);
  scan.token = rest.token;
  scan.newlines += rest.newlines;
  scan.has_cr = scan.has_cr || rest.has_cr;
  return scan;
}
#endif

}  // namespace

namespace detail {

TokenScan scan_to_token_portable(const char* begin, const char* end) {
  TokenScan scan;
  scan.token = find_token(begin, end);
  const char* stop = scan.token ? scan.token : end;
  scan.newlines = count_newlines(begin, stop);
  scan.has_cr = std::memchr(begin, '\r', static_cast<std::size_t>(stop - begin)) != nullptr;
  return scan;
}

ScanCode best_scan_code() {
#if MLBERT_TOKEN_SCAN_X86 && defined(MLBERT_GLIBC_CPU_FEATURES)
  // glibc's record of what the CPU and the kernel enable, filled before main: asking the CPU
  // (cpuid, __builtin_cpu_supports) would cost every process a trap to the hypervisor in a VM.
  static const ScanCode best = !CPU_FEATURE_ACTIVE(POPCNT) || !CPU_FEATURE_ACTIVE(AVX2)
                                   ? ScanCode::portable
                               : CPU_FEATURE_ACTIVE(AVX512BW) ? ScanCode::avx512
                                                              : ScanCode::avx2;
  return best;
#elif MLBERT_TOKEN_SCAN_X86
  static const ScanCode best = [] {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("popcnt") || !__builtin_cpu_supports("avx2"))
      return ScanCode::portable;
    return __builtin_cpu_supports("avx512bw") ? ScanCode::avx512 : ScanCode::avx2;
  }();
  return best;
#else
  return ScanCode::portable;
#endif
}

TokenScan scan_to_token_with(ScanCode code, const char* begin, const char* end) {
#if MLBERT_TOKEN_SCAN_X86
  if (code == ScanCode::avx512) return scan_avx512(begin, end);
  if (code == ScanCode::avx2) return scan_avx2(begin, end);
#endif
  return scan_to_token_portable(begin, end);
}

}  // namespace detail

TokenScan scan_to_token(const char* begin, const char* end) {
  return detail::scan_to_token_with(detail::best_scan_code(), begin, end);
}

const char* find_token(const char* begin, const char* end) {
  if (end - begin < static_cast<std::ptrdiff_t>(kTokenSize)) return nullptr;
  return static_cast<const char*>(
      memmem(begin, static_cast<std::size_t>(end - begin), kMllogToken.data(), kTokenSize));
}

}  // namespace mlbert::mllog
