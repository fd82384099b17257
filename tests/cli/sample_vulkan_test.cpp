// `autobatch sample` on the Vulkan engine, as a user runs it (the built binary, the validation
// layer on): every chain's draws and per-draw statistics equal the interpreter's bit for bit,
// without warm-up on the default schedule (local/lane) and the global one, and after warm-up on
// every schedule (docs/nuts.md).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

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
