// `autobatch sample` (docs/nuts.md), run as a user runs it: the built binary in a scratch
// directory. The CPU backends give the same draws bit for bit; on Gaussians of several shapes and
// on a small logistic regression the posterior's mean and spread match the truth; bad models and
// options get one clear message; a NaN log density is a divergence, a model's fault names its
// chain while the other chains finish.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autobatch/context.h"
#include "autobatch/npy.h"
#include "support/read_bytes.h"
#include "tools/sample/nuts_bench.h"
#include "tools/sample/sample_command.h"

namespace {

namespace fs = std::filesystem;
using ab::testing::read_bytes;
using nlohmann::json;

const fs::path kModels = fs::path(AB_SOURCE_DIR) / "tests" / "data" / "models";

struct Sampled {
  int exit_code = -1;
  std::string err;
  fs::path out;
  json summary() const { return json::parse(read_bytes(out / "summary.json")); }
};

// Runs `autobatch sample ARGS --out DIR` in a fresh directory under the system's temp dir.
Sampled sample(const std::string& args) {
  static int counter = 0;
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("ab_sample_{}_{}", ::getpid(), counter++);
  fs::create_directories(dir);
  const std::string command = fmt::format(
      "cd '{}' && '{}' sample {} --out fit > out.txt 2> err.txt", dir.string(), AB_CLI, args);
  const int status = std::system(command.c_str());
  Sampled s;
  s.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  s.err = read_bytes(dir / "err.txt");
  s.out = dir / "fit";
  return s;
}

std::string model(const char* name) {
  return (kModels / name).string();
}

// The posterior of each parameter matches (mean, sd): the mean within 5 Monte-Carlo standard
// errors (plus 2% of sd, for chains whose antithetic draws make the MCSE tiny), the sd within 10%.
void check_posterior(const json& summary, const std::vector<std::pair<double, double>>& truth) {
  REQUIRE(summary["parameters"].size() == truth.size());
  CHECK(summary["divergences"] == 0);
  for (size_t j = 0; j < truth.size(); ++j) {
    const json& p = summary["parameters"][j];
    CAPTURE(j);
    const double mean = p["mean"], sd = p["sd"], mcse = p["mcse_mean"], rhat = p["rhat"];
    CHECK(std::abs(mean - truth[j].first) < 5 * mcse + 0.02 * truth[j].second);
    CHECK(std::abs(sd - truth[j].second) < 0.1 * truth[j].second);
    CHECK(rhat < 1.01);
  }
}

// Samples `common` on the interpreter and on the vm (default threads and `threads`), checks that
// `files` are the same bytes on all three, and returns the vm's run.
Sampled same_on_interp_and_vm(const std::string& common, const std::string& threads,
                              std::initializer_list<const char*> files) {
  const Sampled interp = sample(common + " --backend interp");
  const Sampled vm = sample(common + " --backend vm");
  const Sampled vm_threads = sample(common + " --backend vm --threads " + threads);
  REQUIRE_MESSAGE(interp.exit_code == 0, interp.err);
  REQUIRE_MESSAGE(vm.exit_code == 0, vm.err);
  REQUIRE_MESSAGE(vm_threads.exit_code == 0, vm_threads.err);
  for (const char* file : files) {
    CAPTURE(file);
    const std::string a = read_bytes(interp.out / file);
    CHECK(a.size() > 100);
    CHECK(a == read_bytes(vm.out / file));
    CHECK(a == read_bytes(vm_threads.out / file));
  }
  return vm;
}

TEST_CASE("sample: interp and vm (any --threads) give the same draws and statistics bit for bit") {
  const std::string common =
      model("gaussian_correlated.ab") + " --chains 5 --draws 40 --warmup 160 --seed 9";
  const Sampled vm =
      same_on_interp_and_vm(common, "3",
                            {"draws.npy", "accept_stat.npy", "step_size.npy", "tree_depth.npy",
                             "n_grad.npy", "divergent.npy", "energy.npy"});
  auto draws = ab::read_npy((vm.out / "draws.npy").string());
  REQUIRE(draws.ok());
  CHECK(draws->shape == std::vector<uint64_t>{5, 40, 2});
  // Another seed gives other draws.
  const Sampled other = sample(model("gaussian_correlated.ab") +
                               " --chains 5 --draws 40 --warmup 160 --seed 10 --backend vm");
  CHECK(read_bytes(other.out / "draws.npy") != read_bytes(vm.out / "draws.npy"));
}

// A row loop over 1,192 data rows runs as array code, and the vm runs its gradient's block a
// lane at a time (cpu/vm_lane_alone.h: the chains meet there a few at a time): the draws are
// still the interpreter's bit for bit, on one thread or on every core.
TEST_CASE("sample: a row loop's gradient run a lane at a time gives the interpreter's draws") {
  const fs::path samples = fs::path(AB_SOURCE_DIR) / "samples";
  const std::string common =
      fmt::format("{} -u log_earn=@{} -u height=@{} --chains 6 --draws 15 --warmup 15 --seed 3",
                  (samples / "models" / "earnings_logearn_height.ab").string(),
                  (samples / "data" / "earnings_log_earn.npy").string(),
                  (samples / "data" / "earnings_height.npy").string());
  same_on_interp_and_vm(common, "1", {"draws.npy", "lp.npy", "n_grad.npy", "energy.npy"});
}

TEST_CASE("sample: --backend auto is vulkan on a GPU or when a Vulkan option asks, else the vm") {
  auto devices = ab::list_devices();
  const bool gpu = devices && std::any_of(devices->begin(), devices->end(),
                                          [](const ab::DeviceInfo& d) { return d.type != "cpu"; });
  const std::string expected = gpu ? "vulkan" : "vm";
  ab::cli::SampleCommand command;
  CHECK(command.backend == "auto");
  const ab::cli::BackendChoice chosen = ab::cli::choose_sample_backend(command);
  CHECK(chosen.name == expected);
  CHECK(chosen.note.empty() == gpu);
  command.device.schedule = ab::Schedule::Local;
  CHECK(ab::cli::choose_sample_backend(command).name == "vulkan");
  command = {};
  command.device.vulkan.context.device_index = 0;
  CHECK(ab::cli::choose_sample_backend(command).name == "vulkan");
  command = {};
  command.backend = "interp";
  CHECK(ab::cli::choose_sample_backend(command).name == "interp");

  // Through the CLI: the chosen backend is in summary.json, and on a CPU-only machine the note
  // says why the vm runs.
  const Sampled s = sample(model("gaussian_iid.ab") + " --chains 2 --draws 5 --warmup 5");
  REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  CHECK(s.summary()["backend"] == expected);
  CHECK((s.err.find("note: sampling on the vm") != std::string::npos) == !gpu);
}

TEST_CASE("sample: Gaussians of several shapes have the true mean and sd") {
  const std::string run = " --chains 8 --draws 2000 --warmup 500 --seed 7 --backend vm";
  const Sampled iid = sample(model("gaussian_iid.ab") + run);
  REQUIRE_MESSAGE(iid.exit_code == 0, iid.err);
  check_posterior(iid.summary(), {{0, 1}, {0, 1}, {0, 1}});
  // Scales 1 and 10: the diagonal metric adapts to them.
  const Sampled scaled = sample(model("gaussian_scaled.ab") + run);
  REQUIRE_MESSAGE(scaled.exit_code == 0, scaled.err);
  check_posterior(scaled.summary(), {{0, 1}, {0, 10}});
  // Correlation 0.95: long trajectories (deeper trees).
  const Sampled correlated = sample(model("gaussian_correlated.ab") + run);
  REQUIRE_MESSAGE(correlated.exit_code == 0, correlated.err);
  check_posterior(correlated.summary(), {{0, 1}, {0, 1}});
  auto depth = ab::read_npy((correlated.out / "tree_depth.npy").string());
  REQUIRE(depth.ok());
  double mean_depth = 0;
  for (uint64_t k = 0; k < depth->elements(); ++k)
    mean_depth += static_cast<double>(std::get<int64_t>(depth->at(k)));
  CHECK(mean_depth / static_cast<double>(depth->elements()) > 1.5);
}

// Models written as just their log density (docs/nuts.md): the sampler derives the gradient.
TEST_CASE("sample: models written as just their log density sample the true posterior") {
  const std::string common =
      model("gaussian_correlated_ad.ab") + " --chains 8 --draws 2000 --warmup 500 --seed 7";
  const Sampled vm = sample(common + " --backend vm");
  REQUIRE_MESSAGE(vm.exit_code == 0, vm.err);
  check_posterior(vm.summary(), {{0, 1}, {0, 1}});
  // The derived gradient is ordinary code: interp gives the vm's draws bit for bit.
  const std::string short_run =
      model("gaussian_correlated_ad.ab") + " --chains 3 --draws 30 --warmup 60 --seed 9";
  const Sampled a = sample(short_run + " --backend interp");
  const Sampled b = sample(short_run + " --backend vm");
  REQUIRE_MESSAGE(a.exit_code == 0, a.err);
  REQUIRE_MESSAGE(b.exit_code == 0, b.err);
  CHECK(read_bytes(a.out / "draws.npy") == read_bytes(b.out / "draws.npy"));
  // A data model: loops over rows, log1p_exp; the posterior mean of the exact computation.
  const Sampled fit = sample(model("logreg_small_ad.ab") + " -u X=@" + model("logreg_small_X.npy") +
                             " -u y=@" + model("logreg_small_y.npy") +
                             " --chains 8 --draws 1000 --warmup 400 --seed 3 --backend vm");
  REQUIRE_MESSAGE(fit.exit_code == 0, fit.err);
  auto mean = ab::read_npy(model("logreg_small_posterior_mean.npy"));
  auto cov = ab::read_npy(model("logreg_small_posterior_cov.npy"));
  REQUIRE(mean.ok());
  REQUIRE(cov.ok());
  const json summary = fit.summary();
  for (size_t j = 0; j < 3; ++j) {
    const json& p = summary["parameters"][j];
    const double truth = std::get<double>(mean->at(j)),
                 sd = std::sqrt(std::get<double>(cov->at(j * 3 + j)));
    CAPTURE(j);
    CHECK(std::abs(static_cast<double>(p["mean"]) - truth) <
          5 * static_cast<double>(p["mcse_mean"]) + 0.02 * sd);
    CHECK(std::abs(static_cast<double>(p["sd"]) - sd) < 0.1 * sd);
  }
}

// Radul et al. 2020, Figure 7: chains synchronised on gradients across trajectories use the
// gradient evaluation better than chains synchronised on trajectory boundaries. The local static
// figure is recomputed here from n_grad.npy, so the summary's own formula is checked too.
TEST_CASE("sample: on the vm, chains meet at every gradient, not at trajectory boundaries") {
  const Sampled s = sample(model("gaussian_correlated.ab") +
                           " --chains 16 --draws 10 --warmup 0 --seed 5 --backend vm");
  REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  auto grads = ab::read_npy((s.out / "n_grad.npy").string());
  REQUIRE(grads.ok());
  uint64_t done = 0, slots = 0;
  for (uint64_t t = 0; t < 10; ++t) {
    int64_t longest = 0;
    for (uint64_t c = 0; c < 16; ++c) {
      const int64_t g = std::get<int64_t>(grads->at(c * 10 + t));
      done += static_cast<uint64_t>(g);
      longest = std::max(longest, g);
    }
    slots += static_cast<uint64_t>(longest) * 16;
  }
  const double local_static = static_cast<double>(done) / static_cast<double>(slots);
  const json summary = s.summary();
  CHECK(static_cast<double>(summary["local_static_utilization"]) ==
        doctest::Approx(local_static).epsilon(1e-12));
  // The trajectories' lengths differ, so synchronising on their ends wastes gradient slots.
  CHECK(local_static < 0.8);
  const double pc = summary["gradient_utilization"];
  CHECK(pc <= 1.0);
  CHECK(pc > 1.5 * local_static);
  // The model's log density has no data-dependent branch: every live chain takes part.
  CHECK(static_cast<double>(summary["gradient_utilization_live"]) == doctest::Approx(1.0));
  // interp has no batch-wide scheduler: no figure rather than a wrong one.
  const Sampled interp = sample(model("gaussian_correlated.ab") +
                                " --chains 16 --draws 10 --warmup 0 --seed 5 --backend interp");
  REQUIRE_MESSAGE(interp.exit_code == 0, interp.err);
  CHECK(interp.summary()["gradient_utilization"].is_null());
  CHECK(read_bytes(interp.out / "draws.npy") == read_bytes(s.out / "draws.npy"));
}

// `autobatch bench --programs nuts_gaussian`: every row ran and was checked against the native
// sampler, with the transitions per chain --transitions asked for, the native and vm rows
// evaluate the same gradients (same chains, same draws), and the utilization table has a row
// per chain count.
TEST_CASE("sample: the NUTS bench rows are checked and agree on the work done") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_nuts_bench_{}", ::getpid());
  fs::create_directories(dir);
  const std::string command = fmt::format(
      "cd '{}' && '{}' bench --programs nuts_gaussian --systems native,vm --batches "
      "1,3 --quick --transitions 3 --json '{}' > '{}' 2> '{}'",
      AB_SOURCE_DIR, AB_CLI, (dir / "rows.json").string(), (dir / "out.txt").string(),
      (dir / "err.txt").string());
  const int status = std::system(command.c_str());
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), read_bytes(dir / "err.txt"));
  const json rows = json::parse(read_bytes(dir / "rows.json"))["nuts_rows"];
  std::map<std::pair<std::string, uint32_t>, uint64_t> grads;
  int utilization_rows = 0;
  for (const json& row : rows) {
    if (row["program"] == "nuts_gaussian_utilization") {
      ++utilization_rows;
      CHECK(static_cast<double>(row["gradient_utilization"]) <= 1.0);
      continue;
    }
    CHECK(row["status"] == "ok");
    CHECK(row["transitions"] == 3);  // --transitions, not the row's own 10
    CHECK(static_cast<double>(row["gradients_per_second"]) > 0);
    CHECK(static_cast<double>(row["gradients_per_cpu_second"]) > 0);
    grads[{row["system"], row["chains"]}] = row["gradients"];
  }
  CHECK(utilization_rows == 4);  // 1 and 3 chains, over 1 and 10 trajectories
  REQUIRE(grads.size() == 4);
  CHECK(grads[{"native", 3}] == grads[{"vm", 3}]);
  CHECK(grads[{"native", 1}] == grads[{"vm", 1}]);
  CHECK(grads[{"native", 3}] > grads[{"native", 1}]);
  const std::string table = read_bytes(dir / "out.txt");
  CHECK(table.find("best/native") != std::string::npos);
  CHECK(table.find("live/static") != std::string::npos);
  fs::remove_all(dir);
}

