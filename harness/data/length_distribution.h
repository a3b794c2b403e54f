// Sequence lengths of the MLPerf BERT training set as a stated histogram, for planning tools that
// run without the data: the straggler bench and `mlbert simulate`.
//
// Design choice: the bin mix is the one the paper's stratified quotas imply (docs/reference.md,
// "The length mix": 37.5% of samples 1-128 tokens, 18.75% 129-256, 12.5% 257-384, 31.25%
// 385-512); the shape inside a bin is an assumption every caller states: uniform in the first
// three bins (at least 20 tokens: [CLS] A [SEP] B [SEP] is never shorter than a few), and in the
// last bin 80% full 512-token sequences (the reference fills most sequences to the maximum) and
// 20% uniform in 385-511. Both draws consume a std::mt19937_64 the caller owns, so a seed fixes
// the sequence.
#pragma once

#include <array>
#include <random>

namespace mlbert::harness {

// Fraction of samples in each length bin (1-128, 129-256, 257-384, 385-512).
inline constexpr std::array<double, 4> kMlperfBinMix = {0.375, 0.1875, 0.125, 0.3125};

// One length from bin `bin` (0..3) of the MLPerf bin mix.
int mlperf_length_in_bin(int bin, std::mt19937_64& rng);

// One length of the whole MLPerf bin mix: a bin by its share, then a length inside it.
int mlperf_random_length(std::mt19937_64& rng);

// The assumption above in one line, for outputs that must name it.
inline constexpr const char* kMlperfBinMixDescription =
    "MLPerf bin mix 37.5/18.75/12.5/31.25% (1-128/129-256/257-384/385-512); uniform inside the "
    "first three bins (>= 20 tokens), last bin 80% at 512 and 20% uniform in 385-511";

}  // namespace mlbert::harness
