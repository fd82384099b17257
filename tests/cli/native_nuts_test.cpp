// bench/native_nuts.h is sampler/nuts.ab by hand: `autobatch sample` on the CPU backends and
// native_nuts_chain give the same draws and per-draw statistics bit for bit, chain by chain, on
// the shipped models (warm-up long enough for the metric windows, a given --init, --no-metric).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "autobatch/npy.h"
#include "bench/native_nuts.h"
#include "support/read_bytes.h"

namespace {

namespace fs = std::filesystem;
using ab::bench::NutsModel;
using ab::bench::NutsSettings;
using ab::testing::read_bytes;

const fs::path kSource = fs::path(AB_SOURCE_DIR);

fs::path scratch_dir() {
  static int counter = 0;
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("ab_native_nuts_{}_{}", ::getpid(), counter++);
  fs::create_directories(dir);
  return dir;
}

// The float32 elements of a .npy file.
std::vector<float> read_floats(const fs::path& path) {
  auto array = ab::read_npy(path.string());
  REQUIRE_MESSAGE(array.ok(), path.string());
  REQUIRE(array->type == ab::NpyType::Float32);
  std::vector<float> out(array->elements());
  std::memcpy(out.data(), array->data.data(), out.size() * sizeof(float));
  return out;
}

template <typename T>
std::vector<T> read_elements(const fs::path& path, ab::NpyType type,
                             const std::vector<uint64_t>& shape) {
  auto array = ab::read_npy(path.string());
  REQUIRE_MESSAGE(array.ok(), path.string());
  REQUIRE(array->type == type);
  REQUIRE(array->shape == shape);
  std::vector<T> out(array->elements());
  std::memcpy(out.data(), array->data.data(), out.size() * sizeof(T));
  return out;
}

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

struct Run {
  std::string model;       // path under the source tree
  std::string extra_args;  // e.g. uniforms, --no-metric
  NutsSettings settings;
  uint64_t seed = 0;
  uint32_t chains = 3;
  std::vector<float> inits;  // chains x D, or empty for the random start
};

Run make_run(std::string model, std::string extra_args, NutsSettings settings, uint64_t seed,
             uint32_t chains = 3, std::vector<float> inits = {}) {
  return Run{std::move(model), std::move(extra_args), settings, seed, chains, std::move(inits)};
}

// Runs `autobatch sample` on `backend` and requires every chain's draws and per-draw statistics
// to equal native_nuts_chain's bit for bit.
void check_bit_identical(const NutsModel& model, const Run& run, const char* backend) {
  CAPTURE(run.model);
  CAPTURE(backend);
  const fs::path dir = scratch_dir();
  const NutsSettings& s = run.settings;
  std::string args = fmt::format(
      "{} {} --backend {} --chains {} --draws {} --warmup {} --seed {} --leaf-steps {} "
      "--max-depth {}",
      (kSource / run.model).string(), run.extra_args, backend, run.chains, s.draws, s.warmup,
      run.seed, s.leaf_steps, s.max_depth);
  if (!s.adapt_metric) args += " --no-metric";
  if (!s.search_step) args += fmt::format(" --no-step-search --step-size {}", s.step_size);
  if (s.step_jitter > 0.0f) args += fmt::format(" --step-jitter {}", s.step_jitter);
  const uint32_t D = model.dimension;
  if (!run.inits.empty()) {
    REQUIRE(run.inits.size() == size_t{run.chains} * D);
    std::ofstream(dir / "init.npy", std::ios::binary) << ab::encode_npy(
        "<f4", {run.chains, D},
        std::string(reinterpret_cast<const char*>(run.inits.data()), run.inits.size() * 4));
    args += " --init " + (dir / "init.npy").string();
  }
  const std::string command = fmt::format(
      "cd '{}' && '{}' sample {} --out fit > out.txt 2> err.txt", dir.string(), AB_CLI, args);
  const int status = std::system(command.c_str());
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), read_bytes(dir / "err.txt"));

  using ab::NpyType;
  const fs::path fit = dir / "fit";
  const std::vector<uint64_t> cells = {run.chains, s.draws};
  const auto draws =
      read_elements<uint32_t>(fit / "draws.npy", NpyType::Float32, {run.chains, s.draws, D});
  const auto accept = read_elements<uint32_t>(fit / "accept_stat.npy", NpyType::Float32, cells);
  const auto step = read_elements<uint32_t>(fit / "step_size.npy", NpyType::Float32, cells);
  const auto energy = read_elements<uint32_t>(fit / "energy.npy", NpyType::Float32, cells);
  const auto depth = read_elements<int32_t>(fit / "tree_depth.npy", NpyType::Int32, cells);
  const auto grads = read_elements<int32_t>(fit / "n_grad.npy", NpyType::Int32, cells);
  const auto divergent = read_elements<uint8_t>(fit / "divergent.npy", NpyType::Bool, cells);

  for (uint32_t chain = 0; chain < run.chains; ++chain) {
    CAPTURE(chain);
    const ab::bench::NutsChainResult native = ab::bench::native_nuts_chain(
        model, s, run.seed, chain, run.inits.empty() ? nullptr : run.inits.data() + chain * D);
    REQUIRE(native.draws.size() == s.draws);
    for (uint32_t i = 0; i < s.draws; ++i) {
      CAPTURE(i);
      const ab::bench::NutsDraw& d = native.draws[i];
      const uint64_t k = uint64_t{chain} * s.draws + i;
      for (uint32_t j = 0; j < D; ++j) {
        CAPTURE(j);
        REQUIRE(draws[k * D + j] == bits(d.q[j]));
      }
      REQUIRE(accept[k] == bits(d.accept));
      REQUIRE(step[k] == bits(d.step_size));
      REQUIRE(energy[k] == bits(d.energy));
      REQUIRE(depth[k] == d.depth);
      REQUIRE(grads[k] == d.grads);
      REQUIRE(divergent[k] == (d.divergent ? 1 : 0));
    }
  }
}

