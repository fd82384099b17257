#include "cpu/vm.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

#include "cpu/lane_pool.h"
#include "cpu/vm_kernels.h"
#include "cpu/vm_lane_alone.h"
#include "ir/fault_detail.h"

namespace ab {
namespace {

// Memory that is zero from calloc (the OS's fresh pages, for a large block) and that a vector
// value-initialises by doing nothing: words no kernel ever writes cost address space only. The
// registers hold, per lane, every variable's words, also a Temp holding a whole uniform that its
// readers view in place (X in `X @ w`: 4 MB a lane, which no op then writes: vm_kernels.h).
template <class T>
struct ZeroedAllocator {
  using value_type = T;
  ZeroedAllocator() = default;
  template <class U>
  explicit ZeroedAllocator(const ZeroedAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = std::calloc(n, sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  void construct(U*) noexcept {}  // value-initialised: calloc's zeros
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
  bool operator==(const ZeroedAllocator&) const { return true; }
};

}  // namespace

int32_t pick_min_pc(const std::vector<uint32_t>& waiting) {
  for (size_t b = 0; b < waiting.size(); ++b)
    if (waiting[b]) return static_cast<int32_t>(b);
  return -1;
}

int32_t pick_most_lanes(const std::vector<uint32_t>& waiting) {
  int32_t best = -1;
  for (size_t b = 0; b < waiting.size(); ++b)
    if (waiting[b] && (best < 0 || waiting[b] > waiting[best])) best = static_cast<int32_t>(b);
  return best;
}

BlockPicker block_picker(Heuristic h) {
  return h == Heuristic::MinPc ? pick_min_pc : pick_most_lanes;
}

namespace {

// A sharded run's turns (VmRun's shard_lanes): per shard, one past its last lane, its live lanes
// and the steps it has taken. The next step is the live shard's with the fewest steps, the first
// such: the shards take turns, and one that has ended is skipped.
class ShardTurns {
 public:
  explicit ShardTurns(const std::vector<uint32_t>& lanes) {
    for (uint32_t n : lanes) {
      end_.push_back((end_.empty() ? 0 : end_.back()) + n);
      live_.push_back(n);
    }
    steps_.assign(end_.size(), 0);
  }
  bool sharded() const { return !end_.empty(); }
  uint32_t next() const {  // while some lane is live
    uint32_t next = 0;
    bool found = false;
    for (uint32_t s = 0; s < end_.size(); ++s)
      if (live_[s] && (!found || steps_[s] < steps_[next])) next = s, found = true;
    return next;
  }
  bool holds(uint32_t shard, uint32_t lane) const {
    return lane >= (shard ? end_[shard - 1] : 0) && lane < end_[shard];
  }
  uint32_t live(uint32_t shard) const { return live_[shard]; }
  // Shard `shard` took a step in which `ended` of its lanes finished or faulted.
  void stepped(uint32_t shard, uint32_t ended) {
    live_[shard] -= ended;
    ++steps_[shard];
  }
  const std::vector<uint64_t>& steps() const { return steps_; }
  // A checkpoint's steps, and the live lanes of its PCs (`exit`: a lane that has ended).
  void restore(const std::vector<uint64_t>& steps, const std::vector<int32_t>& pc, int32_t exit) {
    steps_ = steps;
    for (uint32_t s = 0, lane = 0; s < end_.size(); ++s)
      for (live_[s] = 0; lane < end_[s]; ++lane)
        live_[s] += pc[lane] != exit;
  }

