// Live progress of a training run for the person watching it: on a terminal one line that
// rewrites itself (step, samples, seq/s, the last eval accuracy, the estimated time to the
// target); elsewhere one plain line per eval and one at the stop.
//
// Design choice: progress goes to rank 0's stderr, never to stdout and never to the result log.
// stdout carries the MLLOG lines (`mlbert train > log` must stay a parseable log, and a line
// without a newline would glue itself to the next record); stderr is unbuffered, is where a
// person looks, and is what mpirun forwards from rank 0 to the terminal. Under mpirun a rank's
// stderr is a pipe, so "automatic" chooses plain lines there; `--progress tty` (what `mlbert demo`
// passes when its own stderr is a terminal) asks for the rewriting line through the pipe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace mlbert::harness {

enum class ProgressDisplay {
  automatic,  // terminal when stderr is a terminal, else lines
  terminal,   // one rewriting line ("\r" + erase), redrawn at most every kRedrawSeconds
  lines,      // one line per eval and one at the stop
  off,
};
ProgressDisplay parse_progress_display(std::string_view text);  // auto|tty|lines|off; throws
std::string_view to_string(ProgressDisplay display);
// `automatic` resolved for a stream that is (or is not) a terminal; other values unchanged.
ProgressDisplay resolve(ProgressDisplay display, bool stream_is_terminal);

class Progress {
 public:
  using Sink = std::function<void(std::string_view)>;  // writes the bytes, unbuffered
  using Clock = std::function<double()>;               // monotonic seconds

  static constexpr double kRedrawSeconds = 0.25;

  // `display` must be resolved (terminal, lines or off). `target`: the run's accuracy target;
  // `max_steps`: the run's step limit (the estimate says when the target lies beyond it).
  Progress(ProgressDisplay display, double target, std::int64_t max_steps, Sink sink, Clock clock);
  Progress(const Progress&) = delete;  // for_stderr returns a prvalue: no copy, no move
  Progress& operator=(const Progress&) = delete;
  // Ends a terminal line still on screen (a run that stops by an exception), so that what is
  // printed next starts on a line of its own.
  ~Progress();

  // Rank 0's stderr, resolved with isatty(2), and the steady clock; `off` on other ranks.
  static Progress for_stderr(ProgressDisplay display, bool is_rank_zero, double target,
                             std::int64_t max_steps);

  void run_started();
  void step(std::int64_t step, std::int64_t samples);
  // Before the eval's MLLOG records: a terminal line is erased so that records printed to the
  // same terminal start at the left margin.
  void eval_started();
  void eval(std::int64_t step, std::int64_t samples, double accuracy);
  void stopped(bool converged, std::int64_t step, std::int64_t samples);

  // The terminal line and the plain eval line for the current state (no "\r", no newline).
  std::string status_line() const;
  std::string eval_line() const;
  // Samples still needed by linear extrapolation of the last two evals, when they rise and the
  // target is not reached yet; seconds for them at the run's pace so far (evals included).
  std::optional<double> samples_to_target() const;
  std::optional<double> seconds_to_target() const;
  // "ETA 1m23s", "ETA ?" (fewer than two evals, or no rise), "target beyond max_steps",
  // "target reached".
  std::string estimate() const;

 private:
  void draw();
  double since_start() const { return clock_() - run_start_; }

  ProgressDisplay display_;
  double target_;
  std::int64_t max_steps_;
  Sink sink_;
  Clock clock_;

  double run_start_ = 0, last_draw_ = -1e300;
  std::int64_t step_ = 0, samples_ = 0;
  // Training rate: samples over wall time since the last eval ended (evals excluded).
  double window_start_ = 0;
  std::int64_t window_samples_ = 0;
  std::optional<double> rate_;
  int evals_ = 0;
  std::optional<double> accuracy_, previous_accuracy_;
  std::int64_t accuracy_samples_ = 0, previous_accuracy_samples_ = 0;
  bool line_shown_ = false;  // a terminal line is on screen (no newline after it yet)
};

// "42s", "3m05s", "1h02m"
std::string format_duration(double seconds);

}  // namespace mlbert::harness
