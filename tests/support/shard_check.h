// What the sharding tests of the CLI share (tests/cli/devices_test.cpp, mpi_test.cpp): a program
// whose lanes draw random numbers, recurse and fault, a command run in a scratch folder, and the
// files of a run's --out or a fit read back for comparison bit for bit.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include <fmt/format.h>

#include "support/read_bytes.h"
#include "support/temp_dir.h"

namespace ab::testing {

// Lane n draws n % 13 uniforms down a recursion and faults (division by zero) when n % 7 == 0:
// a lane's result depends on its global index (its random stream) and on nothing else.
inline const char* kShardProgram = R"(fn walk(n: int) -> float {
    if n <= 0 { return 0.0; }
    return uniform() + walk(n - 1);
}

fn main(n: int) -> float {
    let k = 10 / (n % 7);
    return walk(n % 13) + float(k);
}
)";

struct CommandOutcome {
  int exit_code = -1;
  std::string out, err;
};

// `line` run by the shell in `dir`; stdout and stderr kept.
inline CommandOutcome run_in(const TempDir& dir, const std::string& line) {
  const std::string command =
      fmt::format("cd '{}' && {} > out.txt 2> err.txt", dir.path.string(), line);
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_bytes(dir.path / "out.txt"),
          read_bytes(dir.path / "err.txt")};
}

// Every file in `folder` (name -> bytes), the lock and summary.json left out (summary.json holds
// the run's times; the caller compares its fit part).
inline std::map<std::string, std::string> folder_files(const std::filesystem::path& folder) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(folder))
    if (e.is_regular_file() && e.path().filename() != ".autobatch-sample.lock" &&
        e.path().filename() != "summary.json")
      files[e.path().filename().string()] = read_bytes(e.path());
  return files;
}

// A CmdStan CSV without its timing comments (the one part that differs between two runs).
inline std::string without_timing(const std::string& csv) {
  std::string out;
  size_t at = 0;
  while (at < csv.size()) {
    size_t end = csv.find('\n', at);
    if (end == std::string::npos) end = csv.size();
    const std::string line = csv.substr(at, end - at);
    if (line.find("Elapsed Time") == std::string::npos) out += line + "\n";
    at = end + 1;
  }
  return out;
}

}  // namespace ab::testing
