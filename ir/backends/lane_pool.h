// Worker threads for the VM: a step whose block is big enough runs its lanes in chunks side by
// side (ir/backends/vm.cpp). Lanes are independent within a step, so the chunks need no locks;
// the pool only starts the chunks and waits for them. Parallel steps come every few
// microseconds, between serial ones, so a waiting thread (an idle worker, or the caller waiting
// for its workers) spins a short while before it blocks: waking a sleeping thread costs more
// than such a step (measured: the 100-d logistic regression ran 4x slower with workers that
// slept between steps). Spinning any longer only helps while every thread has a core of its
// own: the VM never asks for more threads than usable_cores().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "autobatch/batch.h"  // usable_cores()

namespace ab {

class LanePool {
 public:
  // `threads` in all, the caller's included. When the system refuses to start a worker (a
  // thread or process limit, the address space), the pool keeps those that started: threads()
  // says how many, refused() how many were not.
  explicit LanePool(unsigned threads);
  ~LanePool();
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }
  unsigned refused() const { return refused_; }
  // Runs task(0) .. task(threads() - 1), task 0 on the calling thread; returns when all are done.
  void run(const std::function<void(unsigned)>& task);

 private:
  void work(unsigned index);

  std::vector<std::thread> workers_;
  unsigned refused_ = 0;
  const std::function<void(unsigned)>* task_ = nullptr;
  std::atomic<uint64_t> generation_{0};  // bumped once per run
  std::atomic<unsigned> pending_{0};     // workers still running this generation's task
  std::atomic<unsigned> sleepers_{0};
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;  // for sleeping only
  std::condition_variable wake_;
};

}  // namespace ab
