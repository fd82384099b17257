// The benchmarked programs: the table's samples with bench inputs, joined with their natives.
#include "bench/workloads.h"

#include <cstdio>
#include <cstdlib>

namespace ab::bench {
namespace {

// The native C++ baseline of each benchmarked sample (bench/native_*.cpp).
NativeLaneFn native_for(const std::string& name) {
  if (name == "fib") return native_fib;
  if (name == "ackermann") return native_ackermann;
  if (name == "collatz") return native_collatz;
  if (name == "tak") return native_tak;
  if (name == "nuts_tree") return native_nuts_tree;
  if (name == "raytrace") return native_raytrace;
  return nullptr;
}

std::vector<Workload> build_workloads() {
  std::vector<Workload> out;
  for (const samples::Sample& sample : samples::all_samples()) {
    if (!sample.bench) continue;
    Workload w;
    static_cast<samples::BenchInputs&>(w) = *sample.bench;
    w.name = sample.name();
    w.entry = sample.entry;
    w.native = native_for(w.name);
    if (!w.native) {  // a programming error: every benchmarked sample needs its baseline
      std::fprintf(stderr, "bench: no native baseline for sample '%s'\n", w.name.c_str());
      std::abort();
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

const char* input_size_name(InputSize size) {
  return size == InputSize::Heavy ? "heavy" : "light";
}

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> all = build_workloads();
  return all;
}

const Workload* find_workload(const std::string& name) {
  for (const Workload& w : workloads())
    if (w.name == name) return &w;
  return nullptr;
}

}  // namespace ab::bench
