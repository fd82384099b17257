// The sampler library's edges (include/autobatch/sampler.h): its one check of the options refuses
// what the CLI refuses (a fit whose chains could never move) with a message naming the option in
// the caller's spelling; a fit too big for memory is an Error saying how big and what to reduce,
// never std::bad_alloc; cmdstan_csv refuses a chain the fit does not have.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "autobatch/sampler.h"

namespace {

using namespace ab;

const char* const kNormal =
    "fn log_density(q: float[1]) -> float {\n"
    "    return -0.5 * q[0] * q[0];\n"
    "}\n";

std::shared_ptr<const sample::Model> normal_model() {
  auto model = sample::Model::compile(kNormal, "normal.ab");
  REQUIRE(model.ok());
  return *model;
}

// One option set wrong, and the message expected in the library's spelling.
struct BadOption {
  std::function<void(sample::Options&)> set;
  std::string message;
};

std::vector<BadOption> bad_options() {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  return {
      {[](sample::Options& o) { o.chains = 0; }, "chains 0 is not in [1, 1048576]"},
      {[](sample::Options& o) { o.draws = 0; }, "draws 0 is not in [1, 16777216]"},
      {[](sample::Options& o) { o.warmup = 1u << 25; }, "warmup 33554432 is not in [0, 16777216]"},
      {[](sample::Options& o) { o.leaf_steps = 0; }, "leaf_steps 0 is not in [1, 1000]"},
      {[](sample::Options& o) { o.max_depth = 0; }, "max_depth 0 is not in [1, 30]"},
      {[](sample::Options& o) { o.max_depth = 100; }, "max_depth 100 is not in [1, 30]"},
      {[](sample::Options& o) { o.max_steps = 0; }, "max_steps 0 is not in [1, 4294967295]"},
      {[=](sample::Options& o) { o.target_accept = nan; },
       "target_accept nan is not in [0.05, 0.995]"},
      {[](sample::Options& o) { o.target_accept = 0; }, "target_accept 0 is not in [0.05, 0.995]"},
      {[](sample::Options& o) { o.target_accept = 2; }, "target_accept 2 is not in [0.05, 0.995]"},
      {[](sample::Options& o) { o.step_size = 0; }, "step_size 0 is not in [1e-08, 10000]"},
      {[](sample::Options& o) { o.step_size = -1; }, "step_size -1 is not in [1e-08, 10000]"},
      {[=](sample::Options& o) { o.step_size = inf; }, "step_size inf is not in [1e-08, 10000]"},
      {[=](sample::Options& o) { o.step_size = nan; }, "step_size nan is not in [1e-08, 10000]"},
      {[](sample::Options& o) { o.step_jitter = 1.5; }, "step_jitter 1.5 is not in [0, 1]"},
      {[](sample::Options& o) { o.stack_depth = 12; },
       "stack_depth 12 is less than the tree's recursion needs (max_depth 10 + 8 = 18)"},
  };
}

}  // namespace

TEST_CASE("sampler options: run refuses what the CLI refuses, naming the option and its range") {
  const auto model = normal_model();
  for (const BadOption& bad : bad_options()) {
    sample::Options options;
    options.chains = 2;
    options.draws = 20;
    options.warmup = 20;
    bad.set(options);
    CAPTURE(bad.message);
    CHECK(sample::check_options(options).error() == bad.message);
    // The CLI's spelling: the same message after its flag (--leaf-steps 0 is not in ...).
    const std::string cli = sample::check_options(options, sample::OptionNames::Cli).error();
    CHECK(cli.rfind("--", 0) == 0);
    if (bad.message.rfind("stack_depth", 0) != 0)
      CHECK(cli.substr(cli.find(' ')) == bad.message.substr(bad.message.find(' ')));
    // run() itself refuses them: no fit whose chains never move.
    auto fit = sample::run(*model, {}, options, sample::cpu_runner(CpuBackend::Vm));
    REQUIRE_FALSE(fit.ok());
    CHECK(fit.error() == bad.message);
  }
  sample::Options edge;
  edge.chains = 1;
  edge.draws = 1;
  edge.warmup = 0;
  edge.leaf_steps = 1000;
  edge.max_depth = 30;
  edge.target_accept = 0.995;
  edge.step_size = 1e-8;
  edge.step_jitter = 1;
  CHECK(sample::check_options(edge).ok());
  // The ranges the CLI's help shows are the check's.
  CHECK(sample::option_range("leaf_steps") == "1 to 1000");
  CHECK(sample::option_range("target_accept") == "0.05 to 0.995");
  CHECK_THROWS_AS((void)sample::option_range("leafsteps"), std::out_of_range);
  sample::Options cli;
  cli.leaf_steps = 0;
  CHECK(sample::check_options(cli, sample::OptionNames::Cli).error() ==
        "--leaf-steps 0 is not in [1, 1000]");
  cli.leaf_steps = 1;
  cli.stack_depth = 12;
  CHECK(sample::check_options(cli, sample::OptionNames::Cli).error() ==
        "--stack-depth 12 is less than the tree's recursion needs (--max-depth 10 + 8 = 18)");
}

