#include "ir/backends/lane_pool.h"

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
      workers_.emplace_back([this, i] { work(i); });
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

void LanePool::run(const std::function<void(unsigned)>& task) {
  task_ = &task;
  pending_.store(static_cast<unsigned>(workers_.size()));
  generation_.fetch_add(1);  // seq_cst: a worker either sees it or is counted in sleepers_
  if (sleepers_.load() > 0) {
    std::lock_guard lock(mutex_);
    wake_.notify_all();
  }
  task(0);
  if (spin_until([&] { return pending_.load() == 0; })) return;
  // A worker is slow (its core busy with another process): block until the last one is done.
  for (unsigned left = pending_.load(); left != 0; left = pending_.load())
    pending_.wait(left);
}

void LanePool::work(unsigned index) {
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
    (*task_)(index);
    if (pending_.fetch_sub(1) == 1) pending_.notify_one();
  }
}

}  // namespace ab
