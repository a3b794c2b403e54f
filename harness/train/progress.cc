// Live training progress for people (see progress.h).
#include "harness/train/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace mlbert::harness {
namespace {

constexpr std::string_view kEraseLine = "\r\033[K";  // carriage return, erase to the end

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

}  // namespace

ProgressDisplay parse_progress_display(std::string_view text) {
  if (text == "auto") return ProgressDisplay::automatic;
  if (text == "tty") return ProgressDisplay::terminal;
  if (text == "lines") return ProgressDisplay::lines;
  if (text == "off") return ProgressDisplay::off;
  throw std::invalid_argument("--progress: \"" + std::string(text) +
                              "\" is not auto, tty, lines or off");
}

std::string_view to_string(ProgressDisplay display) {
  switch (display) {
    case ProgressDisplay::automatic:
      return "auto";
    case ProgressDisplay::terminal:
      return "tty";
    case ProgressDisplay::lines:
      return "lines";
    case ProgressDisplay::off:
      return "off";
  }
  return "off";
}

ProgressDisplay resolve(ProgressDisplay display, bool stream_is_terminal) {
  if (display != ProgressDisplay::automatic) return display;
  return stream_is_terminal ? ProgressDisplay::terminal : ProgressDisplay::lines;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%llds", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return text;
}

Progress::Progress(ProgressDisplay display, double target, std::int64_t max_steps, Sink sink,
                   Clock clock)
    : display_(display),
      target_(target),
      max_steps_(max_steps),
      sink_(std::move(sink)),
      clock_(std::move(clock)) {
  if (display_ == ProgressDisplay::automatic)
    throw std::logic_error("Progress needs a resolved display (terminal, lines or off)");
}

Progress::~Progress() {
  if (line_shown_ && sink_) sink_("\n");
}

Progress Progress::for_stderr(ProgressDisplay display, bool is_rank_zero, double target,
                              std::int64_t max_steps) {
  const ProgressDisplay resolved =
      is_rank_zero ? resolve(display, ::isatty(STDERR_FILENO) == 1) : ProgressDisplay::off;
  return Progress(
      resolved, target, max_steps,
      [](std::string_view bytes) {
        std::fwrite(bytes.data(), 1, bytes.size(), stderr);
        std::fflush(stderr);
      },
      [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
      });
}

void Progress::run_started() {
  run_start_ = window_start_ = clock_();
}

void Progress::step(std::int64_t step, std::int64_t samples) {
  step_ = step;
  samples_ = samples;
  const double elapsed = clock_() - window_start_;
  if (elapsed > 0 && samples_ > window_samples_)
    rate_ = static_cast<double>(samples_ - window_samples_) / elapsed;
  if (display_ != ProgressDisplay::terminal) return;
  if (clock_() - last_draw_ < kRedrawSeconds) return;  // a terminal cannot show faster anyway
  draw();
}

void Progress::eval_started() {
  if (display_ == ProgressDisplay::terminal && line_shown_) {
    sink_(kEraseLine);
    line_shown_ = false;
  }
}

void Progress::eval(std::int64_t step, std::int64_t samples, double accuracy) {
  step_ = step;
  samples_ = samples;
  previous_accuracy_ = accuracy_;
  previous_accuracy_samples_ = accuracy_samples_;
  accuracy_ = accuracy;
  accuracy_samples_ = samples;
  ++evals_;
  // The next rate window starts after the eval: evals do not count as training time.
  window_start_ = clock_();
  window_samples_ = samples;
  if (display_ == ProgressDisplay::terminal) draw();
  if (display_ == ProgressDisplay::lines) sink_("mlbert train: " + eval_line() + "\n");
}

void Progress::stopped(bool converged, std::int64_t step, std::int64_t samples) {
  step_ = step;
  samples_ = samples;
  if (display_ == ProgressDisplay::off) return;
  std::string line = std::string(converged ? "reached the target" : "stopped before the target") +
                     " at step " + std::to_string(step_) + ", " + std::to_string(samples_) +
                     " samples";
  if (accuracy_) line += ", eval accuracy " + format("%.4f", *accuracy_);
  line += ", " + format("%.1f", since_start()) + " s since run_start";
  if (display_ == ProgressDisplay::terminal) {
    sink_(std::string(kEraseLine) + status_line() + "\n");  // the final state stays on screen
    line_shown_ = false;
  } else {
    sink_("mlbert train: " + line + "\n");
  }
}

void Progress::draw() {
  sink_(std::string(kEraseLine) + status_line());
  line_shown_ = true;
  last_draw_ = clock_();
}

std::optional<double> Progress::samples_to_target() const {
  if (!accuracy_ || !previous_accuracy_ || *accuracy_ >= target_) return std::nullopt;
  const double rise = *accuracy_ - *previous_accuracy_;
  const double span = static_cast<double>(accuracy_samples_ - previous_accuracy_samples_);
  if (!(rise > 0) || !(span > 0)) return std::nullopt;
  return (target_ - *accuracy_) / (rise / span);
}

std::optional<double> Progress::seconds_to_target() const {
  const auto samples = samples_to_target();
  if (!samples || samples_ <= 0 || since_start() <= 0) return std::nullopt;
  return *samples * since_start() / static_cast<double>(samples_);
}

std::string Progress::estimate() const {
  if (accuracy_ && *accuracy_ >= target_) return "target reached";
  const auto samples = samples_to_target();
  if (samples && step_ > 0 && max_steps_ > 0) {
    const double per_step = static_cast<double>(samples_) / static_cast<double>(step_);
    if (*samples > per_step * static_cast<double>(max_steps_ - step_))
      return "target beyond max_steps";
  }
  const auto seconds = seconds_to_target();
  return seconds ? "ETA " + format_duration(*seconds) : "ETA ?";
}

std::string Progress::status_line() const {
  std::string line = "step " + std::to_string(step_);
  if (max_steps_ > 0) line += "/" + std::to_string(max_steps_);
  line += " | " + std::to_string(samples_) + " samples | ";
  line += rate_ ? format("%.1f", *rate_) + " seq/s" : std::string("-- seq/s");
  line += " | eval " + (accuracy_ ? format("%.4f", *accuracy_) : std::string("--")) + " (target " +
          format("%.3f", target_) + ") | " + estimate();
  return line;
}

std::string Progress::eval_line() const {
  std::string line = "eval " + std::to_string(evals_) + " at step " + std::to_string(step_) + ", " +
                     std::to_string(samples_) + " samples: accuracy " +
                     (accuracy_ ? format("%.4f", *accuracy_) : std::string("--")) + " (target " +
                     format("%.3f", target_) + ")";
  if (rate_) line += ", " + format("%.1f", *rate_) + " seq/s";
  line += ", " + format("%.1f", since_start()) + " s since run_start, " + estimate();
  return line;
}

}  // namespace mlbert::harness