 private:
  std::vector<uint32_t> end_, live_;
  std::vector<uint64_t> steps_;
};

}  // namespace

// The whole batch's state as Algorithm 2 keeps it: per lane a PC stack and registers, per
// Stacked variable a stack and stack pointer, and per block the lanes waiting there. Registers
// and stacks are laid out lanes innermost (word w of variable v for lane l at [v][w][l], stacks
// [depth][words][lanes], the PC stack [depth][lanes]), as the Vulkan engine's state buffer is:
// each op of a step is a loop across the lanes waiting there (vm_kernels.h). The public views
// (snapshot, checkpoint, registers) keep the lane-major order and are transposed on demand.
class VmRun::State {
 public:
  State(const LoweredProgram& p, const Batch& batch, const RunOptions& options, VmSchedule schedule,
        const std::vector<uint32_t>& shard_lanes)
      : program_(p),
        batch_(batch),
        options_(options),
        schedule_(shard_lanes.empty() ? schedule : VmSchedule::OneBlockPerStep),
        picker_(block_picker(options.heuristic)),
        lanes_(batch.lanes),
        depth_(options.stack_depth),
        capacity_(std::clamp<uint32_t>(options.stack_depth, 1, 8)),
        shards_(shard_lanes) {
    for (const LoweredVar& v : p.vars)
      var_type_.push_back(v.type);
    words_ = layout_words(p.types(), var_type_, offset_);
    regs_.resize(size_t{lanes_} * words_);  // zeros
    mini_offset_.assign(p.vars.size(), 0u);
    for (const LoweredBlock& block : p.blocks) {
      batch_ops_.push_back(prepare_block_ops(block, p, var_type_.data(), offset_.data()));
      size_t words = 0;
      bool all_kernels = true;
      for (const BatchOp& op : batch_ops_.back()) {
        all_kernels = all_kernels && op.run;
        words += op.words;
      }
      block_words_.push_back(all_kernels ? words : 0);
      uint64_t terms = 0;
      for (const BatchOp& op : batch_ops_.back())
        terms += product_terms(op);
      block_product_terms_.push_back(terms);
      lane_alone_.push_back(plan_lane_alone(block, p, batch_ops_.back(), offset_.data()));
    }
    parallel_choice_.resize(p.blocks.size());
    for (size_t b = 0; b < p.blocks.size(); ++b) {
      const Terminator& t = p.blocks[b].term;
      const bool jumps_back =
          (t.kind == Terminator::Kind::Jump || t.kind == Terminator::Kind::Branch) &&
          (t.target == static_cast<int32_t>(b) || t.target_else == static_cast<int32_t>(b));
      loops_to_itself_.push_back(jumps_back);
    }
    stack_slot_.assign(p.vars.size(), -1);
    for (size_t v = 0; v < p.vars.size(); ++v) {
      if (p.vars[v].storage != Storage::Stacked) continue;
      stack_slot_[v] = static_cast<int32_t>(stacks_.size());
      const uint32_t w = p.types().words(p.vars[v].type);
      stacks_.push_back({static_cast<VarId>(v), w, std::vector<uint32_t>(lanes_, 0u),
                         std::vector<uint32_t>(size_t{lanes_} * capacity_ * w, 0u)});
    }
    pc_.assign(lanes_, p.entry_block);
    pc_stack_.assign(size_t{lanes_} * capacity_, 0);
    pc_depth_.assign(lanes_, 1);
    lane_steps_.assign(lanes_, 0);
    rng_.resize(lanes_);
    waiting_.assign(p.blocks.size(), {});
    waiting_bits_.assign((p.blocks.size() + 63) / 64, 0);
    counts_.assign(p.blocks.size(), 0);
    result_.faulted.assign(lanes_, 0);
    if (p.source->emit_type != Types::kVoid && !options.on_emit) result_.emitted.resize(lanes_);
    result_.stats.lanes = lanes_;
    result_.stats.block_executions.assign(p.blocks.size(), 0);
    block_utilization_sum_.assign(p.blocks.size(), 0.0);
    result_.stats.block_lanes.assign(p.blocks.size(), 0);
    result_.stats.max_stack_depth = 1;
    for (uint32_t lane = 0; lane < lanes_; ++lane) {
      pc_stack_[lane] = p.exit_pc();  // depth 0
      rng_[lane] = {options.seed, options.first_lane + lane, 0};
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        const uint32_t w = p.types().words(p.vars[p.inputs[i]].type);
        for (uint32_t k = 0; k < w; ++k)
          reg(lane, p.inputs[i], k) = batch.inputs[i][size_t{lane} * w + k];
      }
      waiting_[p.entry_block].push_back(lane);
    }
    if (lanes_) mark_waiting(p.entry_block, true);
    live_ = lanes_;
    const unsigned cores = usable_cores();
    const unsigned threads = options.threads ? std::min<unsigned>(options.threads, cores) : cores;
    threads_ = lanes_ > 1 ? threads : 1;
  }

  void set_picker(BlockPicker picker) { picker_ = picker; }
  bool done() const { return live_ == 0; }

  int32_t next_block() {
    if (done()) return -1;
    if (shards_.sharded()) return shard_block(shards_.next());
    if (picker_ == pick_min_pc) return first_waiting();
    for (size_t b = 0; b < counts_.size(); ++b)
      counts_[b] = static_cast<uint32_t>(waiting_[b].size());
    return picker_(counts_);
  }

  // One step of Algorithm 2: pick a block, run it for every lane waiting there. Returns the
  // steps it counts as (VmSchedule::LoopTiles: a loop's iterations).
  uint64_t step() {
    const bool sharded = shards_.sharded();
    const uint32_t shard = sharded ? shards_.next() : 0;
    const int32_t block = sharded ? shard_block(shard) : next_block();
    if (schedule_ == VmSchedule::LoopTiles && loops_to_itself_[block]) return run_loop_tiles(block);
    take_waiting(block, shard);
    ++version_;
    // In lane order, so that lanes that run together mostly sit side by side (a dense set when
    // all of them wait here). Lanes of a step are independent, so the order changes nothing
    // but the order of a step's emitted records.
    if (!std::is_sorted(active_.begin(), active_.end())) std::sort(active_.begin(), active_.end());
    RunStats& stats = result_.stats;
    ++stats.steps;
    ++stats.block_executions[block];
    const uint32_t live_before = live_;
    const double share =
        static_cast<double>(active_.size()) / (sharded ? shards_.live(shard) : live_);
    utilization_sum_ += share;
    if (!stats.block_lanes.empty()) {  // not after a restore
      block_utilization_sum_[block] += share;
      stats.block_lanes[block] += active_.size();
    }
    stats.utilization = utilization_sum_ / static_cast<double>(stats.steps);
    if (options_.record_trace)
      result_.trace.push_back({block, static_cast<uint32_t>(active_.size())});
    run_block(block);
    for (uint32_t lane : running_) {
      const int32_t next = finish_lane(block, lane);
      if (next < 0) continue;
      pc_[lane] = next;
      if (next == program_.exit_pc()) {
        --live_;
        continue;
      }
      wait_at(next, lane);
    }
    if (sharded) shards_.stepped(shard, live_before - live_);  // every lane that ended is its
    // active_ keeps the lanes that ran until the next step, for last_active().
    return 1;
  }

  uint64_t steps() const { return result_.stats.steps; }

