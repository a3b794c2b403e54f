// Sweep progress lines on standard error (see sweep_progress.h).
#include "simulate/sweep_progress.h"

#include <unistd.h>

#include <cstdio>

#include "common/elapsed.h"

namespace mlbert::simulate {
namespace {

constexpr double kTerminalDelaySeconds = 1.0;  // a sweep shorter than this shows nothing

}  // namespace

SweepProgress::SweepProgress(std::string field, std::size_t values, double interval, bool enabled)
    : field_(std::move(field)),
      values_(values),
      interval_(interval),
      enabled_(enabled),
      terminal_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void SweepProgress::end() {
  if (line_shown_ && terminal_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
  line_shown_ = false;
}

void SweepProgress::value_done(std::size_t done, const std::string& value) {
  if (!enabled_) return;
  const double elapsed = seconds_since(start_);
  const bool due = terminal_ ? elapsed >= kTerminalDelaySeconds : seconds_since(last_) >= interval_;
  if (!due) return;
  last_ = std::chrono::steady_clock::now();
  line_shown_ = true;
  // Standard error is diagnostics: a failed write there is not the command's failure.
  std::fprintf(
      stderr, "%smlbert simulate: --sweep %s: %zu of %zu values done (%zu%%), %.0f s; last %s=%s%s",
      terminal_ ? "\r\033[K" : "", field_.c_str(), done, values_,
      values_ ? done * 100 / values_ : 100, elapsed, field_.c_str(), value.c_str(),
      terminal_ ? "" : "\n");
  std::fflush(stderr);
}

}  // namespace mlbert::simulate
