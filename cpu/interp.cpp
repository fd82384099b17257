#include "cpu/interp.h"

#include "ir/fault_detail.h"
#include "passes/analysis/tail_calls.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>

namespace ab {
namespace {

struct FunctionLayout {
  std::vector<uint32_t> offset;
  std::vector<TypeId> type;
  uint32_t words = 0;
};

struct Frame {
  int32_t function = 0;
  int32_t block = 0;
  size_t next_op = 0;
  size_t base = 0;        // first word of this frame in the lane's memory
  VarId caller_dst = -1;  // where the caller wants the result
  // The frame's tapes (passes/differentiate.h): the values `push` saved, per variable.
  std::map<VarId, std::vector<uint32_t>> tapes;
};

// Runs one lane to completion. Returns false with `error` filled if the lane faulted.
class LaneRun {
 public:
  LaneRun(const Program& p, const std::vector<FunctionLayout>& layouts, const Batch& batch,
          const RunOptions& options, uint32_t lane)
      : program_(p), layouts_(layouts), batch_(batch), options_(options), lane_(lane) {
    rng_.seed = options.seed;
    rng_.lane = options.first_lane + lane;
  }

  bool run(int entry, uint32_t* output, LaneError& error, RunResult& result) {
    result_ = &result;
    RunStats& stats = result.stats;
    const Function& fn = program_.functions[entry];
    push_frame(entry, -1);
    for (size_t i = 0; i < fn.params.size(); ++i) {
      const uint32_t w = program_.types.words(fn.vars[fn.params[i]].type);
      std::memcpy(var(frames_.back(), fn.params[i]), batch_.inputs[i].data() + size_t{lane_} * w,
                  w * sizeof(uint32_t));
    }
    bool ok = begin_segment(fn, fn.blocks[0].loc) && loop(output);
    stats.lane_steps += steps_;
    stats.calls += calls_;
    stats.steps = std::max(stats.steps, steps_);
    stats.max_stack_depth = std::max(stats.max_stack_depth, max_depth_);
    if (!ok) error = error_;
    return ok;
  }
  // RunOptions::should_stop ended the lane (run() returned false without a fault).
  bool stopped() const { return stopped_; }

 private:
  uint32_t* var(const Frame& f, VarId v) {
    return memory_.data() + f.base + layouts_[f.function].offset[v];
  }

  void push_frame(int32_t function, VarId caller_dst) {
    const size_t base = memory_.size();
    memory_.resize(base + layouts_[function].words, 0u);
    frames_.push_back({function, 0, 0, base, caller_dst, {}});
    max_depth_ = std::max<uint32_t>(max_depth_, static_cast<uint32_t>(frames_.size()));
  }

  bool fault(Fault code, const Function& fn, SourceLoc loc) {
    const int32_t written = loc.function;
    error_ = {lane_,    code,   written >= 0 ? program_.functions[written].name : fn.name,
              loc.line, steps_, {}};
    return false;
  }

  // A lane step is one block of the program-counter form: a block entry, or the rest of a block
  // after a call returns. The budget is checked before the step is taken.
  bool begin_segment(const Function& fn, SourceLoc loc) {
    if (!step_allowed(steps_, options_.max_steps)) return fault(Fault::StepBudget, fn, loc);
    constexpr uint64_t kStepsBetweenPolls = 1u << 16;
    if (steps_ % kStepsBetweenPolls == kStepsBetweenPolls - 1 && options_.should_stop &&
        options_.should_stop()) {
      stopped_ = true;
      return false;
    }
    ++steps_;
    return true;
  }

