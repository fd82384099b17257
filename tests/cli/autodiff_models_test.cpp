// The shipped models written as just their log density (samples/models/*_ad.ab and the product
// forms logistic_regression.ab, correlated_gaussian.ab): the gradient the sampler derives equals
// central differences of the same log density computed in float64 from the same data, at random
// points, on interp and vm alike (bit for bit).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autobatch/module.h"
#include "autobatch/npy.h"
#include "support/read_bytes.h"
#include "tools/uniforms.h"

namespace {
using ab::testing::read_bytes;

const std::string kSamples = std::string(AB_SOURCE_DIR) + "/samples";

std::vector<double> read_doubles(const std::string& path) {
  auto array = ab::read_npy(path);
  REQUIRE_MESSAGE(array.ok(), array.error());
  std::vector<double> out;
  for (uint64_t k = 0; k < array->elements(); ++k)
    out.push_back(std::get<double>(array->at(k)));
  return out;
}

// The numbers of a .csv file, row by row.
std::vector<double> read_doubles_csv(const std::string& path) {
  std::string text = read_bytes(path);
  std::replace(text.begin(), text.end(), ',', '\n');
  std::istringstream in(text);
  std::vector<double> out;
  for (std::string cell; std::getline(in, cell);)
    if (!cell.empty()) out.push_back(std::stod(cell));
  return out;
}

using Density = std::function<double(const std::vector<double>&)>;

// Runs `check(q) = grad(log_density, q)` appended to `model` at `points` on interp and vm,
// checks they agree bit for bit, and compares with central differences of `reference`. A model
// over a struct of parameters names `flat`, a function of float[D] that builds the struct and
// returns log_density of it, written after the model.
void check_model(const std::string& model, const std::vector<std::string>& uniforms, int D,
                 const Density& reference, double spread, const std::string& flat = "") {
  CAPTURE(model);
  const std::string text =
      read_bytes(kSamples + "/models/" + model) + flat +
      fmt::format("\nfn check(q: float[{}]) -> float[{}] {{ return grad({}, q); }}\n", D, D,
                  flat.empty() ? "log_density" : "flat");
  ab::CompileOptions options;
  options.file = model;
  options.entry = "check";
  auto module = ab::Module::compile(text, options);
  REQUIRE_MESSAGE(module.ok(), module.error());
  ab::Batch batch;
  batch.lanes = 4;
  auto bound = ab::cli::bind_uniforms((*module)->uniforms(), uniforms);
  REQUIRE_MESSAGE(bound.ok(), bound.error());
  batch.uniforms = std::move(*bound);
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> d(static_cast<float>(-spread), static_cast<float>(spread));
  batch.inputs.resize(1);
  std::vector<std::vector<double>> points(batch.lanes);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    for (int j = 0; j < D; ++j) {
      const float v = d(rng);
      points[lane].push_back(v);
      uint32_t w;
      std::memcpy(&w, &v, 4);
      batch.inputs[0].push_back(w);
    }
  auto interp = (*module)->run_cpu(batch, {}, ab::CpuBackend::Interpreter);
  auto vm = (*module)->run_cpu(batch, {}, ab::CpuBackend::Vm);
  REQUIRE_MESSAGE(interp.ok(), interp.error());
  REQUIRE_MESSAGE(vm.ok(), vm.error());
  CHECK(interp->outputs == vm->outputs);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    std::vector<double> x = points[lane], want(D);
    double scale = 1.0;
    for (int j = 0; j < D; ++j) {
      const double h = 1e-5 * std::max(1.0, std::fabs(x[j])), x0 = x[j];
      x[j] = x0 + h;
      const double up = reference(x);
      x[j] = x0 - h;
      const double down = reference(x);
      x[j] = x0;
      want[j] = (up - down) / (2 * h);
      scale = std::max(scale, std::fabs(want[j]));
    }
    for (int j = 0; j < D; ++j) {
      float got;
      std::memcpy(&got, &interp->outputs[lane * D + j], 4);
      CAPTURE(lane);
      CAPTURE(j);
      // float32 sums of many terms: within 1e-4 of the gradient's largest coordinate.
      CHECK(std::fabs(got - want[j]) <= 1e-4 * scale);
    }
  }
}

