// What `autobatch sample` leaves behind when a run fails, is stopped or shares its folder
// (docs/cli.md, "What a fit leaves"): missing draws are NaN and never summarised, a failed or
// refused run keeps the previous fit's files byte for byte, SIGINT writes what exists and exits
// 130, a second writer is refused, a write that fails says why, and the sampler's contract is
// checked with messages that point at the mistake. Each case runs the built binary.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autobatch/npy.h"
#include "support/sample_runner.h"
#include "support/temp_dir.h"
#include "tools/file_io.h"

namespace {

namespace fs = std::filesystem;
using ab::testing::TempDir;
using nlohmann::json;

const fs::path kModels = fs::path(AB_SOURCE_DIR) / "tests" / "data" / "models";

using ab::testing::read_bytes;
using Outcome = ab::testing::SampleOutcome;
using ab::testing::interrupt_sample;
using ab::testing::run_sample;

// Every file of the fit in `out`, name -> bytes (not the folder's lock, which holds a pid).
std::map<std::string, std::string> fit_files(const fs::path& out) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(out))
    if (e.is_regular_file() && e.path().filename() != ".autobatch-sample.lock")
      files[e.path().filename().string()] = read_bytes(e.path());
  return files;
}

// The NaN-ness of every value in an .npy array of floats.
std::vector<bool> nan_mask(const fs::path& npy) {
  auto array = ab::read_npy(npy.string());
  REQUIRE(array.ok());
  std::vector<bool> nan;
  for (uint64_t k = 0; k < array->elements(); ++k)
    nan.push_back(std::isnan(std::get<double>(array->at(k))));
  return nan;
}

// A standard normal in one dimension whose log density faults (index out of range) at q = 100.
const char* kFaultsAt100 =
    "const D: int = 1;\n"
    "struct LogDensity { value: float, grad: float[D] }\n"
    "fn log_density(q: float[D]) -> LogDensity {\n"
    "  let t = [1.0, 2.0];\n"
    "  let k = t[int(q[0] == 100.0) * 7];\n"
    "  return LogDensity { value: -0.5 * q[0] * q[0] * k, grad: -q * k };\n}\n";

std::string init_file(const TempDir& dir, std::vector<float> init) {
  return dir.write(
      "init.npy",
      ab::encode_npy("<f4", {init.size(), 1},
                     std::string(reinterpret_cast<const char*>(init.data()), init.size() * 4)));
}

TEST_CASE("sample files: a faulted chain's missing draws are NaN and left out of the summary") {
  const TempDir dir("ab_fit_fault");
  dir.write("fault.ab", kFaultsAt100);
  const std::string init = init_file(dir, {0.5f, 0.5f, 0.5f, 100.0f});
  const Outcome o = run_sample(
      dir, "fault.ab --chains 4 --draws 400 --warmup 200 --seed 3 --backend vm --out fit --init " +
               init);
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  CHECK(o.err.find("chain 3 faulted: index_out_of_range: index 7 out of range for t: float[2] in "
                   "log_density at line 5 after 0 of 400 draws") != std::string::npos);
  const std::vector<bool> nan = nan_mask(dir.path / "fit" / "draws.npy");
  REQUIRE(nan.size() == 1600);
  for (size_t k = 0; k < nan.size(); ++k) {
    CAPTURE(k);
    CHECK(nan[k] == (k >= 1200));  // chain 3 is draws [1200, 1600)
  }
  CHECK(nan_mask(dir.path / "fit" / "accept_stat.npy")[1300]);
  auto depth = ab::read_npy((dir.path / "fit" / "tree_depth.npy").string());
  REQUIRE(depth.ok());
  CHECK(std::get<int64_t>(depth->at(1300)) == -1);
  CHECK(std::get<int64_t>(depth->at(0)) >= 0);

  const json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  CHECK(summary["summary_chains"] == json::array({0, 1, 2}));
  CHECK(summary["draws_per_chain"] == json::array({400, 400, 400, 0}));
  CHECK(summary["faults"][0]["chain"] == 3);
  CHECK(summary["faults"][0]["fault"] == "index_out_of_range");
  CHECK(summary["complete"] == false);
  // Three healthy N(0, 1) chains: no zeros pull the sd down or the median to 0.
  const json& q = summary["parameters"][0];
  CHECK(std::abs(q["sd"].get<double>() - 1.0) < 0.15);
  CHECK(q["q50"].get<double>() != 0.0);
  CHECK(q["rhat"].get<double>() < 1.05);
}