// The `stan` system needs R and rstan, an optional install: where Rscript cannot be found, its
// rows are skipped (not failed) and the table says how to install it, while the other systems'
// rows run as usual.
TEST_CASE("sample: the bench's stan rows say how to install rstan where R is missing") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_nuts_stan_{}", ::getpid());
  fs::create_directories(dir);
  const std::string command = fmt::format(
      "cd '{}' && PATH='{}' '{}' bench --programs nuts_gaussian --systems stan,vm --batches 1 "
      "--quick --json '{}' > '{}' 2> '{}'",
      AB_SOURCE_DIR, dir.string(), AB_CLI, (dir / "rows.json").string(), (dir / "out.txt").string(),
      (dir / "err.txt").string());
  const int status = std::system(command.c_str());
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), read_bytes(dir / "err.txt"));
  const json rows = json::parse(read_bytes(dir / "rows.json"))["nuts_rows"];
  int stan = 0, vm = 0;
  for (const json& row : rows) {
    if (row["program"] != "nuts_gaussian") continue;
    const std::string status = row["status"];
    if (row["system"] == "stan") {
      ++stan;
      CHECK(status.rfind("skipped", 0) == 0);
      CHECK(status.find("apt-get install r-cran-rstan") != std::string::npos);
    } else {
      ++vm;
      CHECK(status == "ok");
    }
  }
  CHECK(stan == 1);
  CHECK(vm == 1);
  CHECK(read_bytes(dir / "out.txt").find("r-cran-rstan") != std::string::npos);
  fs::remove_all(dir);
}

