#include "cpu/lane_pool.h"

#include <sched.h>

#include <chrono>
#include <system_error>

namespace ab {
namespace {

// How long a waiting thread spins before it blocks: a few parallel steps' worth.
constexpr auto kSpinTime = std::chrono::microseconds(50);

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until `ready()` or kSpinTime has passed; returns ready().
template <class Ready>
bool spin_until(Ready ready) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      pause();
    }
    if (std::chrono::steady_clock::now() - start > kSpinTime) return ready();
  }
}

}  // namespace

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

LanePool::LanePool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) {
    try {
      workers_.emplace_back([this] { work(); });
    } catch (const std::system_error&) {
      // EAGAIN: RLIMIT_NPROC, a pids cgroup or the address space (each stack is a mapping).
      // The workers that started take the whole step between them.
      refused_ = threads - i;
      break;
    }
  }
}

LanePool::~LanePool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_)
    worker.join();
}

void LanePool::run(const std::function<void(unsigned)>& task, unsigned tasks) {
  if (tasks == 0) tasks = threads();
  tasks_ = tasks;
  task_ = &task;
  done_.store(0);
  const auto generation = static_cast<uint32_t>(generation_.load() + 1);
  claim_.store(uint64_t{generation} << 32);
  generation_.fetch_add(1);  // seq_cst: a worker either sees it or is counted in sleepers_
  if (sleepers_.load() > 0) {
    std::lock_guard lock(mutex_);
    wake_.notify_all();
  }
  run_claimed(generation);
  // Only tasks a worker claimed and is still running are left.
  if (spin_until([&] { return done_.load() == tasks; })) return;
  for (unsigned finished = done_.load(); finished != tasks; finished = done_.load())
    done_.wait(finished);
}

void LanePool::run_claimed(uint32_t generation) {
  for (uint64_t claim = claim_.load();;) {
    const auto index = static_cast<uint32_t>(claim);
    if (static_cast<uint32_t>(claim >> 32) != generation || index >= tasks_) return;
    if (!claim_.compare_exchange_weak(claim, claim + 1)) continue;  // `claim` reloaded
    // Claimed: the caller waits for this task, so task_ stays this generation's.
    (*task_)(index);
    if (done_.fetch_add(1) + 1 == tasks_) done_.notify_all();
    claim = claim_.load();
  }
}

void LanePool::work() {
  uint64_t seen = 0;
  for (;;) {
    auto woken = [&] { return stopping_.load() || generation_.load() != seen; };
    if (!spin_until(woken)) {
      std::unique_lock lock(mutex_);
      ++sleepers_;
      wake_.wait(lock, woken);
      --sleepers_;
    }
    if (stopping_.load()) return;
    seen = generation_.load();
    run_claimed(static_cast<uint32_t>(seen));
  }
}

}  // namespace ab
