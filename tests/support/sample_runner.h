// Running the built `autobatch sample` as a user does, for the CLI tests: a command line in a
// scratch directory, its exit status and stderr, the fit's files read back.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "support/temp_dir.h"

namespace ab::testing {

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

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

}  // namespace ab::testing