  RunResult result() const {
    RunResult r = result_;
    r.stats.lane_steps = 0;
    for (uint64_t s : lane_steps_)
      r.stats.lane_steps += s;
    if (!r.stats.block_lanes.empty()) {
      r.stats.block_utilization.assign(block_utilization_sum_.size(), 0.0);
      for (size_t b = 0; b < block_utilization_sum_.size(); ++b)
        if (r.stats.block_executions[b])
          r.stats.block_utilization[b] =
              block_utilization_sum_[b] / static_cast<double>(r.stats.block_executions[b]);
    }
    const uint32_t out_words =
        program_.output < 0 ? 0 : program_.types().words(program_.vars[program_.output].type);
    r.outputs.assign(size_t{lanes_} * out_words, 0u);
    for (uint32_t lane = 0; lane < lanes_; ++lane)
      if (!r.faulted[lane] && out_words && pc_[lane] == program_.exit_pc())
        for (uint32_t k = 0; k < out_words; ++k)
          r.outputs[size_t{lane} * out_words + k] = reg(lane, program_.output, k);
    std::sort(r.errors.begin(), r.errors.end(),
              [](const LaneError& a, const LaneError& b) { return a.lane < b.lane; });
    return r;
  }

  const std::vector<int32_t>& lane_pcs() const { return pc_; }
  const std::vector<uint32_t>& lane_depths() const { return pc_depth_; }
  const std::vector<uint8_t>& lane_faulted() const { return result_.faulted; }
  // [lane][words]: the registers transposed, once per step.
  const std::vector<uint32_t>& registers() const {
    if (lane_major_version_ != version_) {
      lane_major_.resize(regs_.size());
      for (uint32_t w = 0; w < words_; ++w)
        for (uint32_t lane = 0; lane < lanes_; ++lane)
          lane_major_[size_t{lane} * words_ + w] = regs_[size_t{w} * lanes_ + lane];
      lane_major_version_ = version_;
    }
    return lane_major_;
  }
  const std::vector<uint32_t>& last_active() const { return active_; }

  BatchSnapshot snapshot(uint32_t first, uint32_t count) const {
    first = std::min(first, lanes_);
    count = std::min(count, lanes_ - first);
    const uint32_t end = first + count;
    BatchSnapshot s;
    s.step = result_.stats.steps;
    s.lanes = count;
    s.stack_depth = depth_;
    s.stack_capacity = capacity_;
    auto part = [&](const auto& v) {
      return std::remove_cvref_t<decltype(v)>(v.begin() + first, v.begin() + end);
    };
    s.pc = part(pc_);
    s.pc_depth = part(pc_depth_);
    s.pc_stack = lane_major(pc_stack_, capacity_, first, end);
    s.registers = lane_major(regs_, words_, first, end);
    for (const Stack& st : stacks_)
      s.stacks.push_back(
          {st.var, part(st.depth), lane_major(st.data, capacity_ * st.words, first, end)});
    s.lane_steps = part(lane_steps_);
    s.faulted = part(result_.faulted);
    return s;
  }

  VmCheckpoint checkpoint() const {
    VmCheckpoint c;
    c.step = result_.stats.steps;
    c.pc = pc_;
    c.pc_depth = pc_depth_;
    for (uint32_t lane = 0; lane < lanes_; ++lane)
      for (uint32_t d = 0; d < pc_depth_[lane]; ++d)
        c.pc_stack.push_back(pc_stack_[size_t{d} * lanes_ + lane]);
    c.registers = registers();
    for (const Stack& st : stacks_) {
      VmCheckpoint::VarStack out{st.depth, {}};
      for (uint32_t lane = 0; lane < lanes_; ++lane)
        for (size_t i = 0; i < size_t{st.depth[lane]} * st.words; ++i)
          out.words.push_back(st.data[i * lanes_ + lane]);
      c.stacks.push_back(std::move(out));
    }
    c.lane_steps = lane_steps_;
    c.random_draws.resize(lanes_);
    for (uint32_t lane = 0; lane < lanes_; ++lane)
      c.random_draws[lane] = rng_[lane].draws;
    c.faulted = result_.faulted;
    c.errors = result_.errors;
    c.calls = result_.stats.calls;
    c.block_executions = result_.stats.block_executions;
    c.max_stack_depth = result_.stats.max_stack_depth;
    c.utilization_sum = utilization_sum_;
    c.shard_steps = shards_.steps();
    return c;
  }

