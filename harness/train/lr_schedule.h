// Learning-rate schedules of MLPerf BERT: linear warmup (optionally offset by start_warmup_step),
// then polynomial decay to an end learning rate.
//
// Design choice: `update` counts optimizer updates from 0 (the first update is update 0), and each
// style maps it to its own step convention, so the trainer never has to know which one it runs:
//   reference (MLPerf TF, optimization.py): global_step = update;
//     lr = (lr0 - end) * (1 - min(step, decay_steps) / decay_steps)^power + end, and while
//     step - start_warmup_step < warmup_steps: lr = lr0 * (step - start_warmup_step) /
//     warmup_steps.
//   nvidia (NVIDIA/Samsung PyTorch LinearWarmupPolyDecayScheduler): step = update + 1;
//     past decay_steps: end; in warmup (step - start < warmup): lr0 * (step - start) / warmup;
//     else progress = min((step - warmup) / (decay_steps - warmup), 1),
//     lr = (lr0 - end) * (1 - progress)^power + end.
#pragma once

#include <cstdint>

#include "harness/config/system_config.h"

namespace mlbert::harness {

class LrSchedule {
 public:
  LrSchedule(double base_learning_rate, const LrScheduleSpec& spec)
      : base_(base_learning_rate), spec_(spec) {}

  // The learning rate of optimizer update number `update` (0-based).
  double at(std::int64_t update) const;

  double base() const { return base_; }
  const LrScheduleSpec& spec() const { return spec_; }

 private:
  double base_;
  LrScheduleSpec spec_;
};

}  // namespace mlbert::harness
