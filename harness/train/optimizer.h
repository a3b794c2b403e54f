// The optimizer step of a run: LAMB (MLPerf reference semantics), Adam or AdamW over the flat
// master buffer, through the backend's multi-tensor primitives, at the rate of the LR schedule.
//
// Design choice: the optimizer reads gradients through one `grad_scale` (averaging over ranks,
// fp16 unscaling and global-norm clipping folded together by GradientSync), and counts only the
// updates it applies: a step skipped for an fp16 overflow advances neither the LR schedule nor
// the bias correction, as in NVIDIA's and the reference's implementations.
//   LAMB:  bias-corrected moments, u = mhat / (sqrt(vhat) + eps) + wd * p, trust ratio
//          ||p|| / ||u|| per tensor; biases and LayerNorm get neither decay nor trust ratio.
//   Adam:  L2 decay added to the gradient; AdamW: decoupled decay; both bias-corrected.
#pragma once

#include <cstdint>

#include "bert/ops.h"
#include "bert/parameters.h"
#include "harness/train/lr_schedule.h"
#include "harness/config/system_config.h"

namespace mlbert::harness {

class Optimizer {
 public:
  Optimizer(bert::ParameterStore& params, const OptimizerSpec& spec,
            const LrScheduleSpec& schedule);

  // Applies the next update with gradients multiplied by `grad_scale`; returns its learning rate.
  // Leaves the gradient buffer undefined (LAMB uses it as scratch).
  double step(float grad_scale);

  std::int64_t updates_applied() const { return updates_; }
  const LrSchedule& schedule() const { return schedule_; }
  const OptimizerSpec& spec() const { return spec_; }
  // Optimizer state, for tests and checkpoints (flat, like the master buffer).
  bert::Tensor exp_avg() const { return exp_avg_.tensor(); }
  bert::Tensor exp_avg_sq() const { return exp_avg_sq_.tensor(); }

 private:
  bert::ParameterStore& params_;
  OptimizerSpec spec_;
  LrSchedule schedule_;
  bert::Buffer exp_avg_, exp_avg_sq_;
  std::int64_t updates_ = 0;
};

}  // namespace mlbert::harness
