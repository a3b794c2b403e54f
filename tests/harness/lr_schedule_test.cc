// Learning-rate schedules: the MLPerf TF reference and NVIDIA's PyTorch scheduler, checked on the
// published hyperparameters against values computed by hand from the formulas.
#include <catch2/catch.hpp>

#include "harness/train/lr_schedule.h"

using mlbert::harness::LrSchedule;
using mlbert::harness::LrScheduleSpec;
using mlbert::harness::LrScheduleStyle;

TEST_CASE("reference schedule without warmup decays linearly from the first update", "[lr]") {
  LrScheduleSpec spec;
  spec.training_steps = spec.decay_steps = 6700;
  const LrSchedule lr(4.25e-4, spec);
  CHECK(lr.at(0) == Approx(4.25e-4));
  CHECK(lr.at(3350) == Approx(4.25e-4 / 2));
  CHECK(lr.at(6700) == 0.0);
  CHECK(lr.at(9000) == 0.0);  // min(step, decay_steps): never negative
}

TEST_CASE("reference schedule: warmup offset by start_warmup_step overrides the decay", "[lr]") {
  // RCP GBS 8192: lr 2.88293e-3, 287 warmup steps starting at step -76, 600 training steps.
  LrScheduleSpec spec;
  spec.warmup_steps = 287;
  spec.start_warmup_step = -76;
  spec.training_steps = spec.decay_steps = 600;
  const double base = 2.88293e-3;
  const LrSchedule lr(base, spec);
  CHECK(lr.at(0) == Approx(base * 76 / 287));
  CHECK(lr.at(210) == Approx(base * 286 / 287));
  // Warmup ends at step 211 (211 + 76 = 287): from there on the poly decay of the global step.
  CHECK(lr.at(211) == Approx(base * (1 - 211.0 / 600)));
  CHECK(lr.at(599) == Approx(base / 600));
}

TEST_CASE("reference schedule with warmup from step 0 makes the first update's rate 0", "[lr]") {
  LrScheduleSpec spec;
  spec.warmup_steps = 100;
  spec.training_steps = spec.decay_steps = 1141;
  const LrSchedule lr(2e-3, spec);
  CHECK(lr.at(0) == 0.0);
  CHECK(lr.at(50) == Approx(1e-3));
  CHECK(lr.at(100) == Approx(2e-3 * (1 - 100.0 / 1141)));
}

TEST_CASE("reference schedule with an end rate and power 2", "[lr]") {
  LrScheduleSpec spec;
  spec.training_steps = spec.decay_steps = 100;
  spec.poly_power = 2.0;
  spec.end_learning_rate = 1e-5;
  const LrSchedule lr(1e-3, spec);
  CHECK(lr.at(50) == Approx((1e-3 - 1e-5) * 0.25 + 1e-5));
  CHECK(lr.at(100) == Approx(1e-5));
}

TEST_CASE("nvidia schedule with the paper's Adam hyperparameters", "[lr]") {
  // 82 warmup steps from -16, linear decay to 4.945e-5 at step 179 (NVIDIA steps count from 1).
  LrScheduleSpec spec;
  spec.style = LrScheduleStyle::nvidia;
  spec.warmup_steps = 82;
  spec.start_warmup_step = -16;
  spec.training_steps = 299;
  spec.decay_steps = 179;
  spec.end_learning_rate = 4.94549100544884e-5;
  const double base = 3.9299421615882676e-4;
  const LrSchedule lr(base, spec);
  CHECK(lr.at(0) == Approx(base * 17 / 82));
  CHECK(lr.at(64) == Approx(base * 81 / 82));
  // Past warmup the decay is measured from step 82, not from where warmup ended (66): NVIDIA's
  // formula gives progress < 0 and a rate above the base until step 82, as the paper's code ran.
  const double end = spec.end_learning_rate;
  CHECK(lr.at(65) == Approx((base - end) * (1 + 16.0 / 97) + end));
  CHECK(lr.at(81) == Approx(base));
  CHECK(lr.at(130) == Approx((base - end) * (1 - 49.0 / 97) + end));
  CHECK(lr.at(178) == Approx(end));
  CHECK(lr.at(179) == Approx(end));
  CHECK(lr.at(250) == Approx(end));
}
