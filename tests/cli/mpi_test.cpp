// `run` and `sample` under mpirun (docs/cli.md, "Over MPI ranks"), on this machine with 2 and 3
// ranks: the outputs and the fit's files are the single process's bit for bit (R-hat and ESS over
// all chains, lane counts that do not divide evenly included); a rank that dies (by the test hook,
// or killed by SIGKILL mid-run) ends the job with a message naming it and leaves the previous fit
// untouched; rank 0's unreachable output folder is one message and a non-zero exit. Skipped when
// the build has no MPI (AB_MPI off).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/shard_check.h"

namespace {

namespace fs = std::filesystem;
using ab::testing::folder_files;
using ab::testing::run_in;
using ab::testing::TempDir;
using nlohmann::json;

#ifdef AB_MPIEXEC
constexpr bool kNoMpi = false;
const char* const kMpiexec = AB_MPIEXEC;
#else
constexpr bool kNoMpi = true;
const char* const kMpiexec = "";
#endif

// `autobatch ARGS` on `ranks` ranks of this machine (as root too, as CI runs).
std::string mpirun(int ranks, const std::string& args) {
  return fmt::format("'{}' --oversubscribe --allow-run-as-root -n {} '{}' {}", kMpiexec, ranks,
                     AB_CLI, args);
}
std::string single(const std::string& args) {
  return fmt::format("'{}' {}", AB_CLI, args);
}

std::string model(const std::string& name) {
  return (fs::path(AB_SOURCE_DIR) / "tests" / "data" / "models" / name).string();
}

// The fit's files of `a` and `b` equal, the CSVs' timing comments aside.
void check_same_fit(const fs::path& a, const fs::path& b) {
  auto want = folder_files(a), got = folder_files(b);
  CHECK(want.size() == got.size());
  for (auto& [name, bytes] : want) {
    CAPTURE(name);
    if (name.ends_with(".csv"))
      CHECK(ab::testing::without_timing(got[name]) == ab::testing::without_timing(bytes));
    else
      CHECK(got[name] == bytes);
  }
}

TEST_CASE("mpi: run on 2 and 3 ranks gives the single process's outputs bit for bit" *
          doctest::skip(kNoMpi)) {
  TempDir dir("ab_mpi");
  dir.write("shard.ab", ab::testing::kShardProgram);
  const std::string args = "run shard.ab --backend vm -i n=range:0:37 --seed 5 --format json";
  const auto one = run_in(dir, single(args + " --out one"));
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  const json want = json::parse(one.out);
  for (int ranks : {2, 3}) {
    CAPTURE(ranks);
    const auto split = run_in(dir, mpirun(ranks, args + " --out split"));
    REQUIRE_MESSAGE(split.exit_code == 0, split.err);
    const json got = json::parse(split.out);  // one document: rank 0 alone prints
    CHECK(got["outputs"] == want["outputs"]);
    CHECK(got["errors"] == want["errors"]);
    CHECK(got["stats"]["lane_steps"] == want["stats"]["lane_steps"]);
    CHECK(folder_files(dir.path / "split") == folder_files(dir.path / "one"));
  }
}

TEST_CASE("mpi: --trace-steps on 2 ranks gives each rank's steps in turn, as --trace records them" *
          doctest::skip(kNoMpi)) {
  TempDir dir("ab_mpi");
  dir.write("shard.ab", ab::testing::kShardProgram);
  const std::string args =
      "run shard.ab --backend vm -i n=range:0:37 --seed 5 --format json --trace-steps";
  const auto one = run_in(dir, single(args));
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  const auto split = run_in(dir, mpirun(2, args + " --trace split.abtrace"));
  REQUIRE_MESSAGE(split.exit_code == 0, split.err);
  const json want = json::parse(one.out), got = json::parse(split.out);
  CHECK(got["outputs"] == want["outputs"]);
  ab::testing::check_sharded_trace(got, dir.path / "split.abtrace", {19, 18});
  CHECK(ab::testing::lanes_per_block(got) == ab::testing::lanes_per_block(want));
}

TEST_CASE("mpi: sample on 2 and 3 ranks writes the single process's fit bit for bit" *
          doctest::skip(kNoMpi)) {
  TempDir dir("ab_mpi");
  const std::string args = fmt::format(
      "sample '{}' --backend vm --threads 1 --chains 7 --draws 60 --warmup 60 --seed 11 --csv "
      "--format json",
      model("gaussian_iid.ab"));
  const auto one = run_in(dir, single(args + " --out one"));
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  for (int ranks : {2, 3}) {
    CAPTURE(ranks);
    const auto split = run_in(dir, mpirun(ranks, args + " --out split"));
    REQUIRE_MESSAGE(split.exit_code == 0, split.err);
    check_same_fit(dir.path / "one", dir.path / "split");
    // The summary (R-hat, ESS) is over all 7 chains, as the single process's.
    const json want = json::parse(one.out), got = json::parse(split.out);
    CHECK(got["parameters"] == want["parameters"]);
    CHECK(got["summary_chains"] == want["summary_chains"]);
    const json summary = json::parse(ab::testing::read_bytes(dir.path / "split" / "summary.json"));
    CHECK(summary["parameters"] == want["parameters"]);
  }
}

TEST_CASE("mpi: a rank that dies ends the job naming it and leaves the previous fit untouched" *
          doctest::skip(kNoMpi)) {
  TempDir dir("ab_mpi");
  const std::string args = fmt::format(
      "sample '{}' --backend vm --threads 1 --chains 4 --draws 200 --warmup 200 --out fit",
      model("gaussian_iid.ab"));
  REQUIRE(run_in(dir, single(args + " --seed 1")).exit_code == 0);
  const auto before = folder_files(dir.path / "fit");
  const std::string summary_before = ab::testing::read_bytes(dir.path / "fit" / "summary.json");
  const auto died = run_in(dir, "AB_TEST_MPI_EXIT_RANK=1 " + mpirun(2, args + " --seed 2"));
  CHECK(died.exit_code != 0);
  CHECK_MESSAGE(died.err.find("rank 1: exiting mid-run") != std::string::npos, died.err);
  CHECK_MESSAGE(died.err.find("[[") != std::string::npos, died.err);  // mpirun's own report
  CHECK(folder_files(dir.path / "fit") == before);
  CHECK(ab::testing::read_bytes(dir.path / "fit" / "summary.json") == summary_before);
}

// The process of rank `rank` of an mpirun started in `dir`: an autobatch whose working folder is
// `dir` (the test's own) and whose environment says it is that rank; nullopt until there is one.
std::optional<pid_t> rank_process(const fs::path& dir, int rank) {
  const std::string want = fmt::format("OMPI_COMM_WORLD_RANK={}", rank);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (fs::read_symlink(e.path() / "cwd", ec) != dir || ec) continue;
    if (fs::read_symlink(e.path() / "exe", ec) != fs::path(AB_CLI) || ec) continue;
    std::string environ = ab::testing::read_bytes(e.path() / "environ");
    for (size_t at = 0; at < environ.size(); at = environ.find('\0', at) + 1) {
      if (environ.compare(at, want.size() + 1, want + '\0') == 0) return std::stoi(name);
      if (environ.find('\0', at) == std::string::npos) break;
    }
  }
  return std::nullopt;
}