// A target's forms share one Stan model (bench/stan/correlated_gaussian.stan for nuts_gaussian,
// the product form, and nuts_gaussian_loop): each row gets Stan's figures, from one Stan run per
// chain count. A stand-in Rscript counts its calls and prints a result.
TEST_CASE("sample: the bench's forms of one target share one Stan run per chain count") {
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("ab_nuts_stan_shared_{}", ::getpid());
  fs::create_directories(dir);
  {
    std::ofstream rscript(dir / "Rscript");
    rscript << "#!/bin/sh\necho \"$4 $5\" >> '" << (dir / "calls").string()
            << "'\necho 'stan_result gradients=1000 cpu_seconds=2.0 wall_seconds=1.0'\n";
  }
  fs::permissions(dir / "Rscript", fs::perms::owner_all);
  const std::string command = fmt::format(
      "cd '{}' && PATH='{}' '{}' bench --programs nuts_gaussian,nuts_gaussian_loop --systems "
      "stan,vm --batches 1,2 --transitions 1 --json '{}' > '{}' 2> '{}'",
      AB_SOURCE_DIR, dir.string(), AB_CLI, (dir / "rows.json").string(), (dir / "out.txt").string(),
      (dir / "err.txt").string());
  const int status = std::system(command.c_str());
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), read_bytes(dir / "err.txt"));
  const json rows = json::parse(read_bytes(dir / "rows.json"))["nuts_rows"];
  std::map<std::string, int> stan_rows;
  for (const json& row : rows) {
    if (row["system"] != "stan") continue;
    CHECK(row["status"] == "ok");
    CHECK(row["gradients"] == 1000);
    ++stan_rows[row["program"]];
  }
  CHECK(stan_rows["nuts_gaussian"] == 2);
  CHECK(stan_rows["nuts_gaussian_loop"] == 2);
  // One call per chain count, naming the shared model's data set.
  CHECK(read_bytes(dir / "calls") == "correlated_gaussian 1\ncorrelated_gaussian 2\n");
  fs::remove_all(dir);
}

