#include "ir/backends/vm.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace ab {
namespace {

// Picks the next block among those with lanes waiting (waiting[b] > 0 for some b).
int32_t pick_block(Heuristic h, const std::vector<uint32_t>& waiting) {
  int32_t best = -1;
  for (size_t b = 0; b < waiting.size(); ++b) {
    if (waiting[b] == 0) continue;
    if (h == Heuristic::MinPc) return static_cast<int32_t>(b);
    if (best < 0 || waiting[b] > waiting[best]) best = static_cast<int32_t>(b);
  }
  return best;
}

// The whole batch's state, structure-of-arrays per lane, as Algorithm 2 keeps it.
class BatchState {
 public:
  BatchState(const LoweredProgram& p, const Batch& batch, const RunOptions& options)
      : program_(p), batch_(batch), options_(options), lanes_(batch.lanes),
        depth_(options.stack_depth) {
    std::vector<TypeId> types;
    for (const LoweredVar& v : p.vars) types.push_back(v.type);
    var_type_ = types;
    words_ = layout_words(p.types(), types, offset_);
    regs_.assign(size_t{lanes_} * words_, 0u);
    stack_slot_.assign(p.vars.size(), -1);
    for (size_t v = 0; v < p.vars.size(); ++v) {
      if (p.vars[v].storage != Storage::Stacked) continue;
      stack_slot_[v] = static_cast<int32_t>(stacks_.size());
      const uint32_t w = p.types().words(p.vars[v].type);
      stacks_.push_back({std::vector<uint32_t>(size_t{lanes_} * depth_ * w, 0u),
                         std::vector<uint32_t>(lanes_, 0u), w});
    }
    pc_stack_.assign(size_t{lanes_} * depth_, 0);
    pc_sp_.assign(lanes_, 1);
    steps_.assign(lanes_, 0);
    rng_.resize(lanes_);
    waiting_.assign(p.blocks.size(), {});
    for (uint32_t lane = 0; lane < lanes_; ++lane) {
      pc_stack_[size_t{lane} * depth_] = p.exit_pc();
      rng_[lane] = {options.seed, lane, 0};
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        const uint32_t w = p.types().words(p.vars[p.inputs[i]].type);
        std::memcpy(reg(lane, p.inputs[i]), batch.inputs[i].data() + size_t{lane} * w, w * 4);
      }
      waiting_[p.entry_block].push_back(lane);
    }
  }

  RunResult run() {
    RunResult result;
    result.faulted.assign(lanes_, 0);
    RunStats& stats = result.stats;
    stats.lanes = lanes_;
    stats.block_executions.assign(program_.blocks.size(), 0);
    stats.max_stack_depth = 1;
    std::vector<uint32_t> counts(program_.blocks.size(), 0);
    uint32_t live = lanes_;
    double utilization_sum = 0;
    std::vector<uint32_t> active;
    while (live > 0) {
      for (size_t b = 0; b < counts.size(); ++b) counts[b] = static_cast<uint32_t>(waiting_[b].size());
      const int32_t block = pick_block(options_.heuristic, counts);
      active.swap(waiting_[block]);
      waiting_[block].clear();
      ++stats.steps;
      ++stats.block_executions[block];
      utilization_sum += static_cast<double>(active.size()) / live;
      if (options_.record_trace)
        result.trace.push_back({block, static_cast<uint32_t>(active.size())});
      for (uint32_t lane : active) {
        const int32_t next = run_lane(block, lane, result, stats);
        if (next < 0 || next == program_.exit_pc()) {
          --live;
          continue;
        }
        waiting_[next].push_back(lane);
      }
      active.clear();
    }
    stats.utilization = stats.steps ? utilization_sum / static_cast<double>(stats.steps) : 0;
    for (uint32_t s : steps_) stats.lane_steps += s;

    const uint32_t out_words =
        program_.output < 0 ? 0 : program_.types().words(program_.vars[program_.output].type);
    result.outputs.assign(size_t{lanes_} * out_words, 0u);
    for (uint32_t lane = 0; lane < lanes_; ++lane)
      if (!result.faulted[lane] && out_words)
        std::memcpy(result.outputs.data() + size_t{lane} * out_words, reg(lane, program_.output),
                    out_words * 4);
    std::sort(result.errors.begin(), result.errors.end(),
              [](const LaneError& a, const LaneError& b) { return a.lane < b.lane; });
    return result;
  }