  bool loop(uint32_t* output) {
    const Types& types = program_.types;
    for (;;) {
      Frame& frame = frames_.back();
      const Function& fn = program_.functions[frame.function];
      const Block& block = fn.blocks[frame.block];
      if (frame.next_op < block.ops.size()) {
        const Op& op = block.ops[frame.next_op++];
        if (is_call(op)) {
          const bool tail = is_tail_call(program_, fn, block, frame.next_op - 1);
          if (!(tail ? tail_call(op) : call(op, fn))) return false;
          continue;
        }
        if (is_push(op) || is_pop(op)) {
          if (!tape_op(frame, op, fn)) return false;
          continue;
        }
        const FunctionLayout& layout = layouts_[frame.function];
        const FrameView view{memory_.data() + frame.base, layout.offset.data(), layout.type.data()};
        const Fault f = exec_op(op, types, view, rng_, batch_.uniforms, emitted_);
        if (f != Fault::None) {
          fault(f, fn, op.loc);
          if (auto bad = find_index_fault(op, types, view))
            error_.detail = index_fault_text(program_, fn, op, *bad);
          if (f == Fault::AssertFailed) error_.detail = op.message;
          return false;
        }
        if (is_emit(op))
          deliver_emitted(options_, types.words(program_.emit_type), lane_, emitted_, *result_);
        continue;
      }
      const Terminator& t = block.term;
      int32_t next = t.target;
      switch (t.kind) {
        case Terminator::Kind::Branch:
          if (!*var(frame, t.cond)) next = t.target_else;
          [[fallthrough]];
        case Terminator::Kind::Jump:
          frame.block = next;
          frame.next_op = 0;
          if (!begin_segment(fn, fn.blocks[next].loc)) return false;
          break;
        case Terminator::Kind::Return:
          switch (ret(fn, output)) {
            case Returned::ToCaller:
              break;
            case Returned::Finished:
              return true;
            case Returned::Faulted:
              return false;
          }
          break;
        case Terminator::Kind::PushJump:
        case Terminator::Kind::TailJump:
          // Figure 4 only: verify() rejects them in the Figure 2 program run() requires.
          std::abort();
      }
    }
  }

  // A tape's push or pop: like the lowered form's per-variable stacks, at most stack_depth
  // values per variable (a push beyond faults with stack_overflow).
  bool tape_op(Frame& frame, const Op& op, const Function& fn) {
    const VarId v = op.args[0];
    const uint32_t w = program_.types.words(layouts_[frame.function].type[v]);
    std::vector<uint32_t>& tape = frame.tapes[v];
    uint32_t* value = var(frame, v);
    if (is_push(op)) {
      if (w && tape.size() / w >= options_.stack_depth)
        return fault(Fault::StackOverflow, fn, op.loc);
      tape.insert(tape.end(), value, value + w);
    } else {
      std::memcpy(value, tape.data() + tape.size() - w, w * sizeof(uint32_t));
      tape.resize(tape.size() - w);
    }
    return true;
  }

  bool call(const Op& op, const Function& caller) {
    if (frames_.size() >= options_.stack_depth) return fault(Fault::StackOverflow, caller, op.loc);
    ++calls_;
    const Function& callee = program_.functions[op.index];
    const size_t caller_index = frames_.size() - 1;
    push_frame(op.index, op.dst);
    for (size_t k = 0; k < op.args.size(); ++k) {
      const uint32_t w = program_.types.words(callee.vars[callee.params[k]].type);
      std::memcpy(var(frames_.back(), callee.params[k]), var(frames_[caller_index], op.args[k]),
                  w * sizeof(uint32_t));
    }
    return begin_segment(callee, callee.blocks[0].loc);
  }

  // A tail call replaces the caller's frame (docs/language.md): the stack does not grow, and the
  // callee returns straight to where the caller would have.
  bool tail_call(const Op& op) {
    ++calls_;
    const Function& callee = program_.functions[op.index];
    const Frame caller = frames_.back();
    std::vector<uint32_t> args;  // read every argument before the frame is overwritten
    for (VarId a : op.args) {
      const uint32_t w = program_.types.words(layouts_[caller.function].type[a]);
      args.insert(args.end(), var(caller, a), var(caller, a) + w);
    }
    frames_.pop_back();
    memory_.resize(caller.base);
    push_frame(op.index, caller.caller_dst);
    const uint32_t* from = args.data();
    for (VarId p : callee.params) {
      const uint32_t w = program_.types.words(callee.vars[p].type);
      std::memcpy(var(frames_.back(), p), from, w * sizeof(uint32_t));
      from += w;
    }
    return begin_segment(callee, callee.blocks[0].loc);
  }