// `--repeats 3` runs every NUTS row three times and reports the medians, Stan's too (three runs
// per chain count, still shared by a target's forms), and the Figure 6 table (docs/nuts.md)
// follows: Stan, the product and loop forms' rates per CPU second and the vm over Stan, with the
// date and load. A stand-in Rscript reports 1, 3 and 2 CPU seconds in turn: the median is 2.
TEST_CASE("sample: the NUTS bench's --repeats gives medians and the Figure 6 table") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_nuts_repeats_{}", ::getpid());
  fs::create_directories(dir);
  const std::string calls = (dir / "calls").string();
  {
    std::ofstream rscript(dir / "Rscript");
    rscript << "#!/bin/sh\nPATH=/usr/bin:/bin\nn=$(cat '" << calls
            << "' 2>/dev/null | wc -l)\necho \"$4 $5\" >> '" << calls
            << "'\ncase $((n % 3)) in 0) c=1.0;; 1) c=3.0;; *) c=2.0;; esac\n"
               "echo \"stan_result gradients=1000 cpu_seconds=$c wall_seconds=1.0\"\n";
  }
  fs::permissions(dir / "Rscript", fs::perms::owner_all);
  const std::string command = fmt::format(
      "cd '{}' && PATH='{}' '{}' bench --programs nuts_gaussian,nuts_gaussian_loop --systems "
      "stan,native,vm --batches 1,2 --transitions 1 --repeats 3 --threads 1 --json '{}' > '{}' "
      "2> '{}'",
      AB_SOURCE_DIR, dir.string(), AB_CLI, (dir / "rows.json").string(), (dir / "out.txt").string(),
      (dir / "err.txt").string());
  const int status = std::system(command.c_str());
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), read_bytes(dir / "err.txt"));
  int rows_seen = 0;
  const json rows = json::parse(read_bytes(dir / "rows.json"))["nuts_rows"];
  for (const json& row : rows) {
    if (!row.contains("runs")) continue;  // the utilization figure's rows
    ++rows_seen;
    CHECK(row["status"] == "ok");
    CHECK(row["runs"] == 3);
    if (row["system"] == "stan") CHECK(static_cast<double>(row["cpu_seconds"]) == 2.0);
  }
  CHECK(rows_seen == 12);  // 2 forms x 3 systems x 2 chain counts
  CHECK(read_bytes(calls) ==
        "correlated_gaussian 1\ncorrelated_gaussian 1\ncorrelated_gaussian 1\n"
        "correlated_gaussian 2\ncorrelated_gaussian 2\ncorrelated_gaussian 2\n");
  const std::string out = read_bytes(dir / "out.txt");
  CHECK(out.find("median of 3 runs") != std::string::npos);
  CHECK(out.find("load average") != std::string::npos);
  CHECK(out.find("| chains | Stan | native | vm | vm / Stan | native, loop | vm, loop | "
                 "vm, loop / Stan |") != std::string::npos);
  CHECK(out.find("| 1 | 500 | ") != std::string::npos);  // 1000 gradients over 2 s
  CHECK(out.find("| 2 | 500 | ") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sample: a small logistic regression's posterior mean matches the exact one") {
  const Sampled fit = sample(model("logreg_small.ab") + " -u X=@" + model("logreg_small_X.npy") +
                             " -u y=@" + model("logreg_small_y.npy") +
                             " --chains 8 --draws 1000 --warmup 400 --seed 3 --backend vm");
  REQUIRE_MESSAGE(fit.exit_code == 0, fit.err);
  auto mean = ab::read_npy(model("logreg_small_posterior_mean.npy"));
  auto cov = ab::read_npy(model("logreg_small_posterior_cov.npy"));
  REQUIRE(mean.ok());
  REQUIRE(cov.ok());
  std::vector<std::pair<double, double>> truth;
  for (uint64_t j = 0; j < 3; ++j)
    truth.emplace_back(std::get<double>(mean->at(j)),
                       std::sqrt(std::get<double>(cov->at(j * 3 + j))));
  const json summary = fit.summary();
  for (size_t j = 0; j < 3; ++j) {
    const json& p = summary["parameters"][j];
    CAPTURE(j);
    CHECK(std::abs(static_cast<double>(p["mean"]) - truth[j].first) <
          5 * static_cast<double>(p["mcse_mean"]) + 0.02 * truth[j].second);
    CHECK(std::abs(static_cast<double>(p["sd"]) - truth[j].second) < 0.1 * truth[j].second);
  }
}

