// The VM's worker pool (cpu/lane_pool.h): every task index runs once per run, with all
// the workers asked for or, when the system refuses to start some, with those that started.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "cpu/lane_pool.h"
#include "support/child_process.h"

namespace ab {
namespace {

// Runs `runs` rounds on `pool`; true when each round ran every index exactly once.
bool every_index_once(LanePool& pool, int runs) {
  std::vector<std::atomic<int>> ran(pool.threads());
  for (int r = 0; r < runs; ++r) {
    for (auto& n : ran)
      n = 0;
    pool.run([&](unsigned t) { ran[t].fetch_add(1); });
    for (auto& n : ran)
      if (n.load() != 1) return false;
  }
  return true;
}

TEST_CASE("lane pool: each run runs every index once, more threads than cores included") {
  LanePool pool(16);
  CHECK(pool.threads() == 16);
  CHECK(pool.refused() == 0);
  CHECK(every_index_once(pool, 200));
}

TEST_CASE("lane pool: more tasks than threads each run once; a stalled worker holds nothing") {
  LanePool pool(2);
  for (unsigned tasks : {1u, 2u, 3u, 8u, 64u}) {
    CAPTURE(tasks);
    std::vector<std::atomic<int>> ran(tasks);
    for (int r = 0; r < 200; ++r) {
      for (auto& n : ran)
        n = 0;
      pool.run([&](unsigned t) { ran[t].fetch_add(1); }, tasks);
      bool once = true;
      for (auto& n : ran)
        once = once && n.load() == 1;
      REQUIRE(once);
    }
  }
  // A task that blocks its thread until every other task has run: whichever thread took it, the
  // rest are claimed by the others (with the old fixed assignment, task 1 belonged to the worker
  // and a stalled worker held the step).
  std::atomic<int> done{0};
  pool.run(
      [&](unsigned t) {
        if (t == 0) {
          while (done.load() < 7)
            std::this_thread::yield();
        }
        done.fetch_add(1);
      },
      8);
  CHECK(done.load() == 8);
}

TEST_CASE("lane pool: workers the system refuses to start leave a smaller pool that works") {
  const auto outcome = testing::run_in_child([] {
    if (!testing::refuse_new_threads()) return 2;
    LanePool pool(64);
    if (pool.threads() != 1) return 3;
    if (pool.refused() != 63) return 4;
    return every_index_once(pool, 10) ? 0 : 5;
  });
  CHECK_MESSAGE(outcome.exited, outcome.describe());
  CHECK(outcome.code == 0);
}

TEST_CASE("lane pool: usable_cores is the process's CPU affinity") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  CHECK(usable_cores() == static_cast<unsigned>(CPU_COUNT(&set)));
}

TEST_CASE(
    "parallel choice: tries both ways, runs the faster, probes the slower, follows a change") {
  ParallelChoice choice;
  // Parallel first (its first runs start the pool), then serial, kFirstRuns each.
  for (uint32_t i = 0; i < ParallelChoice::kFirstRuns; ++i) {
    REQUIRE(choice.parallel());
    choice.took(true, 3e-6);  // parallel: slow (a worker without a core)
  }
  for (uint32_t i = 0; i < ParallelChoice::kFirstRuns; ++i) {
    REQUIRE(!choice.parallel());
    choice.took(false, 1e-6);
  }
  // Serial is faster: it runs, but for one probe of parallel every kProbeEvery steps.
  uint32_t parallel_steps = 0;
  const uint32_t steps = 10 * ParallelChoice::kProbeEvery;
  for (uint32_t i = 0; i < steps; ++i) {
    const bool parallel = choice.parallel();
    parallel_steps += parallel;
    choice.took(parallel, parallel ? 3e-6 : 1e-6);
  }
  CHECK(parallel_steps == 10);
  // The load goes away: parallel becomes the faster; each probe moves its average a quarter of
  // the way, so after a few probes parallel runs, serial now only as the probe.
  for (uint32_t i = 0; i < steps; ++i) {
    const bool parallel = choice.parallel();
    choice.took(parallel, parallel ? 0.5e-6 : 1e-6);
  }
  parallel_steps = 0;
  for (uint32_t i = 0; i < ParallelChoice::kProbeEvery; ++i) {
    const bool parallel = choice.parallel();
    parallel_steps += parallel;
    choice.took(parallel, parallel ? 0.5e-6 : 1e-6);
  }
  CHECK(parallel_steps == ParallelChoice::kProbeEvery - 1);
}

}  // namespace
}  // namespace ab
