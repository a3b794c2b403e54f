// Dynamic loss scaling policy (shared verbatim by the host and the device update kernel).
#include <catch2/catch.hpp>

#include "bert/cuda/loss_scale.h"

namespace cuda = mlbert::cuda;

TEST_CASE("loss scale halves and skips on overflow, doubles after growth_interval clean steps") {
  cuda::LossScaleConfig config;
  config.initial_scale = 1024.0f;
  config.growth_interval = 3;
  cuda::LossScaleState s = cuda::initial_loss_scale_state(config);
  CHECK(s.scale == 1024.0f);

  s = cuda::next_loss_scale(s, true, config);
  CHECK(s.found_inf == 1);
  CHECK(s.step_unscale == 1.0f / 1024.0f);  // the skipped step's gradients carried 1024
  CHECK(s.scale == 512.0f);
  CHECK(s.skipped_steps == 1);

  for (int i = 0; i < 2; ++i) s = cuda::next_loss_scale(s, false, config);
  CHECK(s.scale == 512.0f);
  CHECK(s.good_steps == 2);
  s = cuda::next_loss_scale(s, false, config);
  CHECK(s.found_inf == 0);
  CHECK(s.step_unscale == 1.0f / 512.0f);
  CHECK(s.scale == 1024.0f);
  CHECK(s.good_steps == 0);

  // An overflow in the middle of a clean run restarts the count.
  s = cuda::next_loss_scale(s, false, config);
  s = cuda::next_loss_scale(s, true, config);
  CHECK(s.good_steps == 0);
  CHECK(s.scale == 512.0f);
}

TEST_CASE("loss scale stays within [min_scale, max_scale]") {
  cuda::LossScaleConfig config;
  config.initial_scale = 2.0f;
  config.min_scale = 1.0f;
  config.max_scale = 4.0f;
  config.growth_interval = 1;
  cuda::LossScaleState s = cuda::initial_loss_scale_state(config);
  for (int i = 0; i < 5; ++i) s = cuda::next_loss_scale(s, true, config);
  CHECK(s.scale == 1.0f);
  for (int i = 0; i < 5; ++i) s = cuda::next_loss_scale(s, false, config);
  CHECK(s.scale == 4.0f);
}
