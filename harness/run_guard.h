// What ends a run that can no longer finish: a rank that dies, hangs, or is told to stop.
//
// Design choice: three independent paths lead to one idempotent `abort(reason)` callback (which
// logs `run_stop` with status "aborted" on rank 0 and ends the process non-zero): a watchdog
// thread that fires when no heartbeat arrived for `timeout` seconds (a peer died inside a
// collective and nobody told us), a signal thread that turns SIGTERM/SIGINT/SIGHUP (what mpirun
// and Slurm send the survivors when a rank dies) into an orderly abort, and the MPI error handler
// (errors returned as CommunicatorError, caught by the trainer). Termination signals are blocked
// in every thread and waited for by one thread, so no handler runs in an arbitrary context.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace mlbert::harness {

class RunGuard {
 public:
  // `on_signal(reason, signal)` and `on_timeout(reason)` must end the process.
  RunGuard(double timeout_seconds, std::function<void(const std::string&, int)> on_signal,
           std::function<void(const std::string&)> on_timeout);
  ~RunGuard();
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;

  // Call first thing in main (before MPI_Init and before any thread starts): blocks the
  // termination signals so only the guard's signal thread receives them.
  static void block_termination_signals();

  void heartbeat();
  // The watchdog only fires while armed (the timed part of the run, evals included).
  void arm(bool armed);
  void set_timeout(double seconds) { timeout_.store(seconds); }
  double timeout_seconds() const { return timeout_.load(); }

 private:
  void watch();
  void wait_for_signals();

  std::atomic<double> timeout_;
  std::function<void(const std::string&, int)> on_signal_;
  std::function<void(const std::string&)> on_timeout_;
  std::atomic<std::int64_t> last_beat_ns_;
  std::atomic<bool> armed_{false};
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread watchdog_;
  std::thread signals_;
};

}  // namespace mlbert::harness
