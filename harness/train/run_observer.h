// The named points of a `mlbert train` run where an observer may act, and the rank's exit. The
// trainer calls these and knows nothing else of tests: the default observer does nothing, and
// the test hooks (test_hooks.h) inject faults and record exits through the same calls.
#pragma once

#include <string_view>

namespace mlbert::harness {

enum class RunPoint {
  init,       // the init phase: the weights are set, the communicators not yet split
  allreduce,  // a timed step's backward: its first gradient bucket's allreduce was just started
  eval,       // an eval: this rank's first eval batch is done, the counts not yet summed
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void reached(RunPoint /*point*/) {}
  // Right before the rank exits, on every path (done, not converged, preflight error, abort,
  // signal, watchdog); never throws.
  virtual void exiting(int /*status*/, std::string_view /*cause*/) {}
};

}  // namespace mlbert::harness
