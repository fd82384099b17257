#include "tools/interrupts.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace ab::cli {
namespace {

std::atomic<int> received{0};
std::atomic<bool> at_step_boundaries{false};
// Under mpirun, the run has begun: 0 before, 1 on a rank that stays quiet, 2 on rank 0.
std::atomic<int> ranks_running{0};
static_assert(std::atomic<int>::is_always_lock_free, "read in a signal handler");
static_assert(std::atomic<bool>::is_always_lock_free, "read in a signal handler");

// write(2) and _exit(2) are async-signal-safe; fmt, stdio and exit() are not.
void say(const char* text, size_t size) {
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, size);
}

void on_signal(int signal) {
  if (const int running = ranks_running.load(); running != 0) {
    constexpr char kMessage[] =
        "\nautobatch: stopped by a signal; under mpirun every rank stops at once and nothing is "
        "written: the files in the output folder are unchanged\n";
    if (running == 2) say(kMessage, sizeof kMessage - 1);
    ::_exit(128 + signal);
  }
  if (!at_step_boundaries.load()) {
    // Nothing is written before the first draw: the output folder still holds the previous fit
    // (a staging folder left behind is removed by the next run, sample::FitWriter).
    constexpr char kMessage[] =
        "\nautobatch: stopped before any draw, while the run was being prepared; the files in "
        "the output folder are unchanged\n";
    say(kMessage, sizeof kMessage - 1);
    ::_exit(128 + signal);
  }
  received.store(signal);
  constexpr char kMessage[] =
      "\nautobatch: stopping at the next step boundary (send it again to quit at once)\n";
  say(kMessage, sizeof kMessage - 1);
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

void stop_at_step_boundaries() {
  at_step_boundaries.store(true);
}

void ranks_stop_at_once(bool say) {
  ranks_running.store(say ? 2 : 1);
}

int interrupt_signal() {
  return received.load();
}

}  // namespace ab::cli
