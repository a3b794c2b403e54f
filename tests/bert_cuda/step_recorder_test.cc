// Which steps the CUDA backend runs op by op, records as a CUDA graph or replays (host logic of
// bert/cuda/step_recorder.h): a shape is recorded on its second sighting, replayed after, run op by
// op for good when its recording failed, and at most `capacity` recordings are kept.
#include <catch2/catch.hpp>

#include "bert/cuda/step_recorder.h"

namespace {

namespace cuda = mlbert::cuda;
using Action = cuda::RecordingSchedule::Action;

const int kModel = 0;  // the model the shapes belong to

mlbert::bert::StepShape shape_of(int64_t tokens, float loss_scale = 1.0f) {
  mlbert::bert::StepShape s;
  s.owner = &kModel;
  s.tokens = tokens;
  s.sequences = 16;
  s.masked = 1216;
  s.max_seqlen = 512;
  s.dropout = true;
  s.loss_scale = loss_scale;
  return s;
}

void* handle(int i) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(0x1000 + 16 * i));
}

}  // namespace

TEST_CASE("a step shape is run op by op first, recorded the second time, then replayed") {
  cuda::RecordingSchedule schedule;
  void* got = nullptr;
  const auto padded = shape_of(8192);
  CHECK(schedule.next(padded, &got) == Action::run);
  CHECK(schedule.next(padded, &got) == Action::record);
  CHECK(schedule.recorded(padded, handle(1)) == nullptr);
  for (int step = 0; step < 5; ++step) {
    got = nullptr;
    REQUIRE(schedule.next(padded, &got) == Action::replay);
    REQUIRE(got == handle(1));
  }
  // Anything the host hands the ops is part of the shape: another loss scale is another step.
  CHECK(schedule.next(shape_of(8192, 65536.0f), &got) == Action::run);
  CHECK(schedule.next(shape_of(3837), &got) == Action::run);
  CHECK(schedule.size() == 1);
}

TEST_CASE("a shape whose recording failed runs op by op from then on") {
  cuda::RecordingSchedule schedule;
  void* got = nullptr;
  const auto s = shape_of(4096);
  schedule.next(s, &got);
  REQUIRE(schedule.next(s, &got) == Action::record);
  CHECK(schedule.recorded(s, nullptr) == nullptr);
  for (int step = 0; step < 4; ++step) REQUIRE(schedule.next(s, &got) == Action::run);
  CHECK(schedule.size() == 0);
}

TEST_CASE("recordings are bounded: the least recently replayed is handed back to be destroyed") {
  cuda::RecordingSchedule schedule(2);
  void* got = nullptr;
  for (int i = 0; i < 2; ++i) {
    schedule.next(shape_of(100 + i), &got);
    REQUIRE(schedule.next(shape_of(100 + i), &got) == Action::record);
    REQUIRE(schedule.recorded(shape_of(100 + i), handle(i)) == nullptr);
  }
  REQUIRE(schedule.next(shape_of(100), &got) == Action::replay);  // 101 is now the oldest
  schedule.next(shape_of(102), &got);
  REQUIRE(schedule.next(shape_of(102), &got) == Action::record);
  CHECK(schedule.recorded(shape_of(102), handle(2)) == handle(1));
  CHECK(schedule.size() == 2);
  CHECK(schedule.evictions() == 1);
  // The evicted shape starts over: op by op, then recorded again.
  CHECK(schedule.next(shape_of(101), &got) == Action::run);
  CHECK(schedule.next(shape_of(101), &got) == Action::record);
  REQUIRE(schedule.next(shape_of(100), &got) == Action::replay);
  CHECK(got == handle(0));
}
