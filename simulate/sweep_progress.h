// Progress of a `simulate --sweep` on standard error, so that a sweep of hundreds of values that
// runs for minutes says how far it is, while standard output (the table, the JSON) stays clean.
//
// Design choice: nothing is said while a sweep is short. On a terminal one line is rewritten in
// place once the sweep has run a second and erased when it ends; elsewhere (a log, a pipe) a line
// is written when `interval` seconds have passed since the start or the last line (0: after every
// value), so a log gains a line per interval and a short sweep's log none.
#pragma once

#include <chrono>
#include <string>

namespace mlbert::simulate {

class SweepProgress {
 public:
  // `interval`: seconds between lines off a terminal; `enabled` false (--quiet) says nothing.
  SweepProgress(std::string field, std::size_t values, double interval, bool enabled);
  ~SweepProgress() { end(); }
  SweepProgress(const SweepProgress&) = delete;
  SweepProgress& operator=(const SweepProgress&) = delete;

  // After each value: `done` values of the sweep predicted, the last one `value`.
  void value_done(std::size_t done, const std::string& value);
  // Erases the terminal's line, before the results are printed.
  void end();

 private:
  std::string field_;
  std::size_t values_;
  double interval_;
  bool enabled_;
  bool terminal_;
  bool line_shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace mlbert::simulate
