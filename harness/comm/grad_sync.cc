// Bucketed gradient allreduce with the three clipping modes (see grad_sync.h).
#include "harness/comm/grad_sync.h"

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mlbert::harness {

std::vector<Bucket> make_buckets(std::span<const bert::ParameterInfo> infos, std::size_t flat_size,
                                 std::size_t bucket_elements) {
  if (bucket_elements == 0) throw std::invalid_argument("gradient buckets must hold >= 1 element");
  std::vector<Bucket> buckets;
  std::size_t begin = 0, last_end = 0;
  for (const auto& info : infos) {
    const std::size_t end = info.offset + info.numel;
    if (info.offset < last_end || end > flat_size)
      throw std::invalid_argument("parameter " + info.name + " is not in flat order");
    last_end = end;
    if (end - begin >= bucket_elements) {
      buckets.push_back(Bucket{begin, end});
      begin = end;
    }
  }
  // Tensors left over form the last bucket; a trailing alignment gap joins the previous one.
  if (last_end > begin || buckets.empty())
    buckets.push_back(Bucket{begin, flat_size});
  else
    buckets.back().end = flat_size;
  return buckets;
}

std::size_t bucket_elements_for(double bucket_mb) {
  const double elements = bucket_mb * 1024.0 * 1024.0 / sizeof(float);
  return elements < 1 ? 1 : static_cast<std::size_t>(elements);
}

GradientSync::GradientSync(bert::Ops& ops, Communicator& comm, bert::Tensor grad,
                           std::vector<Bucket> buckets, ClippingMode mode, double max_norm)
    : ops_(ops),
      comm_(comm),
      grad_(grad),
      buckets_(std::move(buckets)),
      mode_(mode),
      max_norm_(max_norm),
      norm_total_(ops, bert::DType::f32, 2),
      bucket_totals_(ops, bert::DType::f32, 2 * std::max<std::size_t>(buckets_.size(), 1)) {
  if (grad_.dtype != bert::DType::f32)
    throw std::invalid_argument("gradient sync: the flat gradient buffer must be f32");
  std::size_t expected = 0;
  for (const Bucket& b : buckets_) {
    if (b.begin != expected || b.end <= b.begin)
      throw std::invalid_argument("gradient sync: buckets must tile the buffer front to back");
    expected = b.end;
  }
  if (expected != grad_.numel)
    throw std::invalid_argument("gradient sync: buckets cover " + std::to_string(expected) +
                                " of " + std::to_string(grad_.numel) + " gradient elements");
}

void GradientSync::begin(double loss_scale) {
  if (!pending_.empty())
    throw std::logic_error("gradient sync: begin() while buckets are in flight");
  loss_scale_ = loss_scale;
  armed_ = true;
  next_bucket_ = 0;
  local_norms_.assign(buckets_.size(), 0.0);
  local_overflow_ = false;
}

void GradientSync::on_grad_ready(std::size_t ready_elements) {
  if (!armed_) return;  // an earlier micro-batch of gradient accumulation: nothing to send yet
  const bool none_sent = next_bucket_ == 0;
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].end <= ready_elements)
    launch(next_bucket_++);
  if (none_sent && next_bucket_ > 0 && first_launch_) first_launch_();
}

void GradientSync::norm_into(std::size_t begin, std::size_t end, bert::Tensor total) {
  const bert::TensorSegment segment{begin, end - begin, true};
  bert::L2NormParams p;
  p.buffer = grad_;
  p.segments = std::span<const bert::TensorSegment>(&segment, 1);
  p.total = total;
  ops_.l2_norm(p);
}

std::pair<double, bool> GradientSync::norm_of(std::size_t begin, std::size_t end) {
  norm_into(begin, end, norm_total_.tensor());
  float total[2];
  ops_.copy_to_host(total, norm_total_.tensor(), sizeof(total));
  const bool non_finite = total[1] != 0.0f || !std::isfinite(total[0]);
  return {static_cast<double>(total[0]), non_finite};
}

void GradientSync::launch(std::size_t index) {
  const Bucket& bucket = buckets_[index];
  bert::Tensor slice = grad_.slice(bucket.begin, bucket.size());
  if (mode_ == ClippingMode::bucket_before_allreduce) {
    // The bucket's norm stays on the backend: the paper's clip factor (bert/bucket_clip.h:
    // min(1, tau / norm) of the true gradients' norm, over the world; NaN for a bucket that is not
    // finite, which poisons every rank's sum) is applied where the norm is, so a device backend
    // clips and sends the bucket without a round trip to the host while backward goes on.
    // finish() reads the step's norms once.
    bert::Tensor total = bucket_totals_.tensor().slice(2 * index, 2);
    norm_into(bucket.begin, bucket.end, total);
    bert::BucketClipParams clip;
    clip.x = slice;
    clip.total = total;
    clip.loss_scale = loss_scale_;
    clip.num_buckets = buckets_.size();
    clip.world = comm_.size();
    ops_.bucket_clip(clip);
  }
  // On CUDA the ops above and the backward kernels run on the backend's stream; the NCCL
  // communicator orders its stream after it before reducing.
  pending_.push_back(comm_.allreduce_async(slice.data, slice.numel, DataType::f32, ReduceOp::sum));
}

SyncResult GradientSync::finish() {
  if (!armed_) throw std::logic_error("gradient sync: finish() without begin()");
  while (next_bucket_ < buckets_.size()) launch(next_bucket_++);
  const auto wait_start = std::chrono::steady_clock::now();
  for (auto& p : pending_) p->wait();
  exposed_wait_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  pending_.clear();
  armed_ = false;
  if (mode_ == ClippingMode::bucket_before_allreduce && !buckets_.empty()) {
    std::vector<float> totals(2 * buckets_.size());
    ops_.copy_to_host(totals.data(), bucket_totals_.tensor(), totals.size() * sizeof(float));
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      local_norms_[i] = static_cast<double>(totals[2 * i]) / loss_scale_;
      if (totals[2 * i + 1] != 0.0f || !std::isfinite(totals[2 * i])) local_overflow_ = true;
    }
  }

  SyncResult result;
  const auto [summed_norm, non_finite] = norm_of(0, grad_.numel);
  const double world = comm_.size();
  // What the buffer holds relative to the averaged, unscaled gradient.
  const double buffer_scale =
      mode_ == ClippingMode::bucket_before_allreduce ? loss_scale_ : loss_scale_ * world;
  result.overflow = non_finite || local_overflow_;
  result.global_norm = summed_norm / buffer_scale;
  if (mode_ == ClippingMode::after_allreduce && !result.overflow &&
      result.global_norm > max_norm_) {
    result.clip_factor = max_norm_ / result.global_norm;
  }
  result.grad_scale = static_cast<float>(result.clip_factor / buffer_scale);
  return result;
}

bool LossScaler::update(bool overflow) {
  if (overflow) {
    // An fp32 run has no loss scale to lower: it still skips the step.
    if (spec_.dynamic) scale_ = std::max(scale_ / 2, 1.0);
    clean_steps_ = 0;
    return true;
  }
  if (spec_.dynamic && ++clean_steps_ >= spec_.growth_interval) {
    scale_ *= 2;
    clean_steps_ = 0;
  }
  return false;
}

}  // namespace mlbert::harness
