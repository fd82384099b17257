#include "bench/inline_bench.h"

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "autobatch/module.h"
#include "bench/cpu_time.h"

namespace ab::bench {
namespace {

constexpr uint32_t kRows = 1000;

constexpr const char* kSource = R"(
uniform x: float[1000];
uniform y: float[1000];
fn normal_lp(v: float, mu: float, sigma: float) -> float {
    let z = (v - mu) / sigma;
    return -0.5 * z * z - log(sigma) - 0.9189385332046727;
}
fn main(a: float, b: float, sigma: float) -> float {
    var lp = normal_lp(a, 0.0, 10.0) + normal_lp(b, 0.0, 10.0);
    for i in 0..1000 { lp += normal_lp(y[i], a + b * x[i], sigma); }
    return lp;
}
)";

struct Form {
  double seconds = 0;  // median CPU seconds per run
  uint64_t steps = 0, lane_steps = 0;
  std::string error;
};

Batch make_batch(uint32_t lanes) {
  Batch batch;
  batch.lanes = lanes;
  std::vector<uint32_t> x(kRows), y(kRows);
  for (uint32_t i = 0; i < kRows; ++i) {
    const float xi = static_cast<float>(i % 97) / 16.0f - 3.0f;
    const float yi = 0.7f + 1.3f * xi + static_cast<float>((i * 37) % 23) / 11.0f - 1.0f;
    std::memcpy(&x[i], &xi, sizeof xi);
    std::memcpy(&y[i], &yi, sizeof yi);
  }
  batch.uniforms = {x, y};
  batch.inputs.assign(3, {});
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    const float a = 0.5f + 0.01f * static_cast<float>(lane % 50);
    const float b = 1.2f + 0.003f * static_cast<float>(lane % 70);
    const float sigma = 0.8f + 0.02f * static_cast<float>(lane % 30);
    for (int k = 0; k < 3; ++k) {
      const float v = k == 0 ? a : k == 1 ? b : sigma;
      uint32_t w = 0;
      std::memcpy(&w, &v, sizeof v);
      batch.inputs[static_cast<size_t>(k)].push_back(w);
    }
  }
  return batch;
}

// One form's vm run on `batch`, timed, its outputs checked against `want`.
Form run_form(const Module& module, const Batch& batch, const BenchOptions& o,
              const std::vector<uint32_t>& want) {
  Form form;
  RunOptions options;
  options.threads = o.threads ? o.threads : 1;
  auto vm = module.run_cpu(batch, options, CpuBackend::Vm);
  if (!vm) {
    form.error = vm.error();
    return form;
  }
  if (vm->outputs != want) form.error = "FAILED: the vm's outputs differ from the interpreter's";
  form.steps = vm->stats.steps;
  form.lane_steps = vm->stats.lane_steps;
  form.seconds = median_cpu_seconds(o.repeats ? o.repeats : 5,
                                    [&] { (void)module.run_cpu(batch, options, CpuBackend::Vm); });
  return form;
}

}  // namespace

int run_inline_bench(const BenchOptions& o) {
  const std::vector<uint32_t> lane_counts =
      o.batches.empty() ? std::vector<uint32_t>{16, 64, 256} : o.batches;
  CompileOptions kept{"inline.ab", "main"}, inlined{"inline.ab", "main"};
  kept.inline_calls = false;
  auto kept_module = Module::compile(kSource, kept);
  auto inlined_module = Module::compile(kSource, inlined);
  if (!kept_module || !inlined_module) {
    fmt::print(stderr, "error: {}\n", !kept_module ? kept_module.error() : inlined_module.error());
    return 1;
  }
  if (o.print_table) {
    fmt::print(
        "\ninline: a row loop calling a helper (N = {}), its call kept against inlined (the loop "
        "then runs as array code), vm, {} thread(s), CPU seconds of this process per run "
        "(median)\n",
        kRows, o.threads ? o.threads : 1);
    fmt::print("{:>6} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10} {:>8}\n", "lanes", "steps", "steps",
               "lane steps", "lane steps", "seconds", "seconds", "speedup");
    fmt::print("{:>6} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10} {:>8}\n", "", "kept", "inlined",
               "kept", "inlined", "kept", "inlined", "");
  }
  int status = 0;
  for (uint32_t lanes : lane_counts) {
    const Batch batch = make_batch(lanes);
    auto interp = (*kept_module)->run_cpu(batch, {}, CpuBackend::Interpreter);
    if (!interp) {
      fmt::print(stderr, "error: {}\n", interp.error());
      return 1;
    }
    const Form a = run_form(**kept_module, batch, o, interp->outputs);
    const Form b = run_form(**inlined_module, batch, o, interp->outputs);
    const std::string error = !a.error.empty() ? a.error : b.error;
    if (!error.empty()) status = 1;
    if (!o.print_table) continue;
    fmt::print("{:>6} {:>9} {:>9} {:>11} {:>11} {:>10.5f} {:>10.5f} {:>7.1f}x{}\n", lanes, a.steps,
               b.steps, a.lane_steps, b.lane_steps, a.seconds, b.seconds,
               b.seconds > 0 ? a.seconds / b.seconds : 0.0, error.empty() ? "" : "  " + error);
  }
  return status;
}

}  // namespace ab::bench
