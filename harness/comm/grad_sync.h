// Gradient synchronization: buckets of the flat gradient buffer are allreduced while backward is
// still running, with the clipping mode of the run.
//
// Design choice: a bucket is a slice [begin, end) of the flat gradient buffer (parameters are laid
// out in the order backward finishes them, so buckets complete front to back) cut at tensor
// boundaries once it holds at least bucket_mb; the model's on_grad_ready(n) callback launches
// every bucket that ends at or before n at once. Averaging over ranks, unscaling the fp16 loss
// scale and after-allreduce clipping are folded into one `grad_scale` the optimizer applies while
// it reads the gradient, so they cost no extra pass over the buffer; only the paper's
// bucket-before-allreduce clipping scales a bucket before it is sent (its factor is per rank).
//
//   after-allreduce (closed):   g = sum_r g_r / W;  g *= max_norm / max(||g||, max_norm)
//   bucket-before-allreduce:    on rank r, bucket b: n = ||g_rb||; g_rb *= min(1, tau / n) / W
//                               with tau = 1 / sqrt(number of buckets); then allreduce (sum)
//   none:                       g = sum_r g_r / W
// Any inf/nan (an fp16 overflow) makes the step an overflow: the optimizer skips it. In
// bucket-before-allreduce a bucket whose local norm is not finite is poisoned with NaN before it
// is sent, so every rank sees the overflow after the allreduce.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "bert/ops.h"
#include "bert/parameters.h"
#include "harness/comm/communicator.h"
#include "harness/config/system_config.h"

namespace mlbert::harness {

struct Bucket {
  std::size_t begin = 0;  // element range of the flat gradient buffer
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
  friend bool operator==(const Bucket&, const Bucket&) = default;
};

// Buckets over the tensors in flat order: each closes at the end of the first tensor that brings
// it to >= bucket_elements; the last one ends at flat_size (alignment gaps included).
std::vector<Bucket> make_buckets(std::span<const bert::ParameterInfo> infos, std::size_t flat_size,
                                 std::size_t bucket_elements);

// bucket_mb (MiB) of fp32 gradients in elements.
std::size_t bucket_elements_for(double bucket_mb);

struct SyncResult {
  bool overflow = false;   // inf/nan somewhere: skip this step
  double global_norm = 0;  // L2 norm of the averaged, unscaled gradient the optimizer sees
                           // before after-allreduce clipping (after bucket clipping)
  double clip_factor = 1;  // after-allreduce clipping factor applied (1 = not clipped)
  float grad_scale = 1;    // what the optimizer multiplies every gradient element by
};

class GradientSync {
 public:
  // `grad` is the flat f32 gradient buffer on `ops`'s memory; `comm` reduces it (MPI on host
  // memory, NCCL on device memory).
  GradientSync(bert::Ops& ops, Communicator& comm, bert::Tensor grad, std::vector<Bucket> buckets,
               ClippingMode mode, double max_norm);

  // Arms the sync for the last micro-batch of a step; `loss_scale` is the factor the model's loss
  // was multiplied by (fp16 loss scale; gradients carry it).
  void begin(double loss_scale);
  // The model's callback: launches every bucket complete within [0, ready_elements).
  void on_grad_ready(std::size_t ready_elements);
  // Called when on_grad_ready starts a step's first allreduce, so from then on the peers are
  // inside that collective while backward goes on; nothing is called by default.
  void on_first_launch(std::function<void()> listener) { first_launch_ = std::move(listener); }
  // Launches what is left, waits for every bucket, checks for overflow, and computes the
  // optimizer's grad_scale.
  SyncResult finish();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Buckets of the current step whose allreduce has been started.
  std::size_t launched_buckets() const { return armed_ ? next_bucket_ : 0; }
  // Local norms of the buckets as sent (bucket-before-allreduce; for tests and logs).
  const std::vector<double>& local_bucket_norms() const { return local_norms_; }
  // Seconds the last finish() spent waiting for communication not hidden behind backward.
  double exposed_wait_seconds() const { return exposed_wait_; }

 private:
  void launch(std::size_t bucket);
  // l2_norm's [norm, inf/nan flag] of elements [begin, end) of the gradient buffer into `total`.
  void norm_into(std::size_t begin, std::size_t end, bert::Tensor total);
  // The same, read back: the norm and whether it is not finite.
  std::pair<double, bool> norm_of(std::size_t begin, std::size_t end);

  bert::Ops& ops_;
  Communicator& comm_;
  bert::Tensor grad_;
  std::vector<Bucket> buckets_;
  ClippingMode mode_;
  double max_norm_;
  double loss_scale_ = 1;
  bool armed_ = false;
  std::size_t next_bucket_ = 0;
  std::function<void()> first_launch_;
  std::vector<std::unique_ptr<PendingCollective>> pending_;
  std::vector<double> local_norms_;
  bool local_overflow_ = false;
  double exposed_wait_ = 0;
  bert::Buffer norm_total_;     // f32 [2] on the backend
  bert::Buffer bucket_totals_;  // f32 [2 x buckets]: each bucket's norm pair this step
};

// Dynamic loss scaling for fp16: halve on overflow, double after `growth_interval` clean steps.
class LossScaler {
 public:
  explicit LossScaler(const LossScaleSpec& spec) : scale_(spec.initial), spec_(spec) {}
  double scale() const { return scale_; }
  // Records a step's outcome; returns true when the step must be skipped.
  bool update(bool overflow);

 private:
  double scale_;
  LossScaleSpec spec_;
  std::int64_t clean_steps_ = 0;
};

}  // namespace mlbert::harness