  void restore(const VmCheckpoint& c) {
    uint32_t deepest = 1;
    for (uint32_t d : c.pc_depth)
      deepest = std::max(deepest, d);
    for (const VmCheckpoint::VarStack& st : c.stacks)
      for (uint32_t d : st.depth)
        deepest = std::max(deepest, d);
    capacity_ = std::min(depth_, std::max(capacity_, deepest));
    pc_ = c.pc;
    pc_depth_ = c.pc_depth;
    ++version_;
    pc_stack_.assign(size_t{lanes_} * capacity_, 0);
    for (uint32_t lane = 0, at = 0; lane < lanes_; at += pc_depth_[lane], ++lane)
      for (uint32_t d = 0; d < pc_depth_[lane]; ++d)
        pc_stack_[size_t{d} * lanes_ + lane] = c.pc_stack[at + d];
    for (uint32_t lane = 0; lane < lanes_; ++lane)
      for (uint32_t w = 0; w < words_; ++w)
        regs_[size_t{w} * lanes_ + lane] = c.registers[size_t{lane} * words_ + w];
    for (size_t i = 0; i < stacks_.size(); ++i) {
      Stack& st = stacks_[i];
      st.depth = c.stacks[i].depth;
      st.data.assign(size_t{lanes_} * capacity_ * st.words, 0u);
      size_t at = 0;
      for (uint32_t lane = 0; lane < lanes_; ++lane) {
        const size_t n = size_t{st.depth[lane]} * st.words;
        for (size_t k = 0; k < n; ++k)
          st.data[k * lanes_ + lane] = c.stacks[i].words[at + k];
        at += n;
      }
    }
    lane_steps_ = c.lane_steps;
    for (uint32_t lane = 0; lane < lanes_; ++lane)
      rng_[lane].draws = c.random_draws[lane];
    result_.faulted = c.faulted;
    result_.errors = c.errors;
    result_.stats.steps = c.step;
    result_.stats.calls = c.calls;
    result_.stats.block_executions = c.block_executions;
    result_.stats.max_stack_depth = c.max_stack_depth;
    utilization_sum_ = c.utilization_sum;
    block_utilization_sum_.clear();  // the checkpoint does not hold the per-block figures
    result_.stats.block_lanes.clear();
    result_.stats.utilization = c.step ? utilization_sum_ / static_cast<double>(c.step) : 0.0;
    if (result_.trace.size() > c.step) result_.trace.resize(c.step);
    // Lanes in a block's waiting list run independently, so rebuilding the lists in lane order
    // gives the same states as the original order.
    for (auto& w : waiting_)
      w.clear();
    std::fill(waiting_bits_.begin(), waiting_bits_.end(), 0);
    active_.clear();
    live_ = 0;
    for (uint32_t lane = 0; lane < lanes_; ++lane) {
      if (pc_[lane] == program_.exit_pc()) continue;
      waiting_[pc_[lane]].push_back(lane);
      mark_waiting(pc_[lane], true);
      ++live_;
    }
    shards_.restore(c.shard_steps, pc_, program_.exit_pc());
  }

  BatchSnapshot snapshot() const {
    BatchSnapshot s;
    s.step = result_.stats.steps;
    s.lanes = lanes_;
    s.stack_depth = depth_;
    s.stack_capacity = capacity_;
    s.pc = pc_;
    s.pc_depth = pc_depth_;
    s.pc_stack = lane_major(pc_stack_, capacity_, 0, lanes_);
    s.registers = registers();
    for (const Stack& st : stacks_)
      s.stacks.push_back({st.var, st.depth, lane_major(st.data, capacity_ * st.words, 0, lanes_)});
    s.lane_steps = lane_steps_;
    s.faulted = result_.faulted;
    return s;
  }

 private:
  // A Stacked variable's stack: word w of entry d for lane l at data[(d * words + w) * lanes + l].
  struct Stack {
    VarId var = -1;
    uint32_t words = 0;
    std::vector<uint32_t> depth;  // [lane]
    std::vector<uint32_t> data;
  };

  // Word k of variable v for `lane`.
  uint32_t& reg(uint32_t lane, VarId v, uint32_t k = 0) {
    return regs_[size_t{offset_[v] + k} * lanes_ + lane];
  }
  uint32_t reg(uint32_t lane, VarId v, uint32_t k = 0) const {
    return regs_[size_t{offset_[v] + k} * lanes_ + lane];
  }

  // Lanes [first, end) of a [row][lane] array, as [lane][row] (rows rows per lane).
  template <class T, class A>
  std::vector<T> lane_major(const std::vector<T, A>& v, size_t rows, uint32_t first,
                            uint32_t end) const {
    std::vector<T> out(rows * (end - first));
    for (size_t r = 0; r < rows; ++r)
      for (uint32_t lane = first; lane < end; ++lane)
        out[(lane - first) * rows + r] = v[r * lanes_ + lane];
    return out;
  }

  // Makes room for stack index `sp` (< depth_) in every stack, doubling the capacity. The
  // entries are the outermost index, so growing appends and moves nothing.
  void reserve(uint32_t sp) {
    if (sp < capacity_) return;
    const uint32_t grown = std::min(depth_, std::max(capacity_ * 2, sp + 1));
    pc_stack_.resize(size_t{lanes_} * grown, 0);
    for (Stack& s : stacks_)
      s.data.resize(size_t{lanes_} * grown * s.words, 0u);
    capacity_ = grown;
  }

  int32_t fault(uint32_t lane, Fault code, const LoweredBlock& block, SourceLoc loc) {
    result_.faulted[lane] = 1;
    result_.errors.push_back({lane,
                              code,
                              program_.source->functions[written_in(loc, block.function)].name,
                              loc.line,
                              lane_steps_[lane],
                              {}});
    return -1;
  }

  // The min-PC rule without a count per block: the first set bit of the blocks with lanes
  // waiting (with the sampler's hundred-odd blocks, counting them all took a tenth of a step).
  int32_t first_waiting() const {
    for (size_t w = 0; w < waiting_bits_.size(); ++w)
      if (waiting_bits_[w])
        return static_cast<int32_t>(w * 64 + std::countr_zero(waiting_bits_[w]));
    return -1;
  }
  void mark_waiting(int32_t block, bool waiting) {
    const uint64_t bit = uint64_t{1} << (block % 64);
    waiting ? waiting_bits_[block / 64] |= bit : waiting_bits_[block / 64] &= ~bit;
  }