  enum class Returned { ToCaller, Finished, Faulted };

  Returned ret(const Function& fn, uint32_t* output) {
    const Frame done = frames_.back();
    const uint32_t w = fn.result < 0 ? 0 : program_.types.words(fn.vars[fn.result].type);
    if (frames_.size() == 1) {
      if (w) std::memcpy(output, var(done, fn.result), w * sizeof(uint32_t));
      frames_.clear();
      return Returned::Finished;
    }
    std::vector<uint32_t> value(var(done, fn.result), var(done, fn.result) + w);
    frames_.pop_back();
    memory_.resize(done.base);
    Frame& caller = frames_.back();
    if (done.caller_dst >= 0) std::memcpy(var(caller, done.caller_dst), value.data(), w * 4);
    const Function& caller_fn = program_.functions[caller.function];
    const SourceLoc call_loc = caller_fn.blocks[caller.block].ops[caller.next_op - 1].loc;
    return begin_segment(caller_fn, call_loc) ? Returned::ToCaller : Returned::Faulted;
  }

  const Program& program_;
  const std::vector<FunctionLayout>& layouts_;
  const Batch& batch_;
  const RunOptions& options_;
  uint32_t lane_;
  LaneRandom rng_;
  std::vector<uint32_t> emitted_;  // the record being handed on
  RunResult* result_ = nullptr;
  std::vector<uint32_t> memory_;
  std::vector<Frame> frames_;
  uint64_t steps_ = 0, calls_ = 0;
  uint32_t max_depth_ = 0;
  bool stopped_ = false;
  LaneError error_;
};

}  // namespace

uint64_t interp_bytes_per_lane(const Program& program, int entry, const RunOptions& options) {
  const Function& fn = program.functions[entry];
  const uint64_t out_words = fn.result < 0 ? 0 : program.types.words(fn.vars[fn.result].type);
  const bool collects = program.emit_type != Types::kVoid && !options.on_emit;
  return 4 * out_words + 1 + (collects ? sizeof(std::vector<uint32_t>) : 0);
}

RunResult run_interp(const Program& program, int entry, const Batch& batch,
                     const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<FunctionLayout> layouts(program.functions.size());
  for (size_t f = 0; f < program.functions.size(); ++f) {
    FunctionLayout& l = layouts[f];
    for (const Var& v : program.functions[f].vars)
      l.type.push_back(v.type);
    l.words = layout_words(program.types, l.type, l.offset);
  }
  const Function& fn = program.functions[entry];
  const uint32_t out_words = fn.result < 0 ? 0 : program.types.words(fn.vars[fn.result].type);

  RunResult result;
  result.outputs.assign(size_t{batch.lanes} * out_words, 0u);
  result.faulted.assign(batch.lanes, 0);
  if (program.emit_type != Types::kVoid && !options.on_emit) result.emitted.resize(batch.lanes);
  result.stats.lanes = batch.lanes;
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    LaneRun run(program, layouts, batch, options, lane);
    LaneError error;
    uint32_t* output = result.outputs.data() + size_t{lane} * out_words;
    const bool finished = run.run(entry, output, error, result);
    if (!finished && run.stopped()) {
      std::fill(output, output + out_words, 0u);
      result.stopped = true;
      break;
    }
    if (!finished) {
      result.faulted[lane] = 1;
      result.errors.push_back(error);
    }
    if (options.should_stop && lane + 1 < batch.lanes && options.should_stop()) {
      result.stopped = true;
      break;
    }
  }
  result.stats.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace ab
