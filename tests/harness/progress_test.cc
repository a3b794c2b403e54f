// Live progress: the terminal line and the plain lines on a fake clock and a captured sink, the
// redraw throttle, the estimate to the target, and the display choice for terminals and pipes.
#include <catch2/catch.hpp>

#include <string>

#include "harness/train/progress.h"

using mlbert::harness::format_duration;
using mlbert::harness::parse_progress_display;
using mlbert::harness::Progress;
using mlbert::harness::ProgressDisplay;
using mlbert::harness::resolve;

namespace {

struct Harness {
  double now = 100.0;
  std::string out;
  Progress make(ProgressDisplay display, double target = 0.72, std::int64_t max_steps = 1000) {
    return Progress(
        display, target, max_steps, [this](std::string_view s) { out += s; },
        [this] { return now; });
  }
};

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

}  // namespace

TEST_CASE("automatic progress is a rewriting line on a terminal and plain lines on a pipe",
          "[progress]") {
  CHECK(resolve(ProgressDisplay::automatic, true) == ProgressDisplay::terminal);
  CHECK(resolve(ProgressDisplay::automatic, false) == ProgressDisplay::lines);
  CHECK(resolve(ProgressDisplay::terminal, false) == ProgressDisplay::terminal);  // --progress tty
  CHECK(resolve(ProgressDisplay::off, true) == ProgressDisplay::off);
  CHECK(parse_progress_display("tty") == ProgressDisplay::terminal);
  CHECK(parse_progress_display("lines") == ProgressDisplay::lines);
  CHECK_THROWS_WITH(parse_progress_display("fancy"), Catch::Contains("auto, tty, lines or off"));
  // Only rank 0 shows anything.
  Progress other_rank = Progress::for_stderr(ProgressDisplay::terminal, false, 0.72, 10);
  other_rank.run_started();
  other_rank.eval(1, 10, 0.5);
  CHECK(other_rank.status_line().rfind("step 1/10", 0) == 0);
}

TEST_CASE("the terminal line shows step, samples, seq/s, the last eval and the estimate",
          "[progress]") {
  Harness h;
  Progress p = h.make(ProgressDisplay::terminal);
  p.run_started();
  h.now += 2.0;
  p.step(10, 2560);  // 2560 samples in 2 s
  CHECK(h.out ==
        "\r\033[Kstep 10/1000 | 2560 samples | 1280.0 seq/s | eval -- (target 0.720) | "
        "ETA ?");
  h.out.clear();
  p.eval_started();
  CHECK(h.out == "\r\033[K");  // erased before the eval's MLLOG records reach the terminal
  h.now += 1.0;                // the eval takes a second
  p.eval(10, 2560, 0.60);
  h.now += 2.0;
  p.step(20, 5120);
  p.eval_started();
  h.now += 1.0;
  p.eval(20, 5120, 0.66);
  // Two evals rising 0.06 per 2560 samples: 0.06 more to the target is 2560 samples, and the run
  // has taken 6 s for 5120 samples (evals included): 3 s.
  REQUIRE(p.samples_to_target());
  CHECK(*p.samples_to_target() == Approx(2560));
  REQUIRE(p.seconds_to_target());
  CHECK(*p.seconds_to_target() == Approx(3.0));
  CHECK(p.status_line() ==
        "step 20/1000 | 5120 samples | 1280.0 seq/s | eval 0.6600 (target 0.720) | ETA 3s");
}

TEST_CASE("the terminal line is redrawn at most every quarter second, always at an eval",
          "[progress]") {
  Harness h;
  Progress p = h.make(ProgressDisplay::terminal);
  p.run_started();
  for (int i = 1; i <= 100; ++i) {  // 100 steps in 1 s
    h.now += 0.01;
    p.step(i, i * 8);
  }
  // Draws at 0.01 s, then every 0.25 s: 0.26, 0.51, 0.76 (1.01 is not reached).
  CHECK(count(h.out, "\r\033[Kstep ") == 4);
  h.out.clear();
  p.eval_started();
  p.eval(100, 800, 0.5);
  CHECK(count(h.out, "\r\033[Kstep ") == 1);
  CHECK(h.out.find('\n') == std::string::npos);  // one line, rewritten in place
  h.out.clear();
  p.stopped(false, 100, 800);
  CHECK(h.out.back() == '\n');  // the final state stays on screen
}

TEST_CASE("on a pipe there is one plain line per eval and one at the stop, no control bytes",
          "[progress]") {
  Harness h;
  Progress p = h.make(ProgressDisplay::lines, 0.72, 400);
  p.run_started();
  for (int i = 1; i <= 50; ++i) {
    h.now += 0.1;
    p.step(i, i * 32);
  }
  CHECK(h.out.empty());  // steps alone print nothing
  p.eval_started();
  h.now += 0.5;
  p.eval(50, 1600, 0.4512);
  p.step(51, 1632);
  p.eval_started();
  p.eval(51, 1632, 0.7301);
  p.stopped(true, 51, 1632);
  CHECK(h.out ==
        "mlbert train: eval 1 at step 50, 1600 samples: accuracy 0.4512 (target 0.720), 320.0 "
        "seq/s, 5.5 s since run_start, ETA ?\n"
        "mlbert train: eval 2 at step 51, 1632 samples: accuracy 0.7301 (target 0.720), 320.0 "
        "seq/s, 5.5 s since run_start, target reached\n"
        "mlbert train: reached the target at step 51, 1632 samples, eval accuracy 0.7301, 5.5 s "
        "since run_start\n");
  CHECK(h.out.find('\r') == std::string::npos);
  CHECK(h.out.find('\033') == std::string::npos);
}

TEST_CASE("the estimate says when the target lies beyond max_steps or cannot be judged",
          "[progress]") {
  Harness h;
  Progress p = h.make(ProgressDisplay::off, 0.72, 30);
  p.run_started();
  h.now += 1;
  p.eval(10, 100, 0.30);
  CHECK(p.estimate() == "ETA ?");  // one eval: no trend
  h.now += 1;
  p.eval(20, 200, 0.31);  // +0.01 per 100 samples: 4100 more samples, 10 steps (1000) left
  CHECK(p.estimate() == "target beyond max_steps");
  h.now += 1;
  p.eval(25, 250, 0.29);  // falling
  CHECK(p.estimate() == "ETA ?");
  CHECK(h.out.empty());  // off prints nothing
}

TEST_CASE("a line left on the terminal is ended when progress goes away", "[progress]") {
  Harness h;
  {
    Progress p = h.make(ProgressDisplay::terminal);
    p.run_started();
    h.now += 1;
    p.step(1, 8);
  }
  CHECK(h.out.back() == '\n');
}

TEST_CASE("durations read as seconds, minutes or hours", "[progress]") {
  CHECK(format_duration(42.4) == "42s");
  CHECK(format_duration(185) == "3m05s");
  CHECK(format_duration(3720) == "1h02m");
  CHECK(format_duration(-1) == "?");
}