TEST_CASE("sample: bad models and options get one clear message") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_sample_models_{}", ::getpid());
  fs::create_directories(dir);
  auto write = [&](const char* name, const char* text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string no_density = write("no_density.ab", "const D: int = 2;\n");
  Sampled s = sample(no_density);
  CHECK(s.exit_code == 2);
  CHECK(s.err.find("no function 'log_density'") != std::string::npos);

  // D is q's length; a const D that says otherwise is pointed at with both numbers.
  const std::string wrong_d = write("wrong_d.ab",
                                    "struct LogDensity { value: float, grad: float[2] }\n"
                                    "const  D: int = 3;\n"
                                    "fn log_density(q: float[2]) -> LogDensity {\n"
                                    "  return LogDensity { value: 0.0, grad: q };\n}\n");
  s = sample(wrong_d);
  CHECK(s.exit_code == 2);
  CHECK(s.err.find("wrong_d.ab:2:8: const D is 3 but log_density takes q: float[2]") !=
        std::string::npos);

  const std::string wrong_result = write("wrong.ab",
                                         "const D: int = 2;\n"
                                         "fn log_density(q: float[D]) -> int {\n"
                                         "  return 0;\n}\n");
  s = sample(wrong_result);
  CHECK(s.exit_code == 2);
  CHECK(s.err.find("wrong.ab:2:1: 'log_density' does not fit the model contract") !=
        std::string::npos);

  const std::string syntax = write("syntax.ab", "const D: int = 2\n");
  s = sample(syntax);
  CHECK(s.exit_code == 2);
  CHECK(s.err.find("syntax.ab:") != std::string::npos);

  s = sample(model("gaussian_iid.ab") + " --chains 0");
  CHECK(s.exit_code == 2);
  CHECK(s.err.find("--chains") != std::string::npos);
  // The ranges are the library's one check (sample::check_options), spelt with the flags.
  for (const auto& [option, message] : std::vector<std::pair<std::string, std::string>>{
           {"--leaf-steps 0", "--leaf-steps 0 is not in [1, 1000]"},
           {"--max-depth 100", "--max-depth 100 is not in [1, 30]"},
           {"--target-accept nan", "--target-accept nan is not in [0.05, 0.995]"},
           {"--step-size 0", "--step-size 0 is not in [1e-08, 10000]"},
           {"--draws 0", "--draws 0 is not in [1, 16777216]"}}) {
    s = sample(model("gaussian_iid.ab") + " " + option);
    CHECK(s.exit_code == 2);
    CHECK_MESSAGE(s.err.find("error: " + message + "\n") != std::string::npos, s.err);
  }

  // logreg_small's X is float[200][3]: a [3] file is refused with its shape.
  s = sample(model("logreg_small.ab") + " -u X=@" + model("logreg_small_y.npy") + " -u y=@" +
             model("logreg_small_y.npy"));
  CHECK(s.exit_code == 2);
  CHECK(s.err.find("X") != std::string::npos);
  CHECK(s.err.find("shape") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sample: NaN densities are divergences; a faulting chain is named, the others finish") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_sample_faults_{}", ::getpid());
  fs::create_directories(dir);
  // A standard normal whose density is NaN beyond |q| = 1.5: proposals there diverge.
  std::ofstream(dir / "nan.ab") << "const D: int = 1;\n"
                                   "struct LogDensity { value: float, grad: float[D] }\n"
                                   "fn log_density(q: float[D]) -> LogDensity {\n"
                                   "  var v = -0.5 * q[0] * q[0];\n"
                                   "  if abs(q[0]) > 1.5 { v = 0.0 / 0.0; }\n"
                                   "  return LogDensity { value: v, grad: -q };\n}\n";
  Sampled s = sample((dir / "nan.ab").string() +
                     " --chains 4 --draws 200 --warmup 100 --backend vm --init " +
                     model("../../data/models/zeros_4x1.npy"));
  // No such init file: a clear message.
  CHECK(s.exit_code == 2);
  CHECK(s.err.find("zeros_4x1.npy") != std::string::npos);
  s = sample((dir / "nan.ab").string() + " --chains 4 --draws 200 --warmup 100 --backend vm");
  REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  CHECK(s.summary()["divergences"] > 0);
  CHECK(s.summary()["faulted_chains"] == 0);

  // An index bug at exactly q = 100, where only chains 3 and 11 start: they fault on their
  // first evaluation and are named; the other 14 finish.
  std::ofstream(dir / "fault.ab") << "const D: int = 1;\n"
                                     "struct LogDensity { value: float, grad: float[D] }\n"
                                     "fn log_density(q: float[D]) -> LogDensity {\n"
                                     "  let t = [1.0, 2.0];\n"
                                     "  let k = t[int(q[0] == 100.0) * 7];\n"
                                     "  return LogDensity { value: -0.5 * q[0] * q[0] * k, "
                                     "grad: -q * k };\n}\n";
  std::vector<float> init(16, 0.5f);
  init[3] = init[11] = 100.0f;
  std::ofstream(dir / "init.npy", std::ios::binary) << ab::encode_npy(
      "<f4", {16, 1}, std::string(reinterpret_cast<const char*>(init.data()), 64));
  s = sample((dir / "fault.ab").string() + " --chains 16 --draws 100 --warmup 50 --backend vm " +
             "--init " + (dir / "init.npy").string());
  REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  CHECK(s.err.find("chain 3 faulted: index_out_of_range: index 7 out of range for t: float[2] in "
                   "log_density at line 5") != std::string::npos);
  CHECK(s.err.find("chain 11 faulted") != std::string::npos);
  const json summary = s.summary();
  CHECK(summary["faulted_chains"] == 2);
  auto draws = ab::read_npy((s.out / "draws.npy").string());
  REQUIRE(draws.ok());
  CHECK(std::get<double>(draws->at(0)) != 0.0);  // chain 0 has its draws
  CHECK(summary["faults"][0]["detail"] == "index 7 out of range for t: float[2]");

  // A loop one past the end of the parameters, in a model differentiated for the sampler: the
  // fault names the index and the parameter's length.
  std::ofstream(dir / "past_end.ab") << "fn log_density(q: float[3]) -> float {\n"
                                        "  var s = 0.0;\n"
                                        "  for i in 0..4 { s = s - 0.5 * q[i] * q[i]; }\n"
                                        "  return s;\n}\n";
  s = sample((dir / "past_end.ab").string() + " --chains 2 --draws 10 --warmup 10 --backend vm");
  CHECK(s.exit_code != 0);
  CHECK_MESSAGE(s.err.find("index 3 out of range for q: float[3]") != std::string::npos, s.err);
  fs::remove_all(dir);
}

}  // namespace

