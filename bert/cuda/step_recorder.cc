// Recorded training steps: the schedule of recordings and their capture and replay (see
// step_recorder.h).
#include "bert/cuda/step_recorder.h"

#include <cstdio>
#include <stdexcept>

#include "bert/cuda/cuda_check.h"

namespace mlbert::cuda {

RecordingSchedule::Action RecordingSchedule::next(const bert::StepShape& shape, void** recording) {
  if (void** found = recordings_.find(shape)) {
    *recording = *found;
    return Action::replay;
  }
  int& seen = seen_[shape];
  if (seen < 0) return Action::run;  // its recording failed once
  return ++seen >= 2 ? Action::record : Action::run;
}

void* RecordingSchedule::recorded(const bert::StepShape& shape, void* recording) {
  if (recording == nullptr) {
    seen_[shape] = -1;
    return nullptr;
  }
  seen_.erase(shape);
  void* evicted = nullptr;
  recordings_.insert(shape, recording, [&](void*& old) { evicted = old; });
  return evicted;
}

namespace {
void destroy_graph(void* exec) {
  if (exec != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
}
}  // namespace

StepRecorder::StepRecorder() {
  CUDA_CHECK(cudaMalloc(&device_key_, sizeof(bert::DropoutKeyWords)));
}

StepRecorder::~StepRecorder() {
  schedule_.for_each_recording([](void* exec) { destroy_graph(exec); });
  if (device_key_) (void)cudaFree(device_key_);
}

bool StepRecorder::begin(const bert::StepShape& shape, uint64_t seed, uint32_t step,
                         cudaStream_t stream) {
  if (in_step_) throw std::logic_error("StepRecorder: a step began inside another");
  // In stream order before the step's ops or its replay; from pageable memory the call returns
  // once the 16 bytes are staged, so `key` may go out of scope.
  const bert::DropoutKeyWords key{seed, step, 0};
  CUDA_CHECK(cudaMemcpyAsync(device_key_, &key, sizeof(key), cudaMemcpyHostToDevice, stream));
  void* recording = nullptr;
  switch (schedule_.next(shape, &recording)) {
    case RecordingSchedule::Action::replay:
      CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(recording), stream));
      ++replays_;
      return true;
    case RecordingSchedule::Action::record:
      // Relaxed: the ops make host calls that the stricter modes may refuse while a stream is
      // captured (the attention launcher sets kernel attributes); nothing in a step allocates or
      // synchronizes, its shape's first run having sized the workspace and planned the GEMMs.
      CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
      capturing_ = true;
      break;
    case RecordingSchedule::Action::run:
      break;
  }
  in_step_ = true;
  current_ = shape;
  return false;
}

void StepRecorder::end(bool completed, cudaStream_t stream) {
  in_step_ = false;
  if (!capturing_) return;
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t captured = cudaStreamEndCapture(stream, &graph);
  cudaGraphExec_t exec = nullptr;
  if (completed && captured == cudaSuccess) {
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    if (made != cudaSuccess) exec = nullptr;
  }
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  if (completed && exec == nullptr) {
    (void)cudaGetLastError();
    std::fprintf(stderr,
                 "mlbert cuda: a step of %lld tokens could not be recorded as a CUDA graph; its "
                 "shape runs op by op from now on\n",
                 static_cast<long long>(current_.tokens));
  }
  destroy_graph(schedule_.recorded(current_, exec));
  if (exec == nullptr) return;
  ++recordings_;
  // The capture only recorded the step: run it now.
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
}

bert::DropoutMask StepRecorder::kernel_mask(const bert::DropoutMask& mask) const {
  bert::DropoutMask m = mask;
  if (in_step_ && m.enabled) m.device_key = device_key_;
  return m;
}

std::string StepRecorder::report() const {
  return "CUDA graphs: " + std::to_string(recordings_) + " steps recorded, " +
         std::to_string(replays_) + " replayed";
}

}  // namespace mlbert::cuda
