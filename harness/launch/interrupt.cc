#include "harness/launch/interrupt.h"

#include <signal.h>

#include <csignal>

namespace mlbert::harness {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile std::sig_atomic_t received_signal = 0;
struct sigaction previous[3];
struct sigaction previous_pipe;

void note(int signal) {
  if (received_signal == 0) received_signal = signal;
}

}  // namespace

InterruptScope::InterruptScope() {
  received_signal = 0;
  struct sigaction action {};
  action.sa_handler = note;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &action, &previous[i]);
  // A terminal gone (SIGHUP) must not end the parent on its next progress line either.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous_pipe);
}

InterruptScope::~InterruptScope() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &previous[i], nullptr);
  ::sigaction(SIGPIPE, &previous_pipe, nullptr);
}

int InterruptScope::received() {
  return received_signal;
}

}  // namespace mlbert::harness
