#include "ir/backends/lane_pool.h"

namespace ab {
namespace {

// About 50 microseconds of spinning before a worker sleeps.
constexpr int kSpins = 20000;

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

LanePool::LanePool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i)
    workers_.emplace_back([this, i] { work(i); });
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
  for (int spins = 0; pending_.load() != 0; ++spins)
    spins < kSpins ? pause() : std::this_thread::yield();
}

void LanePool::work(unsigned index) {
  uint64_t seen = 0;
  for (;;) {
    for (int spins = 0; generation_.load() == seen && !stopping_.load() && spins < kSpins; ++spins)
      pause();
    if (generation_.load() == seen && !stopping_.load()) {
      std::unique_lock lock(mutex_);
      ++sleepers_;
      wake_.wait(lock, [&] { return stopping_.load() || generation_.load() != seen; });
      --sleepers_;
    }
    if (stopping_.load()) return;
    seen = generation_.load();
    (*task_)(index);
    pending_.fetch_sub(1);
  }
}

}  // namespace ab
