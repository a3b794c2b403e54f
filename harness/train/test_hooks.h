// Test hooks of `mlbert train`: faults injected at real points of a run, and each rank's own
// record of how it ended. Compiled in, inert unless their environment variable is set.
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
#include <optional>
#include <string>
#include <string_view>

namespace mlbert::harness {

enum class FaultPoint { init, allreduce, eval };
enum class FaultAction { kill, stop };

class TestHooks {
 public:
  // Reads the environment; throws naming MLBERT_FAULT when it is malformed.
  static TestHooks from_environment(int rank);

  // Does the planned fault when this is its point and pass on its rank.
  void fault_point(FaultPoint point);
  // Writes rank_<r>.exit when MLBERT_EXIT_REPORT is set; never throws.
  void report_exit(int status, std::string_view cause) const;

 private:
  struct Fault {
    FaultPoint point = FaultPoint::init;
    FaultAction action = FaultAction::kill;
    int pass = 1;
  };
  int rank_ = 0;
  std::optional<Fault> fault_;  // this rank's
  int passes_ = 0;
  std::filesystem::path report_dir_;
};

}  // namespace mlbert::harness
