// Prints wall time, steps, utilization and calls/s for fib(N) with divergent inputs (each lane's
// n drawn from 0..N) on the CPU VM and every Vulkan schedule, at the given batch sizes.
// Usage: autobatch_engine_bench [N=20] [batch sizes...=1024 16384]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "autobatch/engine.h"
#include "ir/backends/vm.h"
#include "ir/frontend/frontend.h"
#include "ir/passes/lower.h"

namespace {

const char* kFib = R"(
fn fib(n: int) -> int {
    if n <= 1 { return 1; }
    return fib(n - 1) + fib(n - 2);
}
fn main(n: int) -> int { return fib(n); }
)";

void report(const std::string& what, uint32_t lanes, double seconds, const ab::RunResult& r) {
  fmt::print("{:<22} {:>6} lanes {:>9.3f} s {:>9} steps  util {:>6.3f}  {:>10.3g} calls/s\n", what,
             lanes, seconds, r.stats.steps, r.stats.utilization,
             static_cast<double>(r.stats.calls) / seconds);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 20;
  std::vector<uint32_t> sizes;
  for (int i = 2; i < argc; ++i)
    sizes.push_back(static_cast<uint32_t>(std::atoi(argv[i])));
  if (sizes.empty()) sizes = {1024, 16384};

  ab::Diagnostics diags("fib.ab", kFib);
  auto program = ab::compile_source(kFib, "fib.ab", diags);
  if (!program) {
    fmt::print(stderr, "{}", diags.format());
    return 1;
  }
  const ab::LoweredProgram lowered = ab::lower(*program, program->find_function("main"));
  auto context = ab::VulkanContext::create();
  if (!context) {
    fmt::print(stderr, "{}\n", context.error());
    return 1;
  }
  fmt::print("device: {} ({})\n", (*context)->device().name, (*context)->device().driver);

  struct Variant {
    const char* name;
    ab::Schedule schedule;
    ab::GlobalMode mode;
    ab::LocalScope scope;
  };
  const Variant variants[] = {
      {"global/masked", ab::Schedule::Global, ab::GlobalMode::Masked, ab::LocalScope::Subgroup},
      {"global/compacted", ab::Schedule::Global, ab::GlobalMode::Compacted,
       ab::LocalScope::Subgroup},
      {"local/subgroup", ab::Schedule::Local, ab::GlobalMode::Compacted, ab::LocalScope::Subgroup},
      {"local/workgroup", ab::Schedule::Local, ab::GlobalMode::Compacted,
       ab::LocalScope::Workgroup},
      {"local/lane", ab::Schedule::Local, ab::GlobalMode::Compacted, ab::LocalScope::Lane},
  };
  for (uint32_t lanes : sizes) {
    ab::Batch batch;
    batch.lanes = lanes;
    batch.inputs.resize(1);
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      h ^= h << 13, h ^= h >> 7, h ^= h << 17;
      batch.inputs[0].push_back(static_cast<uint32_t>(h % static_cast<uint64_t>(n + 1)));
    }
    ab::RunOptions options;
    auto start = std::chrono::steady_clock::now();
    const ab::RunResult vm = ab::run_vm(lowered, batch, options);
    report("vm", lanes,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), vm);
    for (const Variant& v : variants) {
      ab::VulkanOptions vulkan;
      vulkan.schedule = v.schedule;
      vulkan.global_mode = v.mode;
      vulkan.local_scope = v.scope;
      ab::VulkanStats stats;
      auto result = ab::run_vulkan(lowered, batch, options, vulkan, &stats, *context);
      if (!result) {
        fmt::print(stderr, "{}: {}\n", v.name, result.error());
        return 1;
      }
      report(v.name, lanes, stats.run_seconds, *result);
      fmt::print("{:<22} compile {:.3f} s, {} submissions, {} dispatches{}\n", "",
                 stats.compile_seconds, stats.submissions, stats.dispatches,
                 result->outputs == vm.outputs ? "" : "  MISMATCH");
    }
  }
  return 0;
}