TEST_CASE("sampler options: a fit larger than the machine's memory is an Error saying how big") {
  const auto model = normal_model();
  sample::Options options;
  options.chains = 1u << 20;
  options.draws = 1u << 24;  // 2^44 draws: hundreds of TiB of statistics
  auto fit = sample::run(*model, {}, options, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_FALSE(fit.ok());
  CHECK(fit.error().find("1048576 chains x 16777216 draws x 1 parameters need") == 0);
  CHECK(fit.error().find("GiB of memory") != std::string::npos);
  CHECK(fit.error().find("more than this machine's") != std::string::npos);
  CHECK(fit.error().find("use fewer chains or draws") != std::string::npos);
}

TEST_CASE("sampler options: an allocation that fails is an Error, not std::bad_alloc") {
  const auto model = normal_model();
  // A child under an address-space limit (RLIMIT_AS) 64 MiB above what it uses asks for a fit of
  // up to 2 GiB, less than the machine has: the allocation fails. It reports through its exit
  // code: 0 an Error with the advice, 1 another outcome, a signal (SIGABRT) the exception escaped.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    long pages = 0;
    if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(statm, "%ld", &pages) != 1) pages = 0;
      std::fclose(statm);
    }
    const rlim_t limit = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + (64u << 20);
    const rlimit as{limit, limit};
    ::setrlimit(RLIMIT_AS, &as);
    // 29 bytes a draw of one parameter: 25 of statistics, 4 of the draw.
    const double physical =
        static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
    sample::Options options;
    options.chains = 64;
    options.draws = static_cast<uint32_t>(std::min(physical / 2, 2.0 * (1u << 30)) / (29.0 * 64));
    auto fit = sample::run(*model, {}, options, sample::cpu_runner(CpuBackend::Vm));
    const bool refused = !fit.ok() &&
                         fit.error().find("the allocation failed") != std::string::npos &&
                         fit.error().find("use fewer chains or draws") != std::string::npos;
    ::_exit(refused ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK_FALSE(WIFSIGNALED(status));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("sampler options: cmdstan_csv refuses a chain the fit does not have") {
  const auto model = normal_model();
  sample::Options options;
  options.chains = 2;
  options.draws = 5;
  options.warmup = 10;
  auto fit = sample::run(*model, {}, options, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE(fit.ok());
  const std::span<const float> all(fit->draws_data);
  CHECK_FALSE(sample::cmdstan_csv(*fit, "normal", 1, all.subspan(5, 5)).empty());
  try {
    (void)sample::cmdstan_csv(*fit, "normal", 2, all);
    FAIL("chain 2 of 2 was written");
  } catch (const std::out_of_range& e) {
    CHECK(std::string(e.what()) == "cmdstan_csv: no chain 2 in a fit of 2 chains (0 to 1)");
  }
  // Fewer draws than the chain has: refused, not read past the end.
  CHECK_THROWS_AS((void)sample::cmdstan_csv(*fit, "normal", 0, all.subspan(0, 3)),
                  std::out_of_range);
}
