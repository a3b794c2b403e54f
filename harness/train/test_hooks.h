// Test hooks of `mlbert train`: faults injected at the named points of a run (run_observer.h), and
// each rank's own record of how it ended. Compiled in, inert unless their environment variable is
// set.
//
//   MLBERT_FAULT=<rank>:<point>:<action>[:<pass>]
//     The <pass>-th time (default 1) rank <rank> reaches fault point <point>, it does <action>.
//     Points: `init` (init phase, after the weights, before the communicators are split),
//     `allreduce` (a step's backward, right after its first gradient bucket's allreduce was
//     started, so the peers are inside that collective), `eval` (after this rank's first eval
//     batch, before the counts are summed over ranks). Actions: `kill` (SIGKILL itself: a crashed
//     rank), `stop` (SIGSTOP itself: a stalled rank).
//   MLBERT_EXIT_REPORT=<dir>
//     Every rank writes <dir>/rank_<r>.exit, "<exit status> <unix time> <cause>", right before it
//     exits (on every path: done, not converged, preflight error, abort, signal, watchdog), and
//     <dir>/rank_<r>.fault, "<unix time> <point> <action>", right before it injects a fault. Tests
//     read them to see each rank's own exit rather than what the launcher makes of it.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "harness/train/run_observer.h"

namespace mlbert::harness {

enum class FaultAction { kill, stop };

class TestHooks final : public RunObserver {
 public:
  // The observer of rank `rank`: the test hooks when MLBERT_FAULT or MLBERT_EXIT_REPORT is set,
  // else the one that does nothing. Throws naming MLBERT_FAULT when it is malformed.
  static std::unique_ptr<RunObserver> from_environment(int rank);

  // Does the planned fault when this is its point and pass on its rank.
  void reached(RunPoint point) override;
  // Writes rank_<r>.exit when MLBERT_EXIT_REPORT is set; never throws.
  void exiting(int status, std::string_view cause) override;

 private:
  struct Fault {
    RunPoint point = RunPoint::init;
    FaultAction action = FaultAction::kill;
    int pass = 1;
  };
  int rank_ = 0;
  std::optional<Fault> fault_;  // this rank's
  int passes_ = 0;
  std::filesystem::path report_dir_;
};

}  // namespace mlbert::harness