// The NUTS rows' check is real: one flipped bit in the vm's draws makes its row FAILED and the
// run exit 1, while the native rows stay ok.
// A row predicted to run past the budget is skipped with its reason, not left blank.
TEST_CASE("sample: a NUTS bench row over the row budget is skipped with its reason") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_nuts_budget_{}", ::getpid());
  fs::create_directories(dir);
  ab::cli::NutsBenchOptions options;
  options.bench.programs = {"nuts_gaussian"};
  options.bench.systems = {"vm"};
  options.bench.batches = {1, 2};
  options.bench.quick = true;
  options.row_budget_seconds = 0;  // any row after the first is predicted to take longer
  options.samples_dir = (fs::path(AB_SOURCE_DIR) / "samples").string();
  options.bench.json_path = (dir / "rows.json").string();
  CHECK(ab::cli::run_nuts_bench(options) == 0);
  const json document = json::parse(read_bytes(dir / "rows.json"));
  std::vector<json> rows;
  for (const json& row : document["nuts_rows"])
    if (row["program"] == "nuts_gaussian" && row["system"] == "vm") rows.push_back(row);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["chains"] == 1);
  CHECK(rows[0]["status"] == "ok");
  CHECK(rows[1]["chains"] == 2);
  const std::string skipped = rows[1]["status"];
  CHECK(skipped.rfind("skipped: would take about ", 0) == 0);
  CHECK(skipped.find("when --batches is not given") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sample: a NUTS bench row whose draws differ from the native sampler's FAILS") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("ab_nuts_tamper_{}", ::getpid());
  fs::create_directories(dir);
  ab::cli::NutsBenchOptions options;
  options.bench.programs = {"nuts_gaussian"};
  options.bench.systems = {"native", "vm"};
  options.bench.batches = {2};
  options.bench.quick = true;
  options.samples_dir = (fs::path(AB_SOURCE_DIR) / "samples").string();
  options.bench.json_path = (dir / "rows.json").string();
  options.tamper_for_test = [](const std::string& system,
                               std::vector<std::vector<uint32_t>>& draws) {
    if (system == "vm" && !draws.empty() && !draws[0].empty()) draws[0][0] ^= 1u;
  };
  CHECK(ab::cli::run_nuts_bench(options) == 1);
  int failed = 0, ok = 0;
  const json rows = json::parse(read_bytes(dir / "rows.json"))["nuts_rows"];
  for (const json& row : rows) {
    if (row["program"] != "nuts_gaussian") continue;
    const std::string status = row["status"];
    if (row["system"] == "vm") {
      CHECK(status.rfind("FAILED: chain 0 draw 0 word 0", 0) == 0);
      ++failed;
    } else {
      CHECK(status == "ok");
      ++ok;
    }
  }
  CHECK(failed == 1);
  CHECK(ok == 1);
  fs::remove_all(dir);
}
