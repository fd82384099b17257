// run_native: the lanes split over one std::thread per core.
#include <algorithm>
#include <thread>
#include <vector>

#include "bench/native.h"

namespace ab::bench {

RunResult run_native(NativeLaneFn lane_fn, const Batch& batch, uint32_t out_words, uint64_t seed) {
  RunResult result;
  result.outputs.assign(size_t{batch.lanes} * out_words, 0u);
  result.faulted.assign(batch.lanes, 0);
  result.stats.lanes = batch.lanes;
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  const uint32_t threads = std::max(1u, std::min(cores, batch.lanes));
  const uint32_t chunk = (batch.lanes + threads - 1) / threads;
  auto run_range = [&](uint32_t first, uint32_t last) {
    for (uint32_t lane = first; lane < last; ++lane)
      lane_fn(batch, seed, lane, result.outputs.data() + size_t{lane} * out_words);
  };
  std::vector<std::thread> workers;
  // The calling thread takes the first chunk itself: at batch 1 no thread is started at all.
  for (uint32_t t = 1; t < threads; ++t) {
    const uint32_t first = std::min(batch.lanes, t * chunk);
    const uint32_t last = std::min(batch.lanes, first + chunk);
    if (first < last) workers.emplace_back(run_range, first, last);
  }
  run_range(0, std::min(batch.lanes, chunk));
  for (std::thread& worker : workers)
    worker.join();
  return result;
}

}  // namespace ab::bench
