// Running the built `autobatch sample` as a user does, for the CLI tests: a command line in a
// scratch directory, its exit status and stderr, the fit's files read back.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "support/read_bytes.h"
#include "support/temp_dir.h"

namespace ab::testing {

struct SampleOutcome {
  int exit_code = -1;
  std::string out, err;
};

// `autobatch sample ARGS` in `dir` (a shell command line: ARGS may hold redirections); `prefix`
// goes before the binary (e.g. a `prlimit` wrapper).
inline SampleOutcome run_sample(const TempDir& dir, const std::string& args,
                                const std::string& prefix = "") {
  const std::string command = fmt::format("cd '{}' && {}'{}' sample {} > out.txt 2> err.txt",
                                          dir.path.string(), prefix, AB_CLI, args);
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_bytes(dir.path / "out.txt"),
          read_bytes(dir.path / "err.txt")};
}

// Starts `autobatch sample ARGS --out fit` in `dir` as a child, waits until `ready(dir/fit)` (at
// most two minutes), then sends it `signal`; exit code -1: it did not exit normally.
inline SampleOutcome interrupt_sample(
    const TempDir& dir, const std::string& args,
    const std::function<bool(const std::filesystem::path&)>& ready, int signal) {
  const pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    const std::string command =
        fmt::format("cd '{}' && exec '{}' sample {} --out fit > out.txt 2> err.txt",
                    dir.path.string(), AB_CLI, args);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!ready(dir.path / "fit") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(pid, signal);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_bytes(dir.path / "out.txt"),
          read_bytes(dir.path / "err.txt")};
}

}  // namespace ab::testing
