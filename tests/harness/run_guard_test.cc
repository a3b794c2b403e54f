// The run guard: a watched peer process that ends is a failure within about a second (after the
// grace period, never before); a stopped one is not, the watchdog catches what stops beating; a
// peer leaving after the guard stopped watching is no failure; a recycled pid (another start
// time) is not the peer.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "harness/train/run_guard.h"

using mlbert::harness::AbortCause;
using mlbert::harness::PeerProcess;
using mlbert::harness::RunGuard;
using Clock = std::chrono::steady_clock;

namespace {

// What the guard reported, and when.
struct Reported {
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<AbortCause> cause;
  Clock::time_point at;
  void set(const AbortCause& c) {
    std::lock_guard lock(mutex);
    cause = c;
    at = Clock::now();
    changed.notify_all();
  }
  bool has() {
    std::lock_guard lock(mutex);
    return cause.has_value();
  }
  bool wait(double seconds) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::duration<double>(seconds),
                            [&] { return cause.has_value(); });
  }
};

// A child process that waits to be killed.
pid_t sleeping_child() {
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  return child;
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

TEST_CASE("a watched peer that is killed is reported after the grace period and named",
          "[run_guard]") {
  const pid_t child = sleeping_child();
  Reported reported;
  RunGuard guard(1000, [&](const AbortCause& c) { reported.set(c); });
  const PeerProcess peer = mlbert::harness::peer_process(3, child);
  CHECK_FALSE(mlbert::harness::peer_running(PeerProcess{3, child, peer.start_time + 1}));
  REQUIRE(mlbert::harness::peer_running(peer));
  guard.watch_peers({peer});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK_FALSE(reported.has());
  const auto killed = Clock::now();
  ::kill(child, SIGKILL);  // left a zombie (not reaped): it still counts as ended
  REQUIRE(reported.wait(5));
  const double after = seconds_between(killed, reported.at);
  CHECK(after >= RunGuard::kPeerGraceSeconds);
  CHECK(after < RunGuard::kPeerGraceSeconds + 1.0);
  CHECK(reported.cause->kind == AbortCause::Kind::peer_lost);
  CHECK_THAT(reported.cause->reason,
             Catch::Contains("rank 3 (pid " + std::to_string(child) + " on this machine)"));
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("a stopped peer is no failure but the watchdog ends a run that stops beating",
          "[run_guard]") {
  const pid_t child = sleeping_child();
  Reported reported;
  RunGuard guard(1.5, [&](const AbortCause& c) { reported.set(c); });
  const PeerProcess peer = mlbert::harness::peer_process(1, child);
  guard.watch_peers({peer});
  ::kill(child, SIGSTOP);
  guard.arm(true);
  const auto armed = Clock::now();
  REQUIRE(reported.wait(5));
  CHECK(reported.cause->kind == AbortCause::Kind::no_progress);
  CHECK_THAT(reported.cause->reason, Catch::Contains("no progress for 1 s"));
  CHECK(seconds_between(armed, reported.at) >= 1.5);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("a peer leaving after the guard stopped watching is no failure", "[run_guard]") {
  const pid_t child = sleeping_child();
  Reported reported;
  RunGuard guard(1000, [&](const AbortCause& c) { reported.set(c); });
  const PeerProcess peer = mlbert::harness::peer_process(1, child);
  guard.watch_peers({peer});
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // inside the grace period
  guard.stop_watching_peers();
  CHECK_FALSE(reported.wait(RunGuard::kPeerGraceSeconds + 1.0));
}