 private:
  struct VarStack {
    std::vector<uint32_t> words;  // [lane][depth][word]
    std::vector<uint32_t> sp;     // [lane]
    uint32_t var_words;
  };

  uint32_t* reg(uint32_t lane, VarId v) { return regs_.data() + size_t{lane} * words_ + offset_[v]; }
  uint32_t* slot(VarStack& s, uint32_t lane, uint32_t depth) {
    return s.words.data() + (size_t{lane} * depth_ + depth) * s.var_words;
  }

  int32_t fault(RunResult& result, uint32_t lane, Fault code, const LoweredBlock& block,
                SourceLoc loc) {
    result.faulted[lane] = 1;
    result.errors.push_back({lane, code, program_.source->functions[block.function].name,
                             loc.line, steps_[lane]});
    return -1;
  }

  // Runs `block` for one lane; returns its next PC, or -1 if it faulted.
  int32_t run_lane(int32_t block_index, uint32_t lane, RunResult& result, RunStats& stats) {
    const LoweredBlock& block = program_.blocks[block_index];
    if (steps_[lane] >= options_.max_steps)
      return fault(result, lane, Fault::StepBudget, block, block.loc);
    ++steps_[lane];
    const FrameView view{regs_.data() + size_t{lane} * words_, offset_.data(), var_type_.data()};
    for (const Op& op : block.ops) {
      if (op.code == OpCode::Push || op.code == OpCode::Pop || op.code == OpCode::Update) {
        const VarId v = op.args[0];
        VarStack& s = stacks_[stack_slot_[v]];
        uint32_t& sp = s.sp[lane];
        if (op.code == OpCode::Push) {
          if (sp >= depth_) return fault(result, lane, Fault::StackOverflow, block, op.loc);
          std::memcpy(slot(s, lane, sp++), reg(lane, v), s.var_words * 4);
        } else {
          if (op.code == OpCode::Pop) --sp;
          std::memcpy(reg(lane, v), slot(s, lane, op.code == OpCode::Pop ? sp : sp - 1),
                      s.var_words * 4);
        }
        continue;
      }
      const Fault f = exec_op(op, program_.types(), view, rng_[lane], batch_.uniforms);
      if (f != Fault::None) return fault(result, lane, f, block, op.loc);
    }
    const Terminator& t = block.term;
    switch (t.kind) {
      case Terminator::Kind::Jump: return t.target;
      case Terminator::Kind::Branch: return *reg(lane, t.cond) ? t.target : t.target_else;
      case Terminator::Kind::PushJump: {
        uint32_t& sp = pc_sp_[lane];
        if (sp >= depth_) return fault(result, lane, Fault::StackOverflow, block, t.loc);
        pc_stack_[size_t{lane} * depth_ + sp++] = t.target_else;
        ++stats.calls;
        stats.max_stack_depth = std::max(stats.max_stack_depth, sp);
        return t.target;
      }
      case Terminator::Kind::Return:
        return pc_stack_[size_t{lane} * depth_ + --pc_sp_[lane]];
    }
    return -1;
  }

  const LoweredProgram& program_;
  const Batch& batch_;
  const RunOptions& options_;
  uint32_t lanes_, depth_;
  std::vector<uint32_t> offset_;
  std::vector<TypeId> var_type_;
  uint32_t words_ = 0;
  std::vector<uint32_t> regs_;  // [lane][word]
  std::vector<int32_t> stack_slot_;
  std::vector<VarStack> stacks_;
  std::vector<int32_t> pc_stack_;  // [lane][depth]
  std::vector<uint32_t> pc_sp_;
  std::vector<uint64_t> steps_;
  std::vector<LaneRandom> rng_;
  std::vector<std::vector<uint32_t>> waiting_;  // lanes waiting at each block
};

}  // namespace

RunResult run_vm(const LoweredProgram& program, const Batch& batch, const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  RunResult result = BatchState(program, batch, options).run();
  result.stats.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace ab
