// Recorded training steps for the CUDA backend (CudaOpsOptions::cuda_graphs): the ops of one
// Model::forward_backward are captured into a CUDA graph and replayed for later steps of the same
// shape, one launch instead of ~900.
//
// Design choice: a shape is recorded the second time it is seen, never the first, so that
// everything a first step sizes or plans (the op workspace, cuBLASLt plans and their timing) is
// done outside any capture; the dropout seed and step are the only per-step values the recorded
// kernels read, from device memory (bert::DropoutMask::device_key, written before each step), so
// a replay draws the same masks as running the ops one by one.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "bert/cuda/gemm.h"
#include "bert/ops.h"
#include "bert/philox.h"

namespace mlbert::cuda {

// Set once bert/cuda/attention* read AttentionParams::dropout through bert::resolve_dropout_key;
// until then a recorded step with attention dropout is refused (it would replay one step's mask).
inline constexpr bool kAttentionReadsDeviceDropoutKey = false;

// Recordings kept (least recently used out first): one per step shape, and a fixed-batch bench or
// a padded run has one or two.
constexpr size_t kRecordedStepCapacity = 16;

// What to do with a step of a given shape: run it op by op (its first sighting, or a shape whose
// recording failed), record it (its second), or replay its recording (an opaque handle: the graph).
// At most `capacity` recordings are kept, least recently used out first. Host logic, unit-tested
// without a GPU.
class RecordingSchedule {
 public:
  enum class Action { run, record, replay };
  explicit RecordingSchedule(size_t capacity = kRecordedStepCapacity) : recordings_(capacity) {}
  // `recording` receives the handle to replay (Action::replay only).
  Action next(const bert::StepShape& shape, void** recording);
  // After Action::record: the recording made (null when it failed: the shape then runs op by op
  // from now on). Returns the handle of a recording evicted to make room (to destroy), or null.
  void* recorded(const bert::StepShape& shape, void* recording);
  size_t size() const { return recordings_.size(); }
  size_t evictions() const { return recordings_.evictions(); }
  template <typename F>
  void for_each_recording(F f) {
    recordings_.for_each(f);
  }

 private:
  LruMap<bert::StepShape, void*> recordings_;
  std::map<bert::StepShape, int> seen_;  // sightings without a recording; -1: recording failed
};

class StepRecorder {
 public:
  StepRecorder();
  ~StepRecorder();
  StepRecorder(const StepRecorder&) = delete;
  StepRecorder& operator=(const StepRecorder&) = delete;

  // Ops::begin_step / end_step on `stream`.
  bool begin(const bert::StepShape& shape, uint64_t seed, uint32_t step, cudaStream_t stream);
  void end(bool completed, cudaStream_t stream);

  bool capturing() const { return capturing_; }
  // The mask a kernel gets inside a step: seed and step from the device key.
  bert::DropoutMask kernel_mask(const bert::DropoutMask& mask) const;
  // "CUDA graphs: 2 steps recorded, 38 replayed".
  std::string report() const;

 private:
  RecordingSchedule schedule_;
  bert::DropoutKeyWords* device_key_ = nullptr;
  bert::StepShape current_;
  bool in_step_ = false, capturing_ = false;
  size_t recordings_ = 0, replays_ = 0;
};

}  // namespace mlbert::cuda
