// The two MLPerf BERT learning-rate schedules; see lr_schedule.h for the formulas.
#include "harness/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace mlbert::harness {

double LrSchedule::at(std::int64_t update) const {
  const LrScheduleSpec& s = spec_;
  const double end = s.end_learning_rate;
  if (s.style == LrScheduleStyle::reference) {
    const std::int64_t step = update;
    // The TF reference computes the warmup fraction from int32 step counts, in float.
    const std::int64_t warm_step = step - s.start_warmup_step;
    if (s.warmup_steps > 0 && warm_step < s.warmup_steps)
      return base_ * static_cast<double>(warm_step) / static_cast<double>(s.warmup_steps);
    const double done = static_cast<double>(std::min(step, s.decay_steps)) / s.decay_steps;
    return (base_ - end) * std::pow(1.0 - done, s.poly_power) + end;
  }
  const std::int64_t step = update + 1;
  if (step > s.decay_steps) return end;
  const std::int64_t warm_step = step - s.start_warmup_step;
  if (warm_step < s.warmup_steps)
    return base_ * static_cast<double>(warm_step) / static_cast<double>(s.warmup_steps);
  const double progress = std::min(static_cast<double>(step - s.warmup_steps) /
                                       static_cast<double>(s.decay_steps - s.warmup_steps),
                                   1.0);
  return (base_ - end) * std::pow(1.0 - progress, s.poly_power) + end;
}

}  // namespace mlbert::harness