// CPU seconds `pid` has run (user + system), 0 once it is gone.
double cpu_seconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const size_t after_name = stat.rfind(')');
  if (after_name == std::string::npos) return 0;
  std::istringstream fields(stat.substr(after_name + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i)  // utime and stime are fields 14 and 15
    if (i >= 14) ticks += std::stod(field);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

TEST_CASE("mpi: a rank killed by SIGKILL mid-run ends the job naming it, the previous fit kept" *
          doctest::skip(kNoMpi)) {
  TempDir dir("ab_mpi");
  const std::string args =
      fmt::format("sample '{}' --backend vm --threads 1 --chains 4 --warmup 200 --out fit",
                  model("gaussian_iid.ab"));
  REQUIRE(run_in(dir, single(args + " --draws 200 --seed 1")).exit_code == 0);
  const auto before = folder_files(dir.path / "fit");
  const std::string summary_before = ab::testing::read_bytes(dir.path / "fit" / "summary.json");
  // Far more draws than the test waits for: the run is still sampling when its rank is killed.
  const std::string job = mpirun(2, args + " --draws 1000000 --seed 2");
  REQUIRE(std::system(fmt::format("cd '{}' && ({} > out.txt 2> err.txt; echo $? > rc.txt) &",
                                  dir.path.string(), job)
                          .c_str()) == 0);
  // Killed once it has run a second of CPU: past its setup and agreement, inside the chains.
  std::optional<pid_t> victim;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < give_up) {
    if (!victim) victim = rank_process(dir.path, 1);
    if (victim && cpu_seconds(*victim) >= 1.0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(victim);
  REQUIRE(cpu_seconds(*victim) >= 1.0);
  REQUIRE(::kill(*victim, SIGKILL) == 0);
  while (!fs::exists(dir.path / "rc.txt") && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(fs::exists(dir.path / "rc.txt"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the shell's write
  CHECK(std::stoi(ab::testing::read_bytes(dir.path / "rc.txt")) != 0);
  const std::string err = ab::testing::read_bytes(dir.path / "err.txt");
  // mpirun's report names the rank and the signal; rank 0, stopped by mpirun, says at most that
  // nothing was written (not that the run was still being prepared), and no rank reports an
  // error of its own.
  CHECK_MESSAGE(err.find("process rank 1 with PID") != std::string::npos, err);
  CHECK_MESSAGE(err.find("signal 9") != std::string::npos, err);
  CHECK_MESSAGE(err.find("process rank 0") == std::string::npos, err);
  CHECK_MESSAGE(err.find("being prepared") == std::string::npos, err);
  CHECK_MESSAGE(err.find("error:") == std::string::npos, err);
  CHECK(ab::testing::read_bytes(dir.path / "out.txt").empty());
  CHECK(folder_files(dir.path / "fit") == before);
  CHECK(ab::testing::read_bytes(dir.path / "fit" / "summary.json") == summary_before);
}

TEST_CASE("mpi: rank 0's unreachable output folder is one message and a non-zero exit" *
          doctest::skip(kNoMpi)) {
  TempDir dir("ab_mpi");
  dir.write("file", "not a folder");
  const auto refused = run_in(
      dir, mpirun(2, fmt::format("sample '{}' --backend vm --chains 4 --draws 20 --warmup 20 "
                                 "--out file/fit",
                                 model("gaussian_iid.ab"))));
  CHECK(refused.exit_code != 0);
  const size_t first = refused.err.find("error:");
  REQUIRE_MESSAGE(first != std::string::npos, refused.err);
  CHECK_MESSAGE(refused.err.find("error:", first + 1) == std::string::npos, refused.err);
  CHECK_FALSE(fs::exists(dir.path / "file" / "fit"));
}

}  // namespace
