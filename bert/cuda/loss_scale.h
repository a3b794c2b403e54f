// Dynamic loss scaling for fp16 training: the policy as a pure host function and the state the
// device-side update kernel (optimizer.cu) keeps, so an fp16 step can run without reading the
// inf/nan flag back to the host. Policy: an overflow (inf/nan anywhere in the gradients) skips the
// step and multiplies the scale by `backoff`; `growth_interval` clean steps in a row multiply it
// by `growth`; the scale stays within [min_scale, max_scale].
#pragma once

#include <cstdint>

namespace mlbert::cuda {

struct LossScaleConfig {
  float initial_scale = 131072.0f;  // 2^17, the starting scale of the MLPerf BERT fp16 submissions
  float growth = 2.0f;
  float backoff = 0.5f;
  int32_t growth_interval = 2000;
  float min_scale = 1.0f;
  float max_scale = 16777216.0f;  // 2^24
};

// Lives in device memory when used by the kernels; trivially copyable.
struct LossScaleState {
  float scale = 131072.0f;    // the scale for the NEXT step's loss
  float step_unscale = 1.0f;  // 1 / the scale the current step's gradients carry
  int32_t good_steps = 0;     // clean steps since the last change
  int32_t found_inf = 0;      // 1 when the current step overflowed (its update is skipped)
  int32_t skipped_steps = 0;  // total skipped so far
  int32_t reserved = 0;
};

inline LossScaleState initial_loss_scale_state(const LossScaleConfig& config) {
  LossScaleState state;
  state.scale = config.initial_scale;
  state.step_unscale = 1.0f / config.initial_scale;
  return state;
}

// One step of the policy: `found_inf` says whether the gradients produced with state.scale
// overflowed. Shared verbatim by the host and the device (a template on nothing but plain math).
#if defined(__CUDACC__)
__host__ __device__
#endif
    inline LossScaleState
    next_loss_scale(LossScaleState state, bool found_inf, const LossScaleConfig& config) {
  state.step_unscale = 1.0f / state.scale;
  state.found_inf = found_inf ? 1 : 0;
  if (found_inf) {
    state.skipped_steps += 1;
    state.good_steps = 0;
    const float reduced = state.scale * config.backoff;
    state.scale = reduced < config.min_scale ? config.min_scale : reduced;
  } else {
    state.good_steps += 1;
    if (state.good_steps >= config.growth_interval) {
      state.good_steps = 0;
      const float grown = state.scale * config.growth;
      state.scale = grown > config.max_scale ? config.max_scale : grown;
    }
  }
  return state;
}

}  // namespace mlbert::cuda
