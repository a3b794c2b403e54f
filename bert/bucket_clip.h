// The paper's bucket-wise clip factor, shared verbatim by the host (Ops' default bucket_clip) and
// the CUDA kernel, so both backends form the same f32 factor (see BucketClipParams in ops.h).
#pragma once
#include <cmath>
#include <cstddef>
#include <limits>

#include "bert/philox.h"  // MLBERT_HOST_DEVICE

namespace mlbert::bert {

// tau = 1 / sqrt(number of buckets): a fully saturated set of buckets has a global norm <= 1.
inline double bucket_clip_tau(size_t num_buckets) {
  return 1.0 / std::sqrt(static_cast<double>(num_buckets));
}

// min(1, tau / (norm / loss_scale)) / world in double, rounded to f32; NaN for a bucket whose
// norm is flagged or not finite, so every rank's sum carries the overflow.
MLBERT_HOST_DEVICE float bucket_clip_scale(float norm, bool flagged, double loss_scale, double tau,
                                           int world) {
  if (flagged || !(norm - norm == 0.0f)) return std::numeric_limits<float>::quiet_NaN();
  const double unscaled = static_cast<double>(norm) / loss_scale;
  const double factor = unscaled > tau ? tau / unscaled : 1.0;  // also 1 for norm 0
  return static_cast<float>(factor / world);
}

}  // namespace mlbert::bert
