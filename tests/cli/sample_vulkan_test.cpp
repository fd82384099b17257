// `autobatch sample` on the Vulkan engine, as a user runs it (the built binary, the validation
// layer on): every chain's draws and per-draw statistics equal the interpreter's bit for bit,
// without warm-up on the default schedule (local/lane) and the global one, and after warm-up on
// every schedule (docs/nuts.md).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/sample_runner.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;

using ab::testing::read_bytes;

// Runs `autobatch sample ARGS --out DIR/NAME` and returns the output folder; requires exit 0
// and no validation message.
fs::path sample(const fs::path& dir, const std::string& name, const std::string& args) {
  const std::string command = fmt::format("cd '{}' && '{}' sample {} --out {} > {}.out 2> {}.err",
                                          dir.string(), AB_CLI, args, name, name, name);
  const int status = std::system(command.c_str());
  const std::string err = read_bytes(dir / (name + ".err"));
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), err);
  CHECK(err.find("validation") == std::string::npos);
  return dir / name;
}

}  // namespace

TEST_CASE("sample on vulkan: local and global schedules give interp's draws bit for bit") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_sample_vk_{}", ::getpid());
  fs::create_directories(dir);
  const std::string common = fmt::format(
      "{}/samples/models/banana.ab --chains 5 --draws 30 --warmup 0 --seed 4", AB_SOURCE_DIR);
  const fs::path interp = sample(dir, "interp", common + " --backend interp");
  for (const char* schedule : {"", "--schedule global"}) {
    CAPTURE(schedule);
    const fs::path gpu =
        sample(dir, "vulkan", fmt::format("{} --backend vulkan --validation {}", common, schedule));
    for (const char* file : {"draws.npy", "accept_stat.npy", "step_size.npy", "tree_depth.npy",
                             "n_grad.npy", "divergent.npy", "energy.npy"}) {
      CAPTURE(file);
      const std::string want = read_bytes(interp / file);
      CHECK(want.size() > 100);
      CHECK(read_bytes(gpu / file) == want);
    }
  }
  fs::remove_all(dir);
}

// A density's domain error is a divergence (docs/nuts.md): rejection is a NaN density, a value
// like any other, so Vulkan's chains reject where the vm's do, warm-up included.
TEST_CASE("sample on vulkan: a density's domain errors reject proposals as on the vm") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_sample_vk_rej_{}", ::getpid());
  fs::create_directories(dir);
  const std::string common = fmt::format(
      "{}/tests/data/models/half_normal_rejecting.ab --chains 3 --warmup 40 --draws 30 --seed 6",
      AB_SOURCE_DIR);
  const fs::path vm = sample(dir, "vm", common + " --backend vm");
  const fs::path gpu = sample(dir, "vulkan", common + " --backend vulkan --validation");
  for (const char* file : {"draws.npy", "divergent.npy", "n_grad.npy", "lp.npy"}) {
    CAPTURE(file);
    CHECK(read_bytes(gpu / file) == read_bytes(vm / file));
  }
  const std::string divergent = read_bytes(vm / "divergent.npy");
  CHECK(divergent.find('\x01') != std::string::npos);  // some proposals were rejected
  fs::remove_all(dir);
}

// Issue 11: after warm-up, lanes of a subgroup run for long in one dispatch, and on lavapipe the
// loops inside the sampler's blocks (copies of its trees, the random draws) used to be cut short
// by the driver's loop cap, shared by every loop of a SIMD row: chains left the interpreter's
// path (32 of these 64 on local/lane, 17 on local/subgroup, 50 on local/workgroup). Global runs
// 8 chains, which fit one subgroup: the fused kernel that takes many steps per dispatch.
TEST_CASE(
    "sample on vulkan: after warm-up the 3-d Gaussian's draws are interp's on every schedule") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_sample_vk_warm_{}", ::getpid());
  fs::create_directories(dir);
  const std::string model = fmt::format("{}/tests/data/models/gaussian_iid.ab", AB_SOURCE_DIR);
  struct Run {
    const char* schedule;
    int chains;
  };
  for (const Run& run :
       {Run{"--schedule local --local-scope lane", 64},
        Run{"--schedule local --local-scope subgroup", 64},
        Run{"--schedule local --local-scope workgroup", 64}, Run{"--schedule global", 8}}) {
    CAPTURE(run.schedule);
    const std::string common =
        fmt::format("{} --chains {} --warmup 50 --draws 3 --seed 1", model, run.chains);
    const fs::path interp = sample(dir, "interp", common + " --backend interp");
    const fs::path gpu = sample(
        dir, "vulkan", fmt::format("{} --backend vulkan --validation {}", common, run.schedule));
    for (const char* file : {"draws.npy", "accept_stat.npy", "step_size.npy", "tree_depth.npy",
                             "n_grad.npy", "energy.npy"}) {
      CAPTURE(file);
      const std::string want = read_bytes(interp / file);
      CHECK(want.size() > 80);
      CHECK(read_bytes(gpu / file) == want);
    }
  }
  fs::remove_all(dir);
}

