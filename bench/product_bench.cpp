#include "bench/product_bench.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "autobatch/module.h"
#include "bench/cpu_time.h"

namespace ab::bench {
namespace {

constexpr uint32_t kRows = 10000, kCols = 100;  // the regression's X
constexpr int kReps = 4;                        // products per timed vm run

// The vm's programs: the product `reps` times for every lane, each result folded into the
// lane's output so that none is dead.
constexpr const char* kLeftSource = R"(
uniform X: float[10000][100];
fn main(w: float[100], reps: int) -> float {
    var total = 0.0;
    for r in 0..reps {
        let z = X @ w;
        total += z[r] + z[9999 - r];
    }
    return total;
}
)";
constexpr const char* kRightSource = R"(
uniform X: float[10000][100];
fn main(g: float[10000], reps: int) -> float {
    var total = 0.0;
    for r in 0..reps {
        let v = g @ X;
        total += v[r] + v[99 - r];
    }
    return total;
}
)";

// OpenBLAS through dlopen: present or not, the binary links nothing of it. On a CPU newer than
// its tables (0.3.21 takes this Xeon for a Prescott, SSE3 only) it would run its slowest
// kernels; where the host has AVX-512F and OPENBLAS_CORETYPE is unset, it is told SkylakeX,
// its AVX-512 kernels, before it loads.
struct OpenBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
  Sgemm sgemm = nullptr;
  void (*set_threads)(int) = nullptr;
  char* (*corename)() = nullptr;
  bool load() {
    if (__builtin_cpu_supports("avx512f")) setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
    void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
    set_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads"));
    corename = reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_corename"));
    return sgemm && set_threads && corename;
  }
};
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;  // cblas.h's enums

// The core's clock (GHz) from /proc/cpuinfo, 0 when unknown.
double core_ghz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("cpu MHz"))
      if (auto colon = line.find(':'); colon != std::string::npos)
        return std::atof(line.c_str() + colon + 1) / 1000;
  return 0;
}

struct ProductRow {
  std::string product;
  uint32_t lanes = 0;
  double vm_seconds = 0, blas_seconds = 0;  // CPU seconds per product
  std::string error;
};

float pseudo(size_t i, uint32_t mod, float scale) {
  return static_cast<float>(i % mod) * scale - 1.0f;
}

// The vm's CPU seconds per product (reps minus none), its words checked on the first lanes.
ProductRow run_vm_row(const Module& module, bool left, uint32_t lanes, const BenchOptions& o,
                      const std::vector<uint32_t>& x) {
  ProductRow row;
  row.product = left ? "X @ w" : "g @ X";
  row.lanes = lanes;
  const uint32_t words = left ? kCols : kRows;
  Batch batch;
  batch.lanes = lanes;
  batch.uniforms = {x};
  batch.inputs.resize(2);
  batch.inputs[0].resize(size_t{words} * lanes);
  for (size_t i = 0; i < batch.inputs[0].size(); ++i) {
    const float f = pseudo(i * 7 + i / words, 29, 1.0f / 14);
    std::memcpy(&batch.inputs[0][i], &f, sizeof f);
  }
  RunOptions options;
  options.threads = o.threads ? o.threads : 1;
  auto timed = [&](int reps) {
    batch.inputs[1].assign(lanes, static_cast<uint32_t>(reps));
    return median_cpu_seconds(o.repeats ? o.repeats : 5, [&] {
      if (auto ran = module.run_cpu(batch, options, CpuBackend::Vm); !ran) row.error = ran.error();
    });
  };
  row.vm_seconds = std::max(0.0, (timed(kReps) - timed(0)) / kReps);
  Batch few = batch;  // the interpreter on the first lanes
  few.lanes = std::min(lanes, 2u);
  few.inputs[0].resize(size_t{words} * few.lanes);
  few.inputs[1].assign(few.lanes, kReps);
  batch.inputs[1].assign(lanes, kReps);
  auto vm = module.run_cpu(batch, options, CpuBackend::Vm);
  auto interp = module.run_cpu(few, options, CpuBackend::Interpreter);
  if (!vm || !interp)
    row.error = "a run failed";
  else if (!std::equal(interp->outputs.begin(), interp->outputs.end(), vm->outputs.begin()))
    row.error = "FAILED: the vm's words differ from the interpreter's";
  return row;
}

