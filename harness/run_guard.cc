// Watchdog and signal thread of a run (see run_guard.h).
#include "harness/run_guard.h"

#include <pthread.h>
#include <signal.h>

#include <cstring>

namespace mlbert::harness {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// SIGUSR2 only wakes the signal thread up for shutdown.
sigset_t guarded_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR2);
  return set;
}

}  // namespace

void RunGuard::block_termination_signals() {
  const sigset_t set = guarded_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

RunGuard::RunGuard(double timeout_seconds, std::function<void(const std::string&, int)> on_signal,
                   std::function<void(const std::string&)> on_timeout)
    : timeout_(timeout_seconds),
      on_signal_(std::move(on_signal)),
      on_timeout_(std::move(on_timeout)),
      last_beat_ns_(now_ns()) {
  block_termination_signals();  // this thread, and so the two threads created below
  watchdog_ = std::thread([this] { watch(); });
  signals_ = std::thread([this] { wait_for_signals(); });
}

RunGuard::~RunGuard() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  watchdog_.join();
  pthread_kill(signals_.native_handle(), SIGUSR2);
  signals_.join();
}

void RunGuard::heartbeat() {
  last_beat_ns_.store(now_ns(), std::memory_order_relaxed);
}

void RunGuard::arm(bool armed) {
  heartbeat();
  armed_.store(armed);
}

void RunGuard::watch() {
  const auto poll = std::chrono::milliseconds(200);
  std::unique_lock lock(mutex_);
  while (!stop_) {
    stop_cv_.wait_for(lock, poll);
    if (stop_ || !armed_.load()) continue;
    const double idle = static_cast<double>(now_ns() - last_beat_ns_.load()) * 1e-9;
    const double timeout = timeout_.load();
    if (idle > timeout) {
      lock.unlock();
      on_timeout_("no progress for " + std::to_string(static_cast<int>(idle)) +
                  " s (watchdog limit " + std::to_string(static_cast<int>(timeout)) +
                  " s): a rank died or hangs");
      return;  // on_timeout ends the process; never fire twice
    }
  }
}

void RunGuard::wait_for_signals() {
  const sigset_t set = guarded_signals();
  for (;;) {
    int signal = 0;
    if (sigwait(&set, &signal) != 0) continue;
    if (signal == SIGUSR2) {
      std::lock_guard lock(mutex_);
      if (stop_) return;
      continue;
    }
    const char* name = signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "SIGHUP";
    on_signal_(std::string("received ") + name + " (" + strsignal(signal) + ")", signal);
    return;
  }
}

}  // namespace mlbert::harness