  // The block shard `s` runs next: the heuristic over its own waiting lanes, as a VM of the
  // shard alone would pick.
  int32_t shard_block(uint32_t s) {
    std::fill(counts_.begin(), counts_.end(), 0u);
    for (size_t b = 0; b < waiting_.size(); ++b)
      for (uint32_t lane : waiting_[b])
        counts_[b] += shards_.holds(s, lane);
    return picker_(counts_);
  }
  // Moves the lanes waiting at `block` into active_: all of them, or when sharded those of
  // `shard`.
  void take_waiting(int32_t block, uint32_t shard) {
    std::vector<uint32_t>& waiting = waiting_[block];
    if (!shards_.sharded()) {
      active_.swap(waiting);
      waiting.clear();
    } else {
      active_.clear();
      size_t kept = 0;
      for (uint32_t lane : waiting)
        if (shards_.holds(shard, lane))
          active_.push_back(lane);
        else
          waiting[kept++] = lane;
      waiting.resize(kept);
    }
    if (waiting.empty()) mark_waiting(block, false);
  }

  void wait_at(int32_t block, uint32_t lane) {
    if (waiting_[block].empty()) mark_waiting(block, true);
    waiting_[block].push_back(lane);
  }

  // VmSchedule::LoopTiles' step for a block that can jump back to itself: its waiting lanes in
  // tiles of kLoopTileLanes, each tile running the block again and again (as run_block: the
  // step budget, the ops, the terminator) until none of its lanes stays or kLoopTileIterations
  // have run; lanes still in the loop then wait there for the next step. Returns the most
  // iterations a lane ran. The statistics count iteration i as a step of the lanes (of every
  // tile) that ran it, over the lanes live at it (lanes_at_ and ended_at_).
  uint64_t run_loop_tiles(int32_t block) {
    loop_lanes_.swap(waiting_[block]);
    waiting_[block].clear();
    mark_waiting(block, false);
    ++version_;
    std::sort(loop_lanes_.begin(), loop_lanes_.end());  // tiles of neighbouring lanes
    lanes_at_.clear();
    ended_at_.clear();
    const uint32_t live_before = live_;
    for (size_t first = 0; first < loop_lanes_.size(); first += kLoopTileLanes) {
      const size_t end = std::min(loop_lanes_.size(), first + kLoopTileLanes);
      active_.assign(loop_lanes_.begin() + first, loop_lanes_.begin() + end);
      for (uint32_t i = 0; i < kLoopTileIterations && !active_.empty(); ++i) {
        if (lanes_at_.size() == i) {
          lanes_at_.push_back(0);
          ended_at_.push_back(0);
        }
        lanes_at_[i] += active_.size();
        const uint32_t live = live_;
        run_block(block);
        size_t stay = 0;
        for (uint32_t lane : running_) {
          const int32_t next = finish_lane(block, lane);
          if (next == block) {
            active_[stay++] = lane;
            continue;
          }
          if (next < 0) continue;
          pc_[lane] = next;
          if (next == program_.exit_pc())
            --live_;
          else
            wait_at(next, lane);
        }
        active_.resize(stay);
        ended_at_[i] += live - live_;
      }
      for (uint32_t lane : active_)
        wait_at(block, lane);
    }
    RunStats& stats = result_.stats;
    uint32_t live = live_before;
    for (size_t i = 0; i < lanes_at_.size(); ++i) {
      const double share = static_cast<double>(lanes_at_[i]) / live;
      utilization_sum_ += share;
      if (!stats.block_lanes.empty()) {  // not after a restore
        block_utilization_sum_[block] += share;
        stats.block_lanes[block] += lanes_at_[i];
      }
      live -= ended_at_[i];
    }
    stats.steps += lanes_at_.size();
    stats.block_executions[block] += lanes_at_.size();
    stats.utilization = utilization_sum_ / static_cast<double>(stats.steps);
    active_.clear();
    return lanes_at_.size();
  }

  // Stops a lane that faulted during the step.
  void stop(uint32_t lane, Fault code, const LoweredBlock& block, SourceLoc loc) {
    fault(lane, code, block, loc);
    pc_[lane] = program_.exit_pc();
    --live_;
  }

  // Runs `block`'s ops for every lane of active_ (cpu/vm_kernels.h: op by op, each over
  // all the lanes); leaves in running_ the lanes that did not fault.
  void run_block(int32_t block_index) {
    const LoweredBlock& block = program_.blocks[block_index];
    running_.clear();
    for (uint32_t lane : active_) {
      if (!step_allowed(lane_steps_[lane], options_.max_steps)) {
        stop(lane, Fault::StepBudget, block, block.loc);
        continue;
      }
      ++lane_steps_[lane];
      running_.push_back(lane);
    }
    // A block with a product splits the product (split_product), else its lanes in chunks.
    const uint64_t terms = block_product_terms_[block_index];
    const bool big = terms > 0 ? running_.size() * terms >= kParallelTerms
                               : running_.size() * block_words_[block_index] >= kParallelWords &&
                                     running_.size() >= 2 * threads_;
    if (threads_ > 1 && big) {
      if (!pool_) {  // at the first big step
        pool_ = std::make_unique<LanePool>(threads_);
        threads_ = pool_->threads();  // fewer when the system refused some
        result_.stats.threads = threads_;
        result_.stats.threads_refused = pool_->refused();
      }
      ParallelChoice& choice = parallel_choice_[block_index];
      const bool parallel = choice.parallel();
      const double lanes = static_cast<double>(running_.size());
      const auto started = std::chrono::steady_clock::now();
      if (parallel && terms > 0)
        run_ops(block_index, 0, running_, true);
      else if (parallel)
        run_ops_in_parallel(block_index);
      else
        run_here(block_index);
      choice.took(
          parallel,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() /
              lanes);
    } else
      run_here(block_index);
  }