NutsSettings settings(uint32_t warmup, uint32_t draws) {
  NutsSettings s;
  s.warmup = warmup;
  s.draws = draws;
  return s;
}

std::string uniform_arg(const char* name, const fs::path& file) {
  return fmt::format("-u {}=@{}", name, (kSource / file).string());
}

}  // namespace

TEST_CASE("native nuts: banana equals interp and vm bit for bit through the metric windows") {
  const Run run = make_run("samples/models/banana.ab", "", settings(400, 300), 11);
  const NutsModel model = ab::bench::nuts_banana_model();
  check_bit_identical(model, run, "interp");
  check_bit_identical(model, run, "vm");
  // Chains spread over threads are the chains run one by one.
  const ab::bench::NutsRunResult threaded =
      ab::bench::native_nuts_chains(model, run.settings, run.seed, 3, nullptr, 2);
  REQUIRE(threaded.chains.size() == 3);
  uint64_t grads = 0;
  for (uint32_t chain = 0; chain < 3; ++chain) {
    const ab::bench::NutsChainResult alone =
        ab::bench::native_nuts_chain(model, run.settings, run.seed, chain, nullptr);
    const ab::bench::NutsChainResult& c = threaded.chains[chain];
    CHECK(c.grads == alone.grads);
    CHECK(bits(c.step_size) == bits(alone.step_size));
    REQUIRE(c.draws.size() == alone.draws.size());
    CHECK(c.draws.back().q == alone.draws.back().q);
    grads += static_cast<uint64_t>(c.grads);
  }
  CHECK(threaded.grads == grads);
}