TEST_CASE("sample files: every chain faulted is a failure that keeps the previous fit") {
  const TempDir dir("ab_fit_all_faulted");
  dir.write("fault.ab", kFaultsAt100);
  Outcome o = run_sample(dir, "fault.ab --chains 2 --draws 50 --warmup 20 --backend vm --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const auto before = fit_files(dir.path / "fit");
  REQUIRE(before.count("draws.npy"));
  const std::string init = init_file(dir, {100.0f, 100.0f});
  o = run_sample(
      dir, "fault.ab --chains 2 --draws 50 --warmup 20 --backend vm --out fit --init " + init);
  CHECK(o.exit_code == 1);
  CHECK(o.err.find("no chain produced a draw") != std::string::npos);
  CHECK(fit_files(dir.path / "fit") == before);
}

TEST_CASE("sample files: every chain faulting after some draws keeps the previous fit") {
  const TempDir dir("ab_fit_faulted_late");
  // A standard normal whose density faults (index out of range) once |q| passes 2.5: every chain
  // gets there within its 3000 draws, after making some.
  dir.write("late.ab",
            "const D: int = 1;\n"
            "fn log_density(q: float[D]) -> float {\n"
            "  let t = [1.0, 2.0];\n"
            "  let k = t[int(abs(q[0]) > 2.5) * 7];\n"
            "  return -0.5 * q[0] * q[0] * k;\n}\n");
  const std::string model = (kModels / "gaussian_iid.ab").string();
  Outcome o =
      run_sample(dir, model + " --chains 2 --draws 100 --warmup 150 --backend vm --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const auto before = fit_files(dir.path / "fit");
  o = run_sample(dir,
                 "late.ab --chains 2 --draws 3000 --warmup 0 --step-size 0.5 --no-step-search "
                 "--seed 2 --backend vm --out fit");
  CHECK(o.exit_code == 1);
  // Both chains faulted after some of their draws, not at their first.
  CHECK(o.err.find("chain 0 faulted: index_out_of_range") != std::string::npos);
  CHECK(o.err.find("chain 1 faulted: index_out_of_range") != std::string::npos);
  CHECK(o.err.find("after 0 of") == std::string::npos);
  CHECK(o.err.find("error: every chain faulted or was refused (") != std::string::npos);
  CHECK(o.err.find("the files in 'fit' are unchanged") != std::string::npos);
  CHECK(fit_files(dir.path / "fit") == before);
  CHECK(!fs::exists(dir.path / "fit" / ".autobatch-sample.partial"));
}

// The names of the files in `out`, the lock and the staging folder aside.
std::set<std::string> file_names(const fs::path& out) {
  std::set<std::string> names;
  for (const auto& [name, bytes] : fit_files(out))
    names.insert(name);
  return names;
}

std::set<std::string> fit_file_names(const std::vector<std::string>& csvs) {
  std::set<std::string> names = {"draws.npy",     "accept_stat.npy", "step_size.npy",
                                 "energy.npy",    "tree_depth.npy",  "n_grad.npy",
                                 "divergent.npy", "lp.npy",          "summary.json"};
  names.insert(csvs.begin(), csvs.end());
  return names;
}

TEST_CASE("sample files: a later fit removes the earlier fit's files, never the user's") {
  const TempDir dir("ab_fit_stale");
  fs::copy_file(kModels / "gaussian_iid.ab", dir.path / "g.ab");
  Outcome o = run_sample(dir, "g.ab --chains 4 --draws 20 --warmup 20 --csv --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  CHECK(file_names(dir.path / "fit") ==
        fit_file_names({"g-1.csv", "g-2.csv", "g-3.csv", "g-4.csv"}));
  // summary.json names the fit's files.
  json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  CHECK(summary["files"].get<std::set<std::string>>() == file_names(dir.path / "fit"));
  // The user's own files beside the fit, one with a name our CSVs could have.
  dir.write("fit/notes.txt", "mine");
  dir.write("fit/g-7.csv", "mine too");

  o = run_sample(dir, "g.ab --chains 2 --draws 20 --warmup 20 --csv --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  std::set<std::string> expected = fit_file_names({"g-1.csv", "g-2.csv"});
  summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  CHECK(summary["files"].get<std::set<std::string>>() == expected);
  expected.insert({"notes.txt", "g-7.csv"});
  CHECK(file_names(dir.path / "fit") == expected);

  // A run without --csv leaves none of the earlier CSVs.
  o = run_sample(dir, "g.ab --chains 2 --draws 20 --warmup 20 --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  expected = fit_file_names({});
  expected.insert({"notes.txt", "g-7.csv"});
  CHECK(file_names(dir.path / "fit") == expected);
  CHECK(read_bytes(dir.path / "fit" / "notes.txt") == "mine");
  CHECK(read_bytes(dir.path / "fit" / "g-7.csv") == "mine too");
}

TEST_CASE("sample files: a fit from before summary.json listed its files loses its own CSVs only") {
  const TempDir dir("ab_fit_stale_legacy");
  fs::copy_file(kModels / "gaussian_iid.ab", dir.path / "g.ab");
  Outcome o = run_sample(dir, "g.ab --chains 4 --draws 20 --warmup 20 --csv --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  // As an earlier version wrote it: no "files"; and the user replaced g-4.csv with a file of
  // their own.
  json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  summary.erase("files");
  dir.write("fit/summary.json", summary.dump(2));
  dir.write("fit/g-4.csv", "a,b\n1,2\n");
  o = run_sample(dir, "g.ab --chains 2 --draws 20 --warmup 20 --csv --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  std::set<std::string> expected = fit_file_names({"g-1.csv", "g-2.csv", "g-4.csv"});
  CHECK(file_names(dir.path / "fit") == expected);
  CHECK(read_bytes(dir.path / "fit" / "g-4.csv") == "a,b\n1,2\n");
}

TEST_CASE("sample files: a failed or refused run leaves the previous fit's files byte for byte") {
  const TempDir dir("ab_fit_failed");
  const std::string model = (kModels / "gaussian_iid.ab").string();
  Outcome o =
      run_sample(dir, model + " --chains 2 --draws 100 --warmup 150 --backend vm --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const auto before = fit_files(dir.path / "fit");
  CHECK(before.size() == 9);  // draws, seven statistics, summary.json

  // A device that does not exist: found out after the options were read, before any draw.
  o = run_sample(dir, model + " --chains 2 --draws 300 --backend vulkan --device 97 --out fit");
  CHECK(o.exit_code != 0);
  CHECK(fit_files(dir.path / "fit") == before);
  // Draws too large for the file size limit: refused before the chains start, with the reason.
  o = run_sample(dir, model + " --chains 64 --draws 100000 --backend vm --out fit",
                 "trap '' XFSZ; prlimit --fsize=2000000 ");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("draws.npy': File too large") != std::string::npos);
  CHECK(fit_files(dir.path / "fit") == before);
  // More per-draw statistics than memory: refused up front, naming the size.
  o = run_sample(dir, model + " --chains 1048576 --draws 16777216 --backend vm --out fit");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("GiB of per-draw statistics in memory") != std::string::npos);
  CHECK(fit_files(dir.path / "fit") == before);
  CHECK(!fs::exists(dir.path / "fit" / ".autobatch-sample.partial"));
  // --out naming a file.
  dir.write("taken", "x");
  o = run_sample(dir, model + " --chains 2 --draws 10 --backend vm --out taken");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("'taken' is a file") != std::string::npos);
  CHECK(read_bytes(dir.path / "taken") == "x");
}

TEST_CASE("sample files: a second writer into the same folder is refused") {
  const TempDir dir("ab_fit_lock");
  fs::create_directories(dir.path / "fit");
  // Another `sample` holds the folder's lock (the lock is an flock: this process takes it).
  const int fd =
      ::open((dir.path / "fit" / ".autobatch-sample.lock").c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  REQUIRE(::write(fd, "4242", 4) == 4);
  const std::string model = (kModels / "gaussian_iid.ab").string();
  Outcome o = run_sample(dir, model + " --chains 2 --draws 10 --backend vm --out fit");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("'fit' is in use by another `autobatch sample` (process 4242)") !=
        std::string::npos);
  CHECK(!fs::exists(dir.path / "fit" / "draws.npy"));
  ::close(fd);  // the holder ends: the folder is free again
  o = run_sample(dir, model + " --chains 2 --draws 10 --backend vm --out fit");
  CHECK_MESSAGE(o.exit_code == 0, o.err);
  CHECK(fs::exists(dir.path / "fit" / "draws.npy"));
}

// Whether the fit being written in `out` has its first draw (chain 0's first value): draws.npy
// is staged in .autobatch-sample.partial/, its unwritten draws read as zeros until the end.
bool first_draw_written(const fs::path& out) {
  const std::string bytes = read_bytes(out / ".autobatch-sample.partial" / "draws.npy");
  if (bytes.size() < 10) return false;
  const size_t data = 10 + static_cast<uint8_t>(bytes[8]) + 256u * static_cast<uint8_t>(bytes[9]);
  return bytes.size() >= data + 4 && bytes.compare(data, 4, std::string(4, '\0')) != 0;
}

TEST_CASE("sample files: SIGINT mid-run writes the draws that exist, NaN after, and exits 130") {
  const TempDir dir("ab_fit_sigint");
  const std::string model = (kModels / "gaussian_iid.ab").string();
  const Outcome o =
      interrupt_sample(dir, model + " --chains 4 --draws 500000 --warmup 150 --backend vm",
                       first_draw_written, SIGINT);
  REQUIRE_MESSAGE(o.exit_code == 130, o.err);
  CHECK(o.err.find("stopped by Interrupt") != std::string::npos);
  const json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  CHECK(summary["complete"] == false);
  CHECK(summary["interrupted_by"] == "Interrupt");
  uint64_t written = 0;
  for (const json& n : summary["draws_per_chain"])
    written += n.get<uint64_t>();
  CHECK(written > 0);
  CHECK(written < 2000000);
  // Chain 0's first draw is real, its last is NaN; the summary used only real draws.
  auto draws = ab::read_npy((dir.path / "fit" / "draws.npy").string());
  REQUIRE(draws.ok());
  CHECK(std::isfinite(std::get<double>(draws->at(0))));
  CHECK(std::isnan(std::get<double>(draws->at(500000 * 3 - 1))));
  CHECK(summary["summary_draws_per_chain"].get<uint64_t>() > 0);
  CHECK(summary["parameters"][0]["mean"].is_number());
}

TEST_CASE("sample files: a stopped fit counts its divergences where divergent.npy does") {
  const TempDir dir("ab_fit_sigint_divergent");
  const std::string model = (kModels / "gaussian_iid.ab").string();
  // A step size of 10 on standard normals: leapfrog is unstable past 2, nearly every transition
  // diverges.
  const Outcome o = interrupt_sample(dir,
                                     model +
                                         " --chains 4 --draws 500000 --warmup 0 --step-size 10 "
                                         "--no-step-search --backend vm",
                                     first_draw_written, SIGINT);
  REQUIRE_MESSAGE(o.exit_code == 130, o.err);
  auto divergent = ab::read_npy((dir.path / "fit" / "divergent.npy").string());
  REQUIRE(divergent.ok());
  uint64_t in_file = 0;
  for (uint64_t k = 0; k < divergent->elements(); ++k)
    in_file += std::get<bool>(divergent->at(k));
  CHECK(in_file > 0);
  const json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  CHECK(summary["divergences"].get<uint64_t>() == in_file);
  CHECK(o.out.find(fmt::format("divergences           {}\n", in_file)) != std::string::npos);
}

TEST_CASE("sample files: a log density that never returns is stopped by SIGTERM or --max-steps") {
  const TempDir dir("ab_fit_hang");
  dir.write("hang.ab",
            "const D: int = 1;\n"
            "struct LogDensity { value: float, grad: float[D] }\n"
            "fn log_density(q: float[D]) -> LogDensity {\n"
            "  var x = q[0];\n"
            "  while x == x { x = x + 1.0; }\n"
            "  return LogDensity { value: x, grad: q };\n}\n");
  const std::string model = (kModels / "gaussian_iid.ab").string();
  Outcome o = run_sample(dir, model + " --chains 2 --draws 20 --warmup 150 --backend vm --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const auto before = fit_files(dir.path / "fit");
  // Killed before any draw: the previous fit stays as it was.
  // The staging folder exists once the run has begun (its signal handler is in place).
  o = interrupt_sample(
      dir, "hang.ab --chains 2 --draws 20 --backend vm",
      [](const fs::path& out) { return fs::exists(out / ".autobatch-sample.partial"); }, SIGTERM);
  CHECK(o.exit_code == 128 + SIGTERM);
  CHECK(o.err.find("before any draw") != std::string::npos);
  CHECK(fit_files(dir.path / "fit") == before);
  // A step budget turns the hang into a fault per chain.
  o = run_sample(dir, "hang.ab --chains 2 --draws 20 --backend vm --out fit --max-steps 100000");
  CHECK(o.exit_code == 1);
  CHECK(o.err.find("chain 0 faulted: step_budget in log_density") != std::string::npos);
  CHECK(o.err.find("chain 1 faulted: step_budget") != std::string::npos);
  CHECK(fit_files(dir.path / "fit") == before);
}

TEST_CASE("sample files: the sampler's contract is checked where the mistake is") {
  const TempDir dir("ab_fit_contract");
  const std::string density =
      "struct LogDensity { value: float, grad: float[D] }\n"
      "fn log_density(q: float[D]) -> LogDensity {\n"
      "  return LogDensity { value: -0.5 * q[0] * q[0], grad: -q };\n}\n";
  dir.write("const.ab", "const D: int = 1;\nconst nuts_scale: float = 2.0;\n" + density);
  Outcome o = run_sample(dir, "const.ab --chains 2 --draws 10 --backend vm --out fit");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("const.ab:2:7: const 'nuts_scale': names starting with 'nuts_' are the "
                   "sampler's") != std::string::npos);
  dir.write("struct.ab",
            "const D: int = 1;\n// nuts_ in a comment is fine\n"
            "struct nuts_Point { x: float }\n" +
                density);
  o = run_sample(dir, "struct.ab --chains 2 --draws 10 --backend vm --out fit");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("struct.ab:3:8: struct 'nuts_Point'") != std::string::npos);
  dir.write("emits.ab",
            "const D: int = 1;\n"
            "struct LogDensity { value: float, grad: float[D] }\n"
            "fn log_density(q: float[D]) -> LogDensity {\n"
            "  emit(q[0]);\n"
            "  return LogDensity { value: -0.5 * q[0] * q[0], grad: -q };\n}\n");
  o = run_sample(dir, "emits.ab --chains 2 --draws 10 --backend vm --out fit");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("a model does not emit records") != std::string::npos);

  dir.write("ok.ab", "const D: int = 1;\n" + density);
  const std::string init = init_file(dir, {0.5f, std::nanf("")});
  o = run_sample(dir, "ok.ab --chains 2 --draws 10 --backend vm --out fit --init " + init);
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("--init '" + init + "', chain 1: q[0] = nan is not finite") !=
        std::string::npos);
  CHECK(!fs::exists(dir.path / "fit" / "draws.npy"));

  // A warm-up too short to adapt is allowed, and said.
  o = run_sample(dir, "ok.ab --chains 2 --draws 10 --warmup 1 --backend vm --out fit");
  CHECK_MESSAGE(o.exit_code == 0, o.err);
  CHECK(o.err.find("warning: --warmup 1 is too short to adapt") != std::string::npos);
  o = run_sample(dir, "ok.ab --chains 2 --draws 10 --warmup 200 --backend vm --out fit");
  CHECK(o.err.find("warning: --warmup") == std::string::npos);
}

TEST_CASE(
    "sample files: the default stack depth is measured; a given one too small names the option") {
  const TempDir dir("ab_fit_tape");
  // A standard normal reached through a recurrence (not a sum): the reverse sweep keeps one tape
  // entry per iteration, 40 here, more than the tree's depth (--max-depth 10 + 8). By default
  // the sampler measures that need before the chains start; a depth the user gives is used as is.
  dir.write("recurrence.ab",
            "const D: int = 1;\n"
            "fn log_density(q: float[D]) -> float {\n"
            "  var x = 0.0;\n"
            "  for i in 0..40 { x = x * 0.5 + q[0] * sin(x) * 0.0 + 0.5 * q[0]; }\n"
            "  return -0.5 * x * x;\n}\n");
  const std::string run =
      "recurrence.ab --chains 4 --draws 300 --warmup 200 --backend vm --out fit";
  Outcome o = run_sample(dir, run);
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  CHECK(std::abs(summary["parameters"][0]["sd"].get<double>() - 1.0) < 0.15);
  o = run_sample(dir, run + " --stack-depth 20");
  CHECK(o.exit_code == 1);
  CHECK(o.err.find("faulted: stack_overflow") != std::string::npos);
  CHECK(o.err.find("--stack-depth") != std::string::npos);
  o = run_sample(dir, run + " --stack-depth 64");
  CHECK_MESSAGE(o.exit_code == 0, o.err);
  o = run_sample(dir, run + " --stack-depth 12");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("--stack-depth 12 is less than the tree's recursion needs (--max-depth 10 + "
                   "8 = 18)") != std::string::npos);
}

