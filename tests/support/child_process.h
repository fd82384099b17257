// Runs part of a test in a forked child process, for what must not touch the test process
// itself: resource limits (an address space too small, threads that cannot start) and code that
// crashed or hung before it was fixed. Fork only from a process with no other threads (ctest
// runs each test case in a process of its own).
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace ab::testing {

struct ChildOutcome {
  bool exited = false;  // returned from `body` (or called _exit)
  int code = -1;        // its exit code, when exited
  int signal = 0;       // the signal that killed it (SIGABRT for an escaped exception)
  bool timed_out = false;
  std::string describe() const {
    if (timed_out) return "the child hung (killed after the timeout)";
    if (exited) return "the child exited with " + std::to_string(code);
    return "the child died of signal " + std::to_string(signal);
  }
};

// Runs `body` in a child; its return value is the child's exit code. A child still running after
// `timeout` is killed.
inline ChildOutcome run_in_child(const std::function<int()>& body,
                                 std::chrono::seconds timeout = std::chrono::seconds(120)) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  ChildOutcome outcome;
  if (pid < 0) return outcome;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      outcome.timed_out = true;
      return outcome;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  outcome.exited = WIFEXITED(status);
  outcome.code = outcome.exited ? WEXITSTATUS(status) : -1;
  outcome.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return outcome;
}

// The address space this process maps now, in bytes.
inline uint64_t mapped_bytes() {
  uint64_t pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  return pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// Limits the address space to what is mapped now plus `headroom` bytes (RLIMIT_AS).
inline bool limit_address_space(uint64_t headroom) {
  const rlim_t limit = mapped_bytes() + headroom;
  const rlimit r{limit, limit};
  return setrlimit(RLIMIT_AS, &r) == 0;
}

// Makes every thread started from now on fail to start: each asks for a stack larger than the
// address space has room for (root ignores RLIMIT_NPROC, so that limit cannot be used here).
inline bool refuse_new_threads() {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  const bool ok = pthread_attr_setstacksize(&attr, size_t{1} << 32) == 0 &&
                  pthread_setattr_default_np(&attr) == 0 && limit_address_space(size_t{1} << 30);
  pthread_attr_destroy(&attr);
  return ok;
}

}  // namespace ab::testing
