// What ends a run that can no longer finish: a rank that dies, hangs, or is told to stop.
//
// Design choice: four independent paths lead to one `on_abort(cause)` callback (which logs
// `run_stop` with status "aborted" on rank 0 and ends the job non-zero): a watchdog thread that
// fires when no heartbeat arrived for `timeout` seconds (a peer hangs, or died inside a collective
// on another machine and nobody told us); the same thread watching the job's other processes on
// this machine, which notices a peer that was killed or crashed within a second without any
// help from the launcher; a signal thread that turns SIGTERM/SIGINT/SIGHUP (what mpirun and Slurm
// send the survivors when a rank dies) into an orderly abort; and the MPI error handler (errors
// returned as CommunicatorError, caught by the trainer). Termination signals are blocked in every
// thread and waited for by one thread, so no handler runs in an arbitrary context.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mlbert::harness {

struct AbortCause {
  enum class Kind { signal, no_progress, peer_lost };
  Kind kind = Kind::no_progress;
  int signal = 0;  // Kind::signal: which one
  std::string reason;
};

// A process of the same job on this machine. The start time (clock ticks after boot) tells a
// recycled pid apart from the rank's process.
struct PeerProcess {
  int rank = 0;
  long pid = 0;
  std::uint64_t start_time = 0;
};

// Process `pid` (of this machine) as rank `rank`, with its start time read now.
PeerProcess peer_process(int rank, long pid);
// This process as its peers see it.
PeerProcess this_process(int rank);
// Whether `peer` is still running (not ended, not a zombie, not a new process under its pid).
bool peer_running(const PeerProcess& peer);

class RunGuard {
 public:
  // `on_abort` must end the process; it is called at most once per cause thread.
  RunGuard(double timeout_seconds, std::function<void(const AbortCause&)> on_abort);
  ~RunGuard();
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;

  // Call first thing in main (before MPI_Init and before any thread starts): blocks the
  // termination signals so only the guard's signal thread receives them.
  static void block_termination_signals();

  void heartbeat();
  // What this rank does until the next call (a string literal), named when the watchdog fires:
  // the rank stuck on its data loader and the ones waiting for it in a collective differ.
  void doing(const char* activity) { activity_.store(activity); }
  // The watchdog only fires while armed (init and the timed part of the run, evals included).
  void arm(bool armed);
  void set_timeout(double seconds) { timeout_.store(seconds); }
  double timeout_seconds() const { return timeout_.load(); }

  // Watches `peers` (the job's other processes on this machine) until stop_watching_peers():
  // one that ends is a failure, confirmed after kPeerGraceSeconds so that a peer leaving at
  // the very end of a run, just before this rank stops watching, is not mistaken for one.
  void watch_peers(std::vector<PeerProcess> peers);
  void stop_watching_peers();
  static constexpr double kPeerGraceSeconds = 1.0;

 private:
  void watch();
  void wait_for_signals();
  // The first peer that is no longer running, if any (with mutex_ held).
  const PeerProcess* lost_peer() const;

  std::atomic<double> timeout_;
  std::function<void(const AbortCause&)> on_abort_;
  std::atomic<std::int64_t> last_beat_ns_;
  std::atomic<bool> armed_{false};
  std::atomic<const char*> activity_{nullptr};
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::vector<PeerProcess> peers_;  // guarded by mutex_
  std::thread watchdog_;
  std::thread signals_;
};

}  // namespace mlbert::harness