// A struct of bounded parameters (tests/data/models/constrained.ab: Beta(3, 5), 1 + Exp(1),
// 4 - Exp(2), two standard normals): the Vulkan draws and lp__ are the vm's bit for bit, and so
// recover the same known marginals.
TEST_CASE("sample on vulkan: a bounded struct model gives the vm's draws and its known means") {
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("ab_sample_vk_bounded_{}", ::getpid());
  fs::create_directories(dir);
  const std::string common = fmt::format(
      "{}/tests/data/models/constrained.ab --chains 8 --draws 1000 --warmup 300 --seed 5",
      AB_SOURCE_DIR);
  const fs::path vm = sample(dir, "vm", common + " --backend vm");
  const fs::path gpu = sample(dir, "vulkan", common + " --backend vulkan --validation");
  for (const char* file : {"draws.npy", "lp.npy", "energy.npy", "n_grad.npy"}) {
    CAPTURE(file);
    const std::string want = read_bytes(vm / file);
    CHECK(want.size() > 1000);
    CHECK(read_bytes(gpu / file) == want);
  }
  const nlohmann::json summary = nlohmann::json::parse(read_bytes(gpu / "summary.json"));
  const double truth[] = {3.0 / 8, 2.0, 3.5, 0.0, 0.0}, sd[] = {0.161, 1.0, 0.5, 1.0, 1.0};
  for (size_t j = 0; j < 5; ++j) {
    const nlohmann::json& p = summary["parameters"][j];
    CAPTURE(j);
    CHECK(std::abs(double(p["mean"]) - truth[j]) < 5 * double(p["mcse_mean"]) + 0.02 * sd[j]);
  }
  fs::remove_all(dir);
}

// Stan's constrained types with transformed parameters and generated quantities
// (tests/data/models/constrained_types.ab): the Vulkan draws, quantities drawn from the chains'
// streams included, are the vm's bit for bit.
TEST_CASE("sample on vulkan: constrained types and generated quantities give the vm's draws") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_sample_vk_types_{}", ::getpid());
  fs::create_directories(dir);
  const std::string common = fmt::format(
      "{}/tests/data/models/constrained_types.ab --chains 4 --draws 100 --warmup 100 --seed 6",
      AB_SOURCE_DIR);
  const fs::path vm = sample(dir, "vm", common + " --backend vm");
  const fs::path gpu = sample(dir, "vulkan", common + " --backend vulkan --validation");
  for (const char* file : {"draws.npy", "lp.npy", "n_grad.npy"}) {
    CAPTURE(file);
    const std::string want = read_bytes(vm / file);
    CHECK(want.size() > 1000);
    CHECK(read_bytes(gpu / file) == want);
  }
  fs::remove_all(dir);
}

// Before the first step there is nothing to keep, and the driver may compile for minutes (a
// 3-d model's sampler takes ~30 s on lavapipe, a 100-d one more than ten): a SIGTERM then ends
// the run at once, as `timeout` expects, instead of waiting for a step boundary. The model's
// constant is new to every run, so no kernel cache holds its kernels.
TEST_CASE("sample on vulkan: SIGTERM while the kernels compile ends the run at once") {
  const ab::testing::TempDir dir("ab_sample_vk_sigterm");
  const auto unique = std::chrono::steady_clock::now().time_since_epoch().count() % 1000000;
  dir.write("model.ab", fmt::format("const D: int = 3;\n"
                                    "struct LogDensity {{ value: float, grad: float[D] }}\n"
                                    "fn log_density(q: float[D]) -> LogDensity {{\n"
                                    "  let s = 1.0 + float({}) * 1.0e-9;\n"
                                    "  return LogDensity {{ value: -0.5 * s * dot(q, q), grad: "
                                    "q * -s }};\n}}\n",
                                    unique));
  ab::testing::SampleOutcome o =
      ab::testing::run_sample(dir, "model.ab --chains 2 --draws 20 --backend vm --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const std::string previous = read_bytes(dir.path / "fit" / "draws.npy");
  REQUIRE(previous.size() > 100);
  o = ab::testing::interrupt_sample(
      dir, "model.ab --chains 2 --draws 20 --backend vulkan",
      [](const fs::path& out) {
        if (!fs::exists(out / ".autobatch-sample.partial")) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the compile
        return true;
      },
      SIGTERM);
  CHECK_MESSAGE(o.exit_code == 128 + SIGTERM, o.err);
  CHECK(o.err.find("stopped before any draw, while the run was being prepared") !=
        std::string::npos);
  CHECK(read_bytes(dir.path / "fit" / "draws.npy") == previous);
  // The next run removes the staging folder the signal left and writes its fit.
  o = ab::testing::run_sample(dir, "model.ab --chains 2 --draws 30 --backend vm --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  CHECK(!fs::exists(dir.path / "fit" / ".autobatch-sample.partial"));
  CHECK(read_bytes(dir.path / "fit" / "draws.npy") != previous);
}

// Issue 26: 4096 chains, the paper's scale of batch, on the default schedule (local/lane, with
// the automatic residency). A chain's draws depend only on its index and the seed, so the
// interpreter's 4096 chains are the reference for every one of them, the last workgroups'
// included.
TEST_CASE("sample on vulkan: 4096 chains of the 3-d Gaussian give interp's draws bit for bit") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_sample_vk_4096_{}", ::getpid());
  fs::create_directories(dir);
  const std::string common = fmt::format(
      "{}/tests/data/models/gaussian_iid.ab --chains 4096 --warmup 20 --draws 3 --seed 2",
      AB_SOURCE_DIR);
  const fs::path interp = sample(dir, "interp", common + " --backend interp");
  const fs::path gpu = sample(dir, "vulkan", common + " --backend vulkan --validation");
  for (const char* file : {"draws.npy", "accept_stat.npy", "step_size.npy", "tree_depth.npy",
                           "n_grad.npy", "divergent.npy", "energy.npy", "lp.npy"}) {
    CAPTURE(file);
    const std::string want = read_bytes(interp / file);
    CHECK(want.size() > 4096 * 3);
    CHECK(read_bytes(gpu / file) == want);
  }
  fs::remove_all(dir);
}
