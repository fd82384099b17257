// A fit's files written by the library's one writer (sample::write_fit, sample::FitWriter), the
// writer `autobatch sample --out`, Python's Fit.save and Fit.to_csv share: the set read back with
// the library's .npy reader holds the fit's draws and statistics bit for bit, summary.json names
// exactly the set's files, a CSV-only set removes nothing, and a folder in use is refused.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autobatch/npy.h"
#include "autobatch/sampler.h"

namespace {

using namespace ab;
namespace fs = std::filesystem;

// A scale and a location, the scale bounded: two coordinates, one per field.
const char* const kModel = R"(
struct Params { sigma: float<lower=0>, mu: float[1] }
fn log_density(p: Params) -> float {
    return -p.sigma - 0.5 * p.mu[0] * p.mu[0];
}
)";

sample::Fit small_fit() {
  auto model = sample::Model::compile(kModel, "two_normals.ab");
  REQUIRE(model.ok());
  sample::Options options;
  options.chains = 2;
  options.draws = 30;
  options.warmup = 40;
  options.seed = 3;
  auto fit = sample::run(**model, {}, options, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE(fit.ok());
  return std::move(*fit);
}

struct Scratch {
  fs::path dir;
  explicit Scratch(const char* name)
      : dir(fs::temp_directory_path() / fmt::format("ab_fit_files_{}_{}", name, ::getpid())) {
    fs::remove_all(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The folder's files but the writer's lock.
std::set<std::string> listed(const fs::path& dir) {
  std::set<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().filename() != ".autobatch-sample.lock") names.insert(e.path().filename());
  return names;
}

template <typename T>
std::vector<T> elements(const NpyArray& array) {
  std::vector<T> out(array.elements());
  std::memcpy(out.data(), array.data.data(), out.size() * sizeof(T));
  return out;
}

sample::FitFileOptions two_normals(bool npy, bool csv) {
  sample::FitFileOptions files;
  files.model = "models/two_normals.ab";
  files.model_name = "two_normals";
  files.npy = npy;
  files.csv = csv;
  return files;
}

}  // namespace

TEST_CASE("sampler library: write_fit writes the draws, statistics, summary and CSVs as one set") {
  const sample::Fit fit = small_fit();
  Scratch scratch("set");
  sample::RunFacts facts;
  facts.backend = "vm";
  facts.run_seconds = 0.5;
  REQUIRE(sample::write_fit(fit, scratch.dir.string(), two_normals(true, true), facts));

  const std::set<std::string> expected = {
      "draws.npy",        "lp.npy",     "accept_stat.npy", "step_size.npy", "energy.npy",
      "tree_depth.npy",   "n_grad.npy", "divergent.npy",   "summary.json",  "two_normals-1.csv",
      "two_normals-2.csv"};
  CHECK(listed(scratch.dir) == expected);

  auto draws = read_npy((scratch.dir / "draws.npy").string());
  REQUIRE(draws);
  CHECK(draws->type == NpyType::Float32);
  CHECK(draws->shape == std::vector<uint64_t>{2, 30, 2});
  CHECK(elements<float>(*draws) == fit.draws_data);
  auto lp = read_npy((scratch.dir / "lp.npy").string());
  REQUIRE(lp);
  CHECK(lp->shape == std::vector<uint64_t>{2, 30});
  CHECK(elements<float>(*lp) == fit.stats.lp);
  auto grads = read_npy((scratch.dir / "n_grad.npy").string());
  REQUIRE(grads);
  CHECK(grads->type == NpyType::Int32);
  CHECK(elements<int32_t>(*grads) == fit.stats.n_leapfrog);
  auto divergent = read_npy((scratch.dir / "divergent.npy").string());
  REQUIRE(divergent);
  CHECK(divergent->type == NpyType::Bool);
  CHECK(elements<uint8_t>(*divergent) == fit.stats.divergent);

  const nlohmann::json summary = nlohmann::json::parse(read_text(scratch.dir / "summary.json"));
  CHECK(summary["model"] == "models/two_normals.ab");
  CHECK(summary["backend"] == "vm");
  CHECK(summary["chains"] == 2);
  CHECK(summary["complete"] == true);
  CHECK(summary["gradient_evaluations"] == fit.gradient_evaluations);
  CHECK(summary["gradients_per_second"] == doctest::Approx(fit.gradient_evaluations / 0.5));
  CHECK(summary["parameters"].size() == 2);
  CHECK(summary["parameters"][1]["name"] == "mu[0]");
  const std::vector<std::string> files = summary["files"];
  CHECK(std::set<std::string>(files.begin(), files.end()) == expected);

  const uint64_t per = uint64_t{fit.draws} * fit.dimension;
  for (uint32_t chain = 0; chain < 2; ++chain)
    CHECK(read_text(scratch.dir / fmt::format("two_normals-{}.csv", chain + 1)) ==
          sample::cmdstan_csv(fit, "two_normals", chain,
                              std::span(fit.draws_data).subspan(chain * per, per)));
}

TEST_CASE("sampler library: a CSV-only set removes no file; a full set removes the last set's") {
  const sample::Fit fit = small_fit();
  Scratch scratch("replace");
  REQUIRE(sample::write_fit(fit, scratch.dir.string(), two_normals(true, true)));
  // The CSVs alone (Python's to_csv) under another name: the earlier set stays whole.
  sample::FitFileOptions other = two_normals(false, true);
  other.model_name = "other";
  REQUIRE(sample::write_fit(fit, scratch.dir.string(), other));
  std::set<std::string> names = listed(scratch.dir);
  CHECK(names.count("draws.npy") == 1);
  CHECK(names.count("two_normals-2.csv") == 1);
  CHECK(names.count("other-1.csv") == 1);
  CHECK(names.count("other-2.csv") == 1);
  // A full set without CSVs replaces the set summary.json named: its CSVs go, other files stay.
  REQUIRE(sample::write_fit(fit, scratch.dir.string(), two_normals(true, false)));
  names = listed(scratch.dir);
  CHECK(names.count("two_normals-1.csv") == 0);
  CHECK(names.count("draws.npy") == 1);
  CHECK(names.count("other-1.csv") == 1);
  CHECK(names.count(".autobatch-sample.partial") == 0);
}

TEST_CASE("sampler library: a folder another writer holds is refused, and left as it was") {
  const sample::Fit fit = small_fit();
  Scratch scratch("locked");
  auto first = sample::FitWriter::open(scratch.dir.string(), fit.options, fit.dimension,
                                       two_normals(true, false));
  REQUIRE(first);
  const Status second = sample::write_fit(fit, scratch.dir.string(), two_normals(true, false));
  REQUIRE_FALSE(second);
  CHECK(second.error().find("is in use by another `autobatch sample` (process ") !=
        std::string::npos);
  // The first writer, never finished, leaves nothing behind.
  first->reset();
  CHECK(listed(scratch.dir).empty());
}