// OpenBLAS's CPU seconds for the same product on the same layout.
double blas_seconds(const OpenBlas& blas, bool left, uint32_t lanes, int repeats,
                    const std::vector<float>& x) {
  const int n = static_cast<int>(lanes);
  std::vector<float> operand(size_t{left ? kCols : kRows} * lanes), out(size_t{kRows} * lanes);
  for (size_t i = 0; i < operand.size(); ++i)
    operand[i] = pseudo(i, 29, 1.0f / 14);
  return median_cpu_seconds(repeats, [&] {
    if (left)  // Z (rows x lanes) = X (rows x cols) W (cols x lanes)
      blas.sgemm(kRowMajor, kNoTrans, kNoTrans, kRows, n, kCols, 1, x.data(), kCols, operand.data(),
                 n, 0, out.data(), n);
    else  // V (cols x lanes) = Xᵀ G (rows x lanes)
      blas.sgemm(kRowMajor, kTrans, kNoTrans, kCols, n, kRows, 1, x.data(), kCols, operand.data(),
                 n, 0, out.data(), n);
  });
}

}  // namespace

int run_product_bench(const BenchOptions& o) {
  const std::vector<uint32_t> lane_counts =
      o.batches.empty() ? std::vector<uint32_t>{64, 256, 1024} : o.batches;
  const uint32_t threads = o.threads ? o.threads : 1;
  std::vector<float> x(size_t{kRows} * kCols);
  std::vector<uint32_t> x_words(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = pseudo(i * 37, 23, 1.0f / 11);
    std::memcpy(&x_words[i], &x[i], sizeof x[i]);
  }
  OpenBlas blas;
  const bool have_blas = blas.load();
  if (have_blas) blas.set_threads(static_cast<int>(threads));
  const double ghz = core_ghz();
  // Peak: 2 vector ports x 16 floats (AVX-512) x 2 flops of a fused multiply-add per cycle;
  // the vm's order has no fma (a rounded product, then a rounded add), so its ceiling is half.
  const double peak = ghz * 64 * threads;
  if (o.print_table) {
    fmt::print(
        "\nmatmul: the vm's matrix products against OpenBLAS sgemm ({}), {} thread(s), "
        "GFLOP per CPU-second (2 * M * K * lanes flops); peak {:.0f} GFLOP/s ({} GHz x "
        "64 flops/cycle: two AVX-512 fma ports; without fma, as the vm's order needs, "
        "half)\n",
        have_blas ? fmt::format("core {}", blas.corename()) : "skipped: needs libopenblas-dev",
        threads, peak, ghz);
    fmt::print("{:>7} {:>6} {:>10} {:>10} {:>9} {:>8}\n", "product", "lanes", "vm", "openblas",
               "vm/blas", "vm/peak");
  }
  int status = 0;
  for (const bool left : {true, false}) {
    auto module = Module::compile(left ? kLeftSource : kRightSource, {"matmul.ab", "main"});
    if (!module) {
      fmt::print(stderr, "error: {}\n", module.error());
      return 1;
    }
    for (uint32_t lanes : lane_counts) {
      ProductRow row = run_vm_row(**module, left, lanes, o, x_words);
      if (have_blas)
        row.blas_seconds = blas_seconds(blas, left, lanes, o.repeats ? o.repeats : 5, x);
      const double flops = 2.0 * kRows * kCols * lanes;
      auto rate = [&](double s) { return s > 0 ? flops / s / 1e9 : 0.0; };
      if (!row.error.empty()) status = 1;
      if (!o.print_table) continue;
      fmt::print("{:>7} {:>6} {:>10.1f} {:>10} {:>9} {:>7.0f}%{}\n", row.product, lanes,
                 rate(row.vm_seconds),
                 have_blas ? fmt::format("{:.1f}", rate(row.blas_seconds)) : "-",
                 have_blas ? fmt::format("{:.2f}x", row.blas_seconds / row.vm_seconds) : "-",
                 peak > 0 ? 100 * rate(row.vm_seconds) / peak : 0.0,
                 row.error.empty() ? "" : "  " + row.error);
    }
  }
  return status;
}

}  // namespace ab::bench
