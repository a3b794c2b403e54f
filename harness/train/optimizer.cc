// LAMB / Adam / AdamW through the backend's multi-tensor ops (see optimizer.h).
#include "harness/train/optimizer.h"

namespace mlbert::harness {

Optimizer::Optimizer(bert::ParameterStore& params, const OptimizerSpec& spec,
                     const LrScheduleSpec& schedule)
    : params_(params),
      spec_(spec),
      schedule_(spec.learning_rate, schedule),
      exp_avg_(params.ops(), bert::DType::f32, params.flat_size()),
      exp_avg_sq_(params.ops(), bert::DType::f32, params.flat_size()) {}

double Optimizer::step(float grad_scale) {
  const double lr = schedule_.at(updates_);
  ++updates_;
  // The compute copy is refreshed by the update itself when it is a separate buffer.
  const bert::Tensor compute = params_.compute();
  const bool separate_compute = compute.data != params_.master().data;
  // The fields LAMB and Adam share.
  auto fill = [&](auto& p) {
    p.master = params_.master();
    p.grad = params_.grad();
    p.exp_avg = exp_avg_.tensor();
    p.exp_avg_sq = exp_avg_sq_.tensor();
    if (separate_compute) p.compute = compute;
    p.segments = params_.segments();
    p.lr = static_cast<float>(lr);
    p.beta1 = static_cast<float>(spec_.beta1);
    p.beta2 = static_cast<float>(spec_.beta2);
    p.eps = static_cast<float>(spec_.epsilon);
    p.weight_decay = static_cast<float>(spec_.weight_decay);
    p.grad_scale = grad_scale;
    p.step = updates_;
    p.bias_correction = true;
  };
  if (spec_.kind == OptimizerKind::lamb) {
    bert::LambParams p;
    fill(p);
    p.trust_ratio_without_decay = false;
    params_.ops().lamb_update(p);
  } else {
    bert::AdamParams p;
    fill(p);
    p.mode = spec_.kind == OptimizerKind::adamw ? bert::AdamMode::adamw : bert::AdamMode::adam_l2;
    params_.ops().adam_update(p);
  }
  return lr;
}

}  // namespace mlbert::harness