TEST_CASE("sample files: a write that fails says why and leaves no partial file") {
  const TempDir dir("ab_fit_write");
  // A child limited to 4-byte files (RLIMIT_FSIZE, SIGXFSZ ignored) stands for a full disk
  // without a device or a mount: its writes past 4 bytes fail with EFBIG.
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit = {4, 4};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const auto s = ab::cli::write_file(dir.file("x.json"), "more than four bytes");
    const std::string message = s.ok() ? "ok" : s.error();
    [[maybe_unused]] const ssize_t n = ::write(pipe_fds[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string message(512, '\0');
  const ssize_t n = ::read(pipe_fds[0], message.data(), message.size());
  message.resize(n > 0 ? static_cast<size_t>(n) : 0);
  ::close(pipe_fds[0]);
  ::waitpid(pid, nullptr, 0);
  CHECK(message == fmt::format("cannot write '{}': File too large", dir.file("x.json")));
  CHECK(!fs::exists(dir.file("x.json")));

  const auto missing = ab::cli::write_file(dir.file("no/such/folder/x.json"), "{}");
  REQUIRE(!missing.ok());
  CHECK(missing.error().find("No such file or directory") != std::string::npos);
  CHECK(ab::cli::write_file(dir.file("x.json"), "{}").ok());
  CHECK(read_bytes(dir.file("x.json")) == "{}");
}

}  // namespace
