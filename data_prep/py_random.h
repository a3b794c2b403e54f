// CPython's `random.Random`, bit for bit: the generator MLPerf's create_pretraining_data.py draws
// from. Only the calls the reference makes are provided, and each consumes the MT19937 stream
// exactly as CPython 3.x does (random() takes two 32-bit words, _randbelow rejects with
// getrandbits(k)).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mlbert::data {

class PyRandom {
 public:
  // random.Random(seed) for an integer seed (CPython uses |seed| split into 32-bit words).
  explicit PyRandom(int64_t seed);

  // random.random(): 53-bit float in [0, 1).
  double random();
  // random.getrandbits(k) for 0 <= k <= 64.
  uint64_t getrandbits(int k);
  // random._randbelow(n) for n >= 1: getrandbits(n.bit_length()) until the value is < n.
  uint64_t randbelow(uint64_t n);
  // random.randint(a, b), inclusive; requires a <= b.
  int64_t randint(int64_t a, int64_t b);
  // random.randrange(start, stop); requires start < stop.
  int64_t randrange(int64_t start, int64_t stop);
  // random.shuffle(x): Fisher-Yates from the back, j = _randbelow(i + 1).
  template <typename T>
  void shuffle(std::vector<T>& x) {
    for (std::size_t i = x.size(); i-- > 1;) {
      const std::size_t j = static_cast<std::size_t>(randbelow(i + 1));
      std::swap(x[i], x[j]);
    }
  }
  // One raw 32-bit word of MT19937 (genrand_uint32).
  uint32_t next_u32();

 private:
  void init_genrand(uint32_t s);
  void init_by_array(const std::vector<uint32_t>& key);

  static constexpr int kN = 624;
  std::array<uint32_t, kN> state_{};
  int index_ = kN + 1;
};

}  // namespace mlbert::data
