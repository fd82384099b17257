// What the sharding tests of the CLI share (tests/cli/devices_test.cpp, mpi_test.cpp): a program
// whose lanes draw random numbers, recurse and fault, a command run in a scratch folder, the
// files of a run's --out or a fit read back for comparison bit for bit, and a sharded run's step
// trace checked against the .abtrace `run --trace` recorded of it.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autobatch/trace.h"
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

// A sharded run's report (`run --trace-steps --format json`) against the .abtrace the same run
// recorded (`--trace`): the trace was cut as `shard_lanes` says, its steps are the reported
// trace's, one per scheduler step. The report's trace comes from the shards' schedulers (merged
// by merge_shards), the file's from the VM stepping the shards apart (TraceOptions::shard_lanes).
inline void check_sharded_trace(const nlohmann::json& report, const std::filesystem::path& abtrace,
                                const std::vector<uint32_t>& shard_lanes) {
  auto file = TraceFile::read(abtrace.string());
  REQUIRE_MESSAGE(file.ok(), file.error());
  CHECK((*file)->shard_lanes() == shard_lanes);
  const nlohmann::json& steps = report["trace"];
  CHECK(steps.size() == report["stats"]["steps"].get<size_t>());
  REQUIRE(steps.size() == (*file)->steps().size());
  for (size_t i = 0; i < steps.size(); ++i) {
    CAPTURE(i);
    CHECK(steps[i][0] == (*file)->steps()[i].block);
    CHECK(steps[i][1] == (*file)->steps()[i].active);
  }
}

// Per block, the lanes that ran it, summed over a report's trace: what a split cannot change.
inline std::map<int, uint64_t> lanes_per_block(const nlohmann::json& report) {
  std::map<int, uint64_t> lanes;
  for (const auto& step : report["trace"])
    lanes[step[0].get<int>()] += step[1].get<uint64_t>();
  return lanes;
}

}  // namespace ab::testing
