// Termination signals (SIGINT, SIGTERM, SIGHUP) noted instead of obeyed while a parent waits for a
// training job it started.
//
// Design choice: a terminal's Ctrl-C (and most job controls) signals the whole process group: the
// ranks, which log run_stop "aborted" and rename their log (run_guard.h), and the parent, which
// must then outlive them: dying at once closes the pipe their stderr goes to and leaves its own
// outputs as temporaries. While an InterruptScope lives, the signal is only recorded; the parent
// lets the job end, finishes its files, says what happened and exits 128 + signal. The flag is
// the one piece of process-wide state a signal handler can set.
#pragma once

namespace mlbert::harness {

class InterruptScope {
 public:
  InterruptScope();   // installs the handlers (no SA_RESTART: a blocking wait returns EINTR)
  ~InterruptScope();  // restores the previous dispositions
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // The first termination signal received in this scope, or 0.
  static int received();
};

}  // namespace mlbert::harness
