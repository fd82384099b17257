// CPU seconds of this process, the fairest figure on a machine other processes share: the
// bench's own tables (product_bench.h, inline_bench.h) time their rows so.
#pragma once

#include <time.h>

#include <algorithm>
#include <vector>

namespace ab::bench {

inline double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The median of `repeats` runs of `run`, in CPU seconds.
template <class F>
double median_cpu_seconds(int repeats, F&& run) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const double start = process_cpu_seconds();
    run();
    times.push_back(process_cpu_seconds() - start);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace ab::bench