  // The step's lanes on this thread: each lane alone where the block allows it (vm_lane_alone.h;
  // a lane whose kernel declines runs as usual afterwards), else all of them op by op.
  void run_here(int32_t block_index) {
    if (!lane_alone_[block_index].eligible) return run_ops(block_index, 0, running_);
    lane_frame_.resize(size_t{words_} * kLaneAloneGroup);  // at the first such step
    std::vector<uint32_t> declined =
        ab::run_lanes_alone(lane_alone_[block_index], batch_ops_[block_index],
                            {regs_.data(), lanes_}, running_, lane_frame_, batch_.uniforms);
    run_ops(block_index, 0, declined);
    running_.insert(running_.end(), declined.begin(), declined.end());
  }

  // The block's ops from `first_op` on for `lanes`, dropping lanes that fault; with
  // `split_products`, each product across the pool (run_product_in_parts).
  void run_ops(int32_t block_index, size_t first_op, std::vector<uint32_t>& lanes,
               bool split_products = false) {
    const LoweredBlock& block = program_.blocks[block_index];
    const BatchFrames frames{regs_.data(), lanes_};
    const std::vector<BatchOp>& ops = batch_ops_[block_index];
    LaneSet set = lane_set(lanes.data(), lanes.size(), mask_);
    for (size_t i = first_op; i < ops.size() && !lanes.empty(); ++i) {
      const Op& op = *ops[i].op;
      const size_t before = lanes.size();
      if (is_stack_op(op))
        stack_op(op, block, lanes, set);
      else if (split_products && run_product_in_parts(ops[i], frames, set))
        continue;
      else if (!ops[i].run || !ops[i].run(ops[i], frames, set, batch_.uniforms))
        exec_lanes(ops[i], block, lanes);
      if (lanes.size() != before) set = lane_set(lanes.data(), lanes.size(), mask_);
    }
  }

  // exec_op for each lane: the op's variables gathered into a small frame of their own
  // (mini_offset_ places them), run, and its destination written back.
  void exec_lanes(const BatchOp& b, const LoweredBlock& block, std::vector<uint32_t>& lanes) {
    const Op& op = *b.op;
    uint32_t size = 0;
    for (VarId v : b.touched) {
      mini_offset_[v] = size;
      size += program_.types().words(var_type_[v]);
    }
    mini_.resize(size);
    const FrameView view{mini_.data(), mini_offset_.data(), var_type_.data()};
    const uint32_t dst_words = op.dst >= 0 ? program_.types().words(var_type_[op.dst]) : 0;
    size_t kept = 0;
    for (uint32_t lane : lanes) {
      for (VarId v : b.touched)
        for (uint32_t k = 0, n = program_.types().words(var_type_[v]); k < n; ++k)
          mini_[mini_offset_[v] + k] = reg(lane, v, k);
      const Fault f = exec_op(op, program_.types(), view, rng_[lane], batch_.uniforms, emitted_);
      if (f != Fault::None) {
        stop(lane, f, block, op.loc);
        if (auto bad = find_index_fault(op, program_.types(), view))
          result_.errors.back().detail = index_fault_text(program_, op, *bad);
        if (f == Fault::AssertFailed) result_.errors.back().detail = op.message;
        continue;
      }
      for (uint32_t k = 0; k < dst_words; ++k)
        reg(lane, op.dst, k) = mini_[mini_offset_[op.dst] + k];
      if (is_emit(op))
        deliver_emitted(options_, program_.types().words(program_.source->emit_type), lane,
                        emitted_, result_);
      lanes[kept++] = lane;
    }
    lanes.resize(kept);
  }

  // The block's lanes in one chunk per thread, each running the ops that have kernels. A
  // kernel that declines (an index out of range) or an op without one (a push, say) stops its
  // chunk there, having written nothing; the chunk finishes on this thread afterwards.
  void run_ops_in_parallel(int32_t block_index) {
    // Four chunks per thread (LanePool::run: a descheduled worker then holds back a quarter of
    // its share, not all of it), each whole cache lines of lanes (16 lanes of a word), so no
    // two threads write one.
    const unsigned threads = pool_->threads() * 4;
    const size_t per_chunk = (running_.size() + threads * 16 - 1) / (threads * 16) * 16;
    chunks_.resize(threads);
    chunk_masks_.resize(threads);
    chunk_stop_.assign(threads, 0);
    for (unsigned t = 0; t < threads; ++t) {
      const size_t first = std::min(running_.size(), t * per_chunk);
      const size_t last = std::min(running_.size(), first + per_chunk);
      chunks_[t].assign(running_.begin() + first, running_.begin() + last);
    }
    const BatchFrames frames{regs_.data(), lanes_};
    const std::vector<BatchOp>& ops = batch_ops_[block_index];
    pool_->run(
        [&](unsigned t) {
          const std::vector<uint32_t>& lanes = chunks_[t];
          const LaneSet set = lane_set(lanes.data(), lanes.size(), chunk_masks_[t]);
          size_t i = 0;
          while (i < ops.size() && !lanes.empty() && ops[i].run &&
                 ops[i].run(ops[i], frames, set, batch_.uniforms))
            ++i;
          chunk_stop_[t] = i;
        },
        threads);
    running_.clear();
    for (unsigned t = 0; t < threads; ++t) {
      run_ops(block_index, chunk_stop_[t], chunks_[t]);
      running_.insert(running_.end(), chunks_[t].begin(), chunks_[t].end());
    }
  }