TEST_CASE(
    "autodiff models: each shipped log density's derived gradient equals float64 differences") {
  check_model(
      "banana_ad.ab", {}, 2,
      [](const std::vector<double>& q) {
        const double u = q[1] + 0.03 * (q[0] * q[0] - 100.0);
        return -q[0] * q[0] / 200.0 - 0.5 * u * u;
      },
      10.0);

  // The product forms are the same densities as the loop forms (*_loop_ad.ab).
  const std::vector<double> P = read_doubles(kSamples + "/data/gaussian_precision.npy");
  const Density gaussian = [&](const std::vector<double>& q) {
    double v = 0.0;
    for (int i = 0; i < 100; ++i)
      for (int j = 0; j < 100; ++j)
        v += q[i] * P[i * 100 + j] * q[j];
    return -0.5 * v;
  };
  const std::vector<std::string> precision = {"precision=@" + kSamples +
                                              "/data/gaussian_precision.npy"};
  check_model("correlated_gaussian_loop_ad.ab", precision, 100, gaussian, 3.0);
  check_model("correlated_gaussian.ab", precision, 100, gaussian, 3.0);

  const std::vector<double> X = read_doubles(kSamples + "/data/logreg_X.npy");
  const std::vector<double> y = read_doubles(kSamples + "/data/logreg_y.npy");
  const Density logreg = [&](const std::vector<double>& w) {
    double v = 0.0;
    for (int j = 0; j < 100; ++j)
      v -= w[j] * w[j] / 50.0;
    for (int i = 0; i < 10000; ++i) {
      double z = 0.0;
      for (int j = 0; j < 100; ++j)
        z += X[i * 100 + j] * w[j];
      v += y[i] * z - (z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)));
    }
    return v;
  };
  const std::vector<std::string> data = {"X=@" + kSamples + "/data/logreg_X.npy",
                                         "y=@" + kSamples + "/data/logreg_y.npy"};
  check_model("logistic_regression_loop_ad.ab", data, 100, logreg, 0.3);
  check_model("logistic_regression.ab", data, 100, logreg, 0.3);
}

// The Poisson and eight-schools models, written over their data arrays without a loop: the same
// densities as their Stan twins (samples/models/*.stan), in float64.
TEST_CASE("autodiff models: the array forms of the Poisson and eight-schools models") {
  const std::vector<double> x = read_doubles_csv(kSamples + "/data/poisson_x.csv"),
                            y = read_doubles_csv(kSamples + "/data/poisson_y.csv");
  REQUIRE(x.size() == 50);
  const Density poisson = [&](const std::vector<double>& q) {
    double v = -0.125 * (q[0] * q[0] + q[1] * q[1]);
    for (size_t i = 0; i < x.size(); ++i) {
      const double eta = q[0] + q[1] * x[i];
      v += y[i] * eta - std::exp(eta);
    }
    return v;
  };
  check_model("poisson_regression.ab",
              {"x=@" + kSamples + "/data/poisson_x.csv", "y=@" + kSamples + "/data/poisson_y.csv"},
              2, poisson, 1.0,
              "fn flat(q: float[2]) -> float { return log_density(Params { alpha: q[0], beta: "
              "q[1] }); }\n");

  const std::vector<double> ys = read_doubles_csv(kSamples + "/data/eight_schools_y.csv"),
                            sigma = read_doubles_csv(kSamples + "/data/eight_schools_sigma.csv");
  REQUIRE(ys.size() == 8);
  const Density schools = [&](const std::vector<double>& q) {
    double v = -0.5 * (q[0] * q[0] + q[1] * q[1]) / 25.0;
    for (int j = 0; j < 8; ++j) {
      const double r = (ys[j] - (q[0] + q[1] * q[2 + j])) / sigma[j];
      v += -0.5 * q[2 + j] * q[2 + j] - 0.5 * r * r;
    }
    return v;
  };
  check_model("eight_schools.ab",
              {"y=@" + kSamples + "/data/eight_schools_y.csv",
               "sigma=@" + kSamples + "/data/eight_schools_sigma.csv"},
              10, schools, 3.0,
              "fn flat(q: float[10]) -> float { return log_density(Params { mu: q[0], tau: q[1], "
              "eta: [q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9]] }); }\n");
}

}  // namespace
