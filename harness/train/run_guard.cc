// Watchdog, peer watch and signal thread of a run (see run_guard.h).
#include "harness/train/run_guard.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <sstream>

#include "common/atomic_file.h"

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

// State and start time of `pid` from /proc/<pid>/stat, or nullopt when there is no such process.
std::optional<std::pair<char, std::uint64_t>> process_state(long pid) {
  const std::string text = files::read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last ')'.
  const auto paren = text.rfind(')');
  if (text.empty() || paren == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(paren + 1));
  char state = 0;
  fields >> state;
  std::string field;
  for (int k = 4; k <= 21; ++k) fields >> field;  // ppid .. itrealvalue
  std::uint64_t start_time = 0;
  if (!(fields >> start_time)) return std::nullopt;
  return std::make_pair(state, start_time);
}

}  // namespace

PeerProcess peer_process(int rank, long pid) {
  PeerProcess process;
  process.rank = rank;
  process.pid = pid;
  if (const auto state = process_state(pid)) process.start_time = state->second;
  return process;
}

PeerProcess this_process(int rank) {
  return peer_process(rank, static_cast<long>(::getpid()));
}

bool peer_running(const PeerProcess& peer) {
  const auto state = process_state(peer.pid);
  return state && state->second == peer.start_time && state->first != 'Z' && state->first != 'X';
}

void RunGuard::block_termination_signals() {
  const sigset_t set = guarded_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

RunGuard::RunGuard(double timeout_seconds, std::function<void(const AbortCause&)> on_abort)
    : timeout_(timeout_seconds), on_abort_(std::move(on_abort)), last_beat_ns_(now_ns()) {
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

void RunGuard::watch_peers(std::vector<PeerProcess> peers) {
  std::lock_guard lock(mutex_);
  peers_ = std::move(peers);
}

void RunGuard::stop_watching_peers() {
  std::lock_guard lock(mutex_);
  peers_.clear();
}

const PeerProcess* RunGuard::lost_peer() const {
  for (const auto& peer : peers_)
    if (!peer_running(peer)) return &peer;
  return nullptr;
}

void RunGuard::watch() {
  const auto poll = std::chrono::milliseconds(200);
  std::optional<std::int64_t> peer_lost_since;  // ns
  std::unique_lock lock(mutex_);
  while (!stop_) {
    stop_cv_.wait_for(lock, poll);
    if (stop_) break;
    if (const PeerProcess* peer = lost_peer()) {
      if (!peer_lost_since) peer_lost_since = now_ns();
      if (static_cast<double>(now_ns() - *peer_lost_since) * 1e-9 >= kPeerGraceSeconds) {
        AbortCause cause;
        cause.kind = AbortCause::Kind::peer_lost;
        cause.reason = "rank " + std::to_string(peer->rank) + " (pid " + std::to_string(peer->pid) +
                       " on this machine) has ended: killed or crashed";
        lock.unlock();
        on_abort_(cause);
        return;  // on_abort ends the process; never fire twice
      }
    } else {
      peer_lost_since.reset();
    }
    if (!armed_.load()) continue;
    const double idle = static_cast<double>(now_ns() - last_beat_ns_.load()) * 1e-9;
    const double timeout = timeout_.load();
    if (idle > timeout) {
      AbortCause cause;
      cause.kind = AbortCause::Kind::no_progress;
      const char* activity = activity_.load();
      cause.reason = "no progress for " + std::to_string(static_cast<int>(idle)) + " s" +
                     (activity ? std::string(" ") + activity : std::string()) +
                     ", watchdog limit " + std::to_string(static_cast<int>(timeout)) +
                     " s: a rank died or hangs";
      lock.unlock();
      on_abort_(cause);
      return;
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
    AbortCause cause;
    cause.kind = AbortCause::Kind::signal;
    cause.signal = signal;
    cause.reason = std::string("received ") + name + " (" + strsignal(signal) + ")";
    on_abort_(cause);
    return;
  }
}

}  // namespace mlbert::harness