  // A product with a uniform operand for the set, in parts across the pool, four per thread (a
  // descheduled worker then holds back a quarter of its share: LanePool::run); false, having
  // done nothing, for any other op.
  bool run_product_in_parts(const BatchOp& b, const BatchFrames& frames, const LaneSet& set) {
    const ProductSplit split = split_product(b, frames, set, batch_.uniforms, pool_->threads() * 4);
    if (split.parts() < 2) return false;
    pool_->run(
        [&](unsigned part) { matmul_kernel_part(b, frames, set, batch_.uniforms, split, part); },
        split.parts());
    return true;
  }

  // Push, Pop or Update of one variable for every running lane.
  // Word by word, each across the lanes: the lanes' registers are side by side, and so are
  // their stack entries where the lanes are at one depth.
  void stack_op(const Op& op, const LoweredBlock& block, std::vector<uint32_t>& lanes,
                const LaneSet& set) {
    const VarId v = op.args[0];
    Stack& s = stacks_[stack_slot_[v]];
    const uint32_t w = s.words;
    if (is_push(op)) {
      size_t kept = 0;
      for (uint32_t lane : lanes) {
        if (s.depth[lane] >= depth_) {
          stop(lane, Fault::StackOverflow, block, op.loc);
          continue;
        }
        reserve(s.depth[lane]);
        lanes[kept++] = lane;
      }
      lanes.resize(kept);
    }
    const size_t n = lanes.size();
    // The entry each lane reads or writes: Push writes at sp, Pop reads sp - 1, Update reads
    // sp - 1 and keeps it.
    entry_.resize(n);
    for (size_t j = 0; j < n; ++j) {
      uint32_t& sp = s.depth[lanes[j]];
      entry_[j] = is_push(op) ? sp++ : is_pop(op) ? --sp : sp - 1;
    }
    const size_t plane = size_t{w} * lanes_;  // one entry of every lane
    uint32_t* data = s.data.data();
    for (uint32_t k = 0; k < w; ++k) {
      uint32_t* r = regs_.data() + size_t{offset_[v] + k} * lanes_;
      uint32_t* e = data + size_t{k} * lanes_;
      if (is_push(op)) {
        for (size_t j = 0; j < n; ++j)
          e[entry_[j] * plane + lanes[j]] = r[lanes[j]];
      } else {
        for (size_t j = 0; j < n; ++j)
          r[lanes[j]] = e[entry_[j] * plane + lanes[j]];
      }
    }
  }

  // Runs `block`'s terminator for one lane; returns its next PC, or -1 if it faulted (and
  // stopped).
  int32_t finish_lane(int32_t block_index, uint32_t lane) {
    const LoweredBlock& block = program_.blocks[block_index];
    const Terminator& t = block.term;
    switch (t.kind) {
      case Terminator::Kind::Jump:
        return t.target;
      case Terminator::Kind::Branch:
        return reg(lane, t.cond) ? t.target : t.target_else;
      case Terminator::Kind::PushJump: {
        uint32_t& sp = pc_depth_[lane];
        if (sp >= depth_) {
          stop(lane, Fault::StackOverflow, block, t.loc);
          return -1;
        }
        reserve(sp);
        pc_stack_[size_t{sp++} * lanes_ + lane] = t.target_else;
        ++result_.stats.calls;
        result_.stats.max_stack_depth = std::max(result_.stats.max_stack_depth, sp);
        return t.target;
      }
      case Terminator::Kind::TailJump:  // a call that reuses the frame: nothing to push
        ++result_.stats.calls;
        return t.target;
      case Terminator::Kind::Return:
        return pc_stack_[size_t{--pc_depth_[lane]} * lanes_ + lane];
    }
    return -1;
  }

