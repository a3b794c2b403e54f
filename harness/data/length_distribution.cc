// The MLPerf bin-mix length generator (see length_distribution.h).
#include "harness/data/length_distribution.h"

namespace mlbert::harness {

int mlperf_length_in_bin(int bin, std::mt19937_64& rng) {
  auto in = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  switch (bin) {
    case 0:
      return in(20, 128);
    case 1:
      return in(129, 256);
    case 2:
      return in(257, 384);
    default:
      return std::uniform_real_distribution<double>(0, 1)(rng) < 0.8 ? 512 : in(385, 511);
  }
}

int mlperf_random_length(std::mt19937_64& rng) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  const double first = kMlperfBinMix[0], second = first + kMlperfBinMix[1],
               third = second + kMlperfBinMix[2];
  return mlperf_length_in_bin(u < first ? 0 : u < second ? 1 : u < third ? 2 : 3, rng);
}

}  // namespace mlbert::harness
