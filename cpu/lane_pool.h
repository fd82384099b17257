// Worker threads for the VM: a step whose block is big enough runs its lanes in chunks side by
// side (cpu/vm.cpp). Lanes are independent within a step, so the chunks need no locks;
// the pool only starts the chunks and waits for them. Parallel steps come every few
// microseconds, between serial ones, so a waiting thread (an idle worker, or the caller waiting
// for its workers) spins a short while before it blocks: waking a sleeping thread costs more
// than such a step (measured: the 100-d logistic regression ran 4x slower with workers that
// slept between steps). Spinning any longer only helps while every thread has a core of its
// own: the VM never asks for more threads than usable_cores().
#pragma once

#include <algorithm>
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
  // Runs task(0) .. task(threads() - 1), each once, on whichever threads claim them first (the
  // caller claims too); returns when all are done. A worker whose core is busy with another
  // process therefore never holds the step up unless it had already claimed a task: the caller
  // runs the unclaimed ones itself (without this, 2 threads ran up to 18x slower than 1 on a
  // loaded machine).
  // `tasks` (default: threads()) may be more than the threads, so that a worker descheduled in
  // the middle of one holds back only a small part of the step.
  void run(const std::function<void(unsigned)>& task, unsigned tasks = 0);

 private:
  void work();
  // Claims and runs this generation's unclaimed tasks until none is left.
  void run_claimed(uint32_t generation);

  std::vector<std::thread> workers_;
  unsigned refused_ = 0;
  const std::function<void(unsigned)>* task_ = nullptr;
  std::atomic<uint64_t> generation_{0};  // bumped once per run
  // The generation (high 32 bits) and its next unclaimed task (low 32 bits), claimed by CAS so
  // that a worker late from an earlier generation cannot take a task of this one.
  std::atomic<uint64_t> claim_{0};
  std::atomic<unsigned> done_{0};  // tasks of this generation finished
  unsigned tasks_ = 0;             // this generation's
  std::atomic<unsigned> sleepers_{0};
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;  // for sleeping only
  std::condition_variable wake_;
};

// Whether one block's big steps run on the pool or on the caller alone, chosen by measurement:
// on a machine with other work a worker may lose its core mid-step, and a step of a few tens of
// microseconds then waits for the kernel to give it back (the 100-d regression at 256 chains ran
// 2.5x slower on 2 threads than on 1 with the load at 1-3). Each way's time per lane is a moving
// average; after a few runs of each the faster one runs, and every kProbeEvery-th step runs the
// other to follow a change in the load. Lanes are independent within a step, so the choice
// changes no result, only the time.
class ParallelChoice {
 public:
  static constexpr uint32_t kFirstRuns = 4;    // of each way before choosing
  static constexpr uint32_t kProbeEvery = 32;  // steps between runs of the slower way
  static constexpr double kWeight = 0.25;      // of a new time in the moving average

  // Whether the next step runs in parallel.
  bool parallel() {
    ++steps_;
    if (runs_[1] < kFirstRuns) return true;
    if (runs_[0] < kFirstRuns) return false;
    const bool faster = seconds_[1] <= seconds_[0];
    return steps_ % kProbeEvery == 0 ? !faster : faster;
  }
  // The time a step took per lane, run in parallel or not.
  void took(bool parallel, double seconds_per_lane) {
    double& average = seconds_[parallel];
    average =
        runs_[parallel] == 0 ? seconds_per_lane : average + kWeight * (seconds_per_lane - average);
    runs_[parallel] = std::min(runs_[parallel] + 1, kFirstRuns);
  }

 private:
  double seconds_[2] = {0, 0};  // [serial, parallel]
  uint32_t runs_[2] = {0, 0};
  uint64_t steps_ = 0;
};

}  // namespace ab