  const LoweredProgram& program_;
  const Batch& batch_;
  const RunOptions options_;
  const VmSchedule schedule_;
  BlockPicker picker_;
  uint32_t lanes_, depth_;
  uint32_t capacity_;  // allocated stack slots per lane, grown on demand up to depth_
  std::vector<uint32_t> offset_;
  std::vector<TypeId> var_type_;
  uint32_t words_ = 0;
  std::vector<uint32_t, ZeroedAllocator<uint32_t>> regs_;  // [word][lane]
  uint64_t version_ = 0;  // counts steps and restores: when lane_major_ is stale
  mutable std::vector<uint32_t> lane_major_;  // registers(): [lane][word]
  mutable uint64_t lane_major_version_ = UINT64_MAX;
  std::vector<uint32_t> mini_offset_, mini_;  // exec_lanes' small frame
  std::vector<uint32_t> entry_;               // stack_op's entry per lane
  std::vector<int32_t> stack_slot_;
  std::vector<Stack> stacks_;
  std::vector<int32_t> pc_;        // [lane]
  std::vector<int32_t> pc_stack_;  // [depth][lane]
  std::vector<uint32_t> pc_depth_;
  std::vector<uint64_t> lane_steps_;
  std::vector<LaneRandom> rng_;
  std::vector<uint32_t> emitted_;               // the record being handed on
  std::vector<std::vector<uint32_t>> waiting_;  // lanes waiting at each block
  std::vector<uint32_t> counts_, active_;
  std::vector<uint64_t> waiting_bits_;           // bit b: lanes wait at block b
  std::vector<uint32_t> running_;                // lanes of this step not (yet) faulted
  std::vector<std::vector<BatchOp>> batch_ops_;  // per block, its ops bound to the layout
  // Per block, the words its ops write per lane, or 0 if some op has no kernel (the block then
  // runs on this thread alone): a step runs in parallel when its lanes times these words reach
  // kParallelWords, enough work to repay starting the pool (a few microseconds). Measured on the
  // lanes-innermost kernels (2026-11-27, 2 cores): at 16384 the Gaussian's 64 chains ran 2x
  // slower on 2 threads than on 1; at 131072, 0.96-1.17x of one thread, idle or with both cores
  // busy with other processes.
  std::vector<size_t> block_words_;
  static constexpr size_t kParallelWords = 131072;
  // Per block, its products' multiply-adds per lane (product_terms). A product step runs in
  // parallel from kParallelTerms multiply-adds over its lanes on (~10 us on one thread); its
  // lanes' words are no measure of its work (g @ X writes 100 words a lane from 10^6 terms).
  std::vector<uint64_t> block_product_terms_;
  std::vector<LaneAlonePlan> lane_alone_;  // per block
  std::vector<uint32_t> lane_frame_;       // run_lanes_alone's frames of one lane
  static constexpr uint64_t kParallelTerms = uint64_t{1} << 18;
  unsigned threads_ = 1;
  std::unique_ptr<LanePool> pool_;               // started at the first step that runs in parallel
  std::vector<ParallelChoice> parallel_choice_;  // per block, for its big steps
  std::vector<std::vector<uint32_t>> chunks_, chunk_masks_;
  std::vector<uint32_t> mask_;  // run_ops' lane set's mask
  std::vector<size_t> chunk_stop_;
  std::vector<uint8_t> loops_to_itself_;  // per block: its terminator can jump back to it
  // run_loop_tiles': the lanes it took, and per iteration the lanes that ran it and those that
  // finished or faulted in it
  std::vector<uint32_t> loop_lanes_;
  std::vector<uint64_t> lanes_at_;
  std::vector<uint32_t> ended_at_;
  uint32_t live_ = 0;
  ShardTurns shards_;
  double utilization_sum_ = 0;
  std::vector<double> block_utilization_sum_;  // per block; empty after a restore
  RunResult result_;
};

uint64_t vm_bytes_per_lane(const LoweredProgram& p, const RunOptions& options) {
  const uint64_t capacity = std::clamp<uint32_t>(options.stack_depth, 1, 8);  // as State's
  const Types& types = p.types();
  uint64_t words = 0, stacked = 0;
  for (const LoweredVar& v : p.vars) {
    words += types.words(v.type);
    if (v.storage == Storage::Stacked) stacked += 1 + capacity * types.words(v.type);
  }
  const uint64_t output = p.output < 0 ? 0 : types.words(p.vars[p.output].type);
  // registers, stacks, pc + pc_depth + pc stack, lane steps, random stream, the waiting,
  // active and running lists, the fault flag, the output
  return 4 * (words + stacked) + 4 * (2 + capacity) + sizeof(uint64_t) + sizeof(LaneRandom) +
         3 * 4 + 1 + 4 * output +
         (p.source->emit_type != Types::kVoid ? sizeof(std::vector<uint32_t>) : 0);
}

VmRun::VmRun(const LoweredProgram& program, const Batch& batch, const RunOptions& options,
             VmSchedule schedule, const std::vector<uint32_t>& shard_lanes)
    : state_(std::make_unique<State>(program, batch, options, schedule, shard_lanes)) {}

Status check_shard_lanes(const std::vector<uint32_t>& shard_lanes, uint32_t lanes) {
  uint64_t total = 0;
  for (uint32_t n : shard_lanes)
    total += n;
  if (shard_lanes.empty() || total == lanes) return Ok{};
  return Error{fmt::format("the shards' lanes (shard_lanes) add up to {}, but the batch has {}",
                           total, lanes)};
}
VmRun::~VmRun() = default;
void VmRun::set_picker(BlockPicker picker) {
  state_->set_picker(picker);
}
bool VmRun::done() const {
  return state_->done();
}
int32_t VmRun::next_block() const {
  return state_->next_block();
}
uint64_t VmRun::steps() const {
  return state_->steps();
}
BatchSnapshot VmRun::snapshot() const {
  return state_->snapshot();
}
RunResult VmRun::result() const {
  return state_->result();
}
const std::vector<int32_t>& VmRun::lane_pcs() const {
  return state_->lane_pcs();
}
const std::vector<uint32_t>& VmRun::lane_depths() const {
  return state_->lane_depths();
}
const std::vector<uint8_t>& VmRun::lane_faulted() const {
  return state_->lane_faulted();
}
const std::vector<uint32_t>& VmRun::registers() const {
  return state_->registers();
}
const std::vector<uint32_t>& VmRun::last_active() const {
  return state_->last_active();
}
BatchSnapshot VmRun::snapshot(uint32_t first, uint32_t count) const {
  return state_->snapshot(first, count);
}
VmCheckpoint VmRun::checkpoint() const {
  return state_->checkpoint();
}
void VmRun::restore(const VmCheckpoint& checkpoint) {
  state_->restore(checkpoint);
}

uint64_t VmRun::step(uint64_t n) {
  uint64_t taken = 0;
  while (taken < n && !state_->done())
    taken += state_->step();
  return taken;
}

RunResult run_vm(const LoweredProgram& program, const Batch& batch, const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const bool tiles = options.loop_tiles && !options.record_trace;
  VmRun run(program, batch, options, tiles ? VmSchedule::LoopTiles : VmSchedule::OneBlockPerStep);
  bool stopped = false;
  if (!options.should_stop) {
    run.step(UINT64_MAX);
  } else {
    constexpr uint64_t kStepsBetweenPolls = 64;
    while (!run.done() && !stopped) {
      run.step(kStepsBetweenPolls);
      stopped = !run.done() && options.should_stop();
    }
  }
  RunResult result = run.result();
  result.stopped = stopped;
  result.stats.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace ab
