// MT19937 as in CPython's Modules/_randommodule.c (itself the reference mt19937ar.c), plus the
// Python-level methods of Lib/random.py that the reference data generator calls.
#include "data_prep/py_random.h"

#include <bit>
#include <stdexcept>

namespace mlbert::data {
namespace {
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;
}  // namespace

PyRandom::PyRandom(int64_t seed) {
  // CPython: n = abs(seed); key = n as little-endian 32-bit words, at least one word.
  uint64_t n = seed < 0 ? static_cast<uint64_t>(-(seed + 1)) + 1 : static_cast<uint64_t>(seed);
  std::vector<uint32_t> key;
  do {
    key.push_back(static_cast<uint32_t>(n & 0xffffffffU));
    n >>= 32;
  } while (n != 0);
  init_by_array(key);
}

void PyRandom::init_genrand(uint32_t s) {
  state_[0] = s;
  for (int i = 1; i < kN; ++i) {
    state_[i] = 1812433253U * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  index_ = kN;
}

void PyRandom::init_by_array(const std::vector<uint32_t>& key) {
  init_genrand(19650218U);
  int i = 1;
  size_t j = 0;
  const size_t key_length = key.size();
  for (size_t k = (kN > key_length ? kN : key_length); k; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525U)) + key[j] +
                static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  for (int k = kN - 1; k; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941U)) -
                static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000U;  // MSB is 1, assuring a non-zero initial array
  index_ = kN;
}

uint32_t PyRandom::next_u32() {
  if (index_ >= kN) {
    int kk = 0;
    for (; kk < kN - kM; ++kk) {
      const uint32_t y = (state_[kk] & kUpperMask) | (state_[kk + 1] & kLowerMask);
      state_[kk] = state_[kk + kM] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    }
    for (; kk < kN - 1; ++kk) {
      const uint32_t y = (state_[kk] & kUpperMask) | (state_[kk + 1] & kLowerMask);
      state_[kk] = state_[kk + (kM - kN)] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    }
    const uint32_t y = (state_[kN - 1] & kUpperMask) | (state_[0] & kLowerMask);
    state_[kN - 1] = state_[kM - 1] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

double PyRandom::random() {
  const uint32_t a = next_u32() >> 5;
  const uint32_t b = next_u32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

uint64_t PyRandom::getrandbits(int k) {
  if (k < 0 || k > 64) throw std::invalid_argument("getrandbits: k must be in [0, 64]");
  if (k == 0) return 0;
  if (k <= 32) return next_u32() >> (32 - k);
  // CPython fills 32-bit words from the least significant end; the last word keeps its top bits.
  const uint64_t low = next_u32();
  const uint64_t high = next_u32() >> (64 - k);
  return low | (high << 32);
}

uint64_t PyRandom::randbelow(uint64_t n) {
  if (n == 0) throw std::invalid_argument("randbelow: n must be >= 1");
  const int k = std::bit_width(n);  // n.bit_length(); n == 1 still draws one word
  uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

int64_t PyRandom::randrange(int64_t start, int64_t stop) {
  if (start >= stop) throw std::invalid_argument("randrange: empty range");
  const uint64_t width = static_cast<uint64_t>(stop) - static_cast<uint64_t>(start);
  return start + static_cast<int64_t>(randbelow(width));
}

int64_t PyRandom::randint(int64_t a, int64_t b) {
  return randrange(a, b + 1);
}

}  // namespace mlbert::data
