#include "train/loop/stop_signals.h"

#include <cstdio>

namespace sonata {
namespace {

constexpr int kSignals[3] = {SIGTERM, SIGUSR1, SIGINT};
volatile std::sig_atomic_t g_received = 0;

// Async-signal-safe: stores, and for a second SIGINT the default action.
void on_stop_signal(int signal) {
  if (signal == SIGINT && g_received != 0) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
    return;
  }
  if (g_received == 0) g_received = signal;
}

}  // namespace

StopSignals::StopSignals() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // system calls in flight go on; the loop looks after a step
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &previous_[i]);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
}

int StopSignals::received() {
  return g_received;
}

void StopSignals::reset() {
  g_received = 0;
}

const char* stop_signal_name(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGINT:
      return "SIGINT";
    default:
      return "a stop signal";
  }
}

}  // namespace sonata
