#include "tools/interrupts.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace ab::cli {
namespace {

std::atomic<int> received{0};
static_assert(std::atomic<int>::is_always_lock_free, "read in a signal handler");

void on_signal(int signal) {
  received.store(signal);
  // write(2) is async-signal-safe; fmt and stdio are not.
  constexpr char kMessage[] =
      "\nautobatch: stopping at the next step boundary (send it again to quit at once)\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
}

}  // namespace

void catch_interrupts() {
  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  // The handler runs once; the next signal takes the default action (the process ends).
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interrupt_signal() {
  return received.load();
}

}  // namespace ab::cli