TEST_CASE("native nuts: small Gaussians equal interp bit for bit, with --init and --no-metric") {
  // Short leaves and a depth limit that is reached.
  NutsSettings shallow = settings(160, 60);
  shallow.leaf_steps = 1;
  shallow.max_depth = 2;
  check_bit_identical(ab::bench::nuts_gaussian_iid_model(),
                      make_run("tests/data/models/gaussian_iid.ab", "", shallow, 5), "interp");
  NutsSettings no_metric = settings(160, 60);
  no_metric.adapt_metric = false;
  no_metric.step_jitter = 0.25f;  // a jittered step size draws where nuts.ab draws
  check_bit_identical(ab::bench::nuts_gaussian_scaled_model(),
                      make_run("tests/data/models/gaussian_scaled.ab", "", no_metric, 6), "interp");
  Run given_init = make_run("tests/data/models/gaussian_correlated.ab", "", settings(160, 60), 7, 3,
                            {0.5f, -1.5f, 3.0f, 3.0f, -0.25f, 1e-3f});
  check_bit_identical(ab::bench::nuts_gaussian_correlated_model(), given_init, "interp");
  // A fixed step size, as the NUTS benchmark runs it (no search, no warm-up).
  NutsSettings fixed = settings(0, 40);
  fixed.search_step = false;
  fixed.step_size = 0.375f;
  check_bit_identical(ab::bench::nuts_gaussian_correlated_model(),
                      make_run("tests/data/models/gaussian_correlated.ab", "", fixed, 8), "vm");
}

TEST_CASE("native nuts: the small logistic regression equals interp bit for bit") {
  const fs::path data = "tests/data/models";
  const NutsModel model = ab::bench::nuts_logistic_regression_loop_model(
      read_floats(kSource / data / "logreg_small_X.npy"),
      read_floats(kSource / data / "logreg_small_y.npy"), 3, 20);
  Run run = make_run("tests/data/models/logreg_small.ab",
                     uniform_arg("X", data / "logreg_small_X.npy") + " " +
                         uniform_arg("y", data / "logreg_small_y.npy"),
                     settings(160, 40), 3);
  check_bit_identical(model, run, "interp");
}

// The product forms' gradients are derived by the compiler; the native models compute the same
// operations, products in the language's blocked summation order (autobatch/numerics.h).
TEST_CASE("native nuts: the 100-dimensional correlated Gaussian, P @ q, equals interp and vm") {
  const fs::path precision = "samples/data/gaussian_precision.npy";
  const NutsModel model =
      ab::bench::nuts_correlated_gaussian_model(read_floats(kSource / precision), 100);
  Run run = make_run("samples/models/correlated_gaussian.ab", uniform_arg("precision", precision),
                     settings(150, 10), 4, 2);
  check_bit_identical(model, run, "interp");
  check_bit_identical(model, run, "vm");
}

TEST_CASE("native nuts: the 100-dimensional correlated Gaussian's loop equals interp bit for bit") {
  const fs::path precision = "samples/data/gaussian_precision.npy";
  const NutsModel model =
      ab::bench::nuts_correlated_gaussian_loop_model(read_floats(kSource / precision), 100);
  Run run = make_run("samples/models/correlated_gaussian_loop.ab",
                     uniform_arg("precision", precision), settings(150, 10), 4, 2);
  check_bit_identical(model, run, "interp");
}

TEST_CASE("native nuts: the 10000-point logistic regression, X @ w, equals vm bit for bit") {
  const fs::path data = "samples/data";
  const NutsModel model =
      ab::bench::nuts_logistic_regression_model(read_floats(kSource / data / "logreg_X.npy"),
                                                read_floats(kSource / data / "logreg_y.npy"), 100);
  Run run = make_run(
      "samples/models/logistic_regression.ab",
      uniform_arg("X", data / "logreg_X.npy") + " " + uniform_arg("y", data / "logreg_y.npy"),
      settings(3, 3), 2, 2);
  check_bit_identical(model, run, "vm");
}

TEST_CASE("native nuts: the 10000-point logistic regression's loop equals vm bit for bit") {
  const fs::path data = "samples/data";
  const NutsModel model = ab::bench::nuts_logistic_regression_loop_model(
      read_floats(kSource / data / "logreg_X.npy"), read_floats(kSource / data / "logreg_y.npy"),
      100, 100);
  Run run = make_run(
      "samples/models/logistic_regression_loop.ab",
      uniform_arg("X", data / "logreg_X.npy") + " " + uniform_arg("y", data / "logreg_y.npy"),
      settings(3, 3), 2, 2);
  check_bit_identical(model, run, "vm");
}
