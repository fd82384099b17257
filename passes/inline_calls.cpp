#include "passes/inline_calls.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "passes/analysis/call_graph.h"
#include "passes/analysis/cfg_shape.h"
#include "passes/analysis/liveness.h"
#include "passes/vectorize_loops.h"

namespace ab {
namespace {

size_t op_count(const Function& fn) {
  size_t n = 0;
  for (const Block& b : fn.blocks)
    n += b.ops.size();
  return n;
}

// Callees before callers (a depth-first post-order of the call graph), so a function's own
// calls are inlined before it is measured and copied.
std::vector<int> callees_first(const CallGraph& graph) {
  const size_t n = graph.callees.size();
  std::vector<int> order;
  std::vector<bool> seen(n, false);
  for (size_t root = 0; root < n; ++root) {
    if (seen[root]) continue;
    // (function, next callee to visit)
    std::vector<std::pair<int, size_t>> stack{{static_cast<int>(root), 0}};
    seen[root] = true;
    while (!stack.empty()) {
      auto& [f, next] = stack.back();
      if (next < graph.callees[f].size()) {
        const int g = graph.callees[f][next++];
        if (!seen[g]) {
          seen[g] = true;
          stack.push_back({g, 0});
        }
        continue;
      }
      order.push_back(f);
      stack.pop_back();
    }
  }
  return order;
}

// A place in the source: a call or a loop, in the function that holds it (loc.function -1).
using Site = std::tuple<int, int, int>;  // function, line, col
Site site(int function, SourceLoc loc) {
  return {function, loc.line, loc.col};
}

// The loop statement around each block of fn (its innermost loop header's location), or none.
std::vector<std::optional<SourceLoc>> enclosing_loops(const Function& fn) {
  const CfgShape cfg = cfg_shape(fn);
  std::vector<std::optional<SourceLoc>> loops(fn.blocks.size());
  for (size_t b = 0; b < fn.blocks.size(); ++b)
    if (const int h = innermost_loop(cfg.preds, cfg.dom, static_cast<int>(b)); h >= 0)
      loops[b] = fn.blocks[static_cast<size_t>(h)].term.loc;
  return loops;
}

// Whether fn is tiny: a few ops and no loop, so a copy at each call costs less than the call.
bool is_tiny(const Function& fn) {
  if (op_count(fn) > kInlineTinyOps) return false;
  const std::vector<std::optional<SourceLoc>> loops = enclosing_loops(fn);
  return std::none_of(loops.begin(), loops.end(), [](const auto& l) { return l.has_value(); });
}

// How many calls of each function the source makes.
std::vector<int> call_sites(const Program& program) {
  std::vector<int> sites(program.functions.size(), 0);
  for (const Function& fn : program.functions)
    for (const Block& b : fn.blocks)
      for (const Op& op : b.ops)
        if (is_call(op) && op.index >= 0 && static_cast<size_t>(op.index) < sites.size())
          ++sites[static_cast<size_t>(op.index)];
  return sites;
}

// Which calls inside a loop are inlined: a trial inlines every candidate (trial mode), the final
// run only those the trial found paying.
struct LoopCalls {
  bool trial = false;
  std::set<Site> paying;  // final run: the calls whose loop ran as array code in the trial
  std::vector<std::pair<Site, Site>> candidates;  // trial run: (call, its loop)
};

class Inliner {
 public:
  Inliner(Program& program, const std::vector<int>& derived, LoopCalls& loop_calls)
      : program_(program),
        graph_(compute_call_graph(program)),
        sites_(call_sites(program)),
        loop_calls_(loop_calls) {
    const size_t n = program.functions.size();
    tiny_.resize(n);
    keeps_calls_.assign(n, false);
    for (int d : derived) {
      if (d < 0 || static_cast<size_t>(d) >= n) continue;
      keeps_calls_[d] = true;
      for (size_t g = 0; g < n; ++g)
        if (graph_.reaches[d][g]) keeps_calls_[g] = true;
    }
  }

  std::vector<CallVerdict> run() {
    for (int f : callees_first(graph_))
      inline_into(f);
    std::stable_sort(verdicts_.begin(), verdicts_.end(), [](const auto& a, const auto& b) {
      if (a.caller != b.caller) return a.caller < b.caller;
      return std::pair(a.loc.line, a.loc.col) < std::pair(b.loc.line, b.loc.col);
    });
    return std::move(verdicts_);
  }

 private:
  // Why the call of `callee` at `loc`, inside the loop at `loop` (if any), is not inlined;
  // empty when it is.
  std::string refusal(int caller, int callee, SourceLoc loc, std::optional<SourceLoc> loop) {
    if (callee < 0 || static_cast<size_t>(callee) >= program_.functions.size())
      return "a derived function (value_and_grad)";
    if (keeps_calls_[caller]) return "in a function value_and_grad derives";
    if (graph_.recursive[callee]) return "recursive";
    const Function& g = program_.functions[callee];
    if (!tiny_[callee]) tiny_[callee] = is_tiny(g);  // g's calls are decided: it is final
    if (sites_[callee] == 1 || *tiny_[callee]) return {};
    const std::string big =
        fmt::format("called from {} places and not tiny (over {} ops or a loop)", sites_[callee],
                    kInlineTinyOps);
    if (!loop) return big + ", in no loop";
    if (op_count(g) > kInlineMaxOps || g.blocks.size() > kInlineMaxBlocks)
      return fmt::format("{}, too large to copy into its loop (over {} ops or {} blocks)", big,
                         kInlineMaxOps, kInlineMaxBlocks);
    const Site call = site(caller, loc);
    if (loop_calls_.trial) {
      loop_calls_.candidates.push_back({call, site(caller, *loop)});
      return {};
    }
    if (loop_calls_.paying.count(call)) return {};
    return fmt::format("{}, and its loop at {}:{} would not run as array code with it inlined", big,
                       loop->line, loop->col);
  }

  // Blocks copied from a callee hold the callee's calls, decided where they were written: they
  // stay calls. `blocks_` tracks, per block of f, whether it is such a copy and the loop around it.
  void inline_into(int f) {
    const auto& blocks = program_.functions[f].blocks;
    if (std::none_of(blocks.begin(), blocks.end(), [](const Block& b) {
          return std::any_of(b.ops.begin(), b.ops.end(), [](const Op& op) { return is_call(op); });
        }))
      return;  // nothing to decide (and its loops are not worth finding)
    const std::vector<std::optional<SourceLoc>> loops = enclosing_loops(program_.functions[f]);
    blocks_.clear();
    for (const auto& loop : loops)
      blocks_.push_back({false, loop});
    for (size_t b = 0; b < program_.functions[f].blocks.size(); ++b) {
      if (blocks_[b].copied) continue;
      auto& ops = program_.functions[f].blocks[b].ops;
      const auto call =
          std::find_if(ops.begin(), ops.end(), [](const Op& op) { return is_call(op); });
      if (call == ops.end()) continue;
      const size_t at = static_cast<size_t>(call - ops.begin());
      const int callee = call->index;
      std::string why = refusal(f, callee, call->loc, blocks_[b].loop);
      verdicts_.push_back({f, callee, call->loc, why.empty(), why});
      if (!why.empty()) {
        // The rest of the block, after this call, may hold more calls: split it off to look again.
        if (at + 1 < ops.size()) split_after(f, b, at);
        continue;
      }
      inline_call(f, b, at);
    }
  }

  // Moves the ops after op `at` of block b into a new block that b jumps to. The new block is
  // a continuation of b: a copy when b is, in b's loop.
  void split_after(int f, size_t b, size_t at) {
    Function& fn = program_.functions[f];
    Block rest;
    Block& block = fn.blocks[b];
    rest.ops.assign(std::make_move_iterator(block.ops.begin() + static_cast<long>(at) + 1),
                    std::make_move_iterator(block.ops.end()));
    block.ops.resize(at + 1);
    rest.term = block.term;
    rest.loc = block.ops[at].loc;
    block.term = Terminator{};
    block.term.kind = Terminator::Kind::Jump;
    block.term.target = static_cast<int32_t>(fn.blocks.size());
    block.term.loc = block.ops[at].loc;
    fn.blocks.push_back(std::move(rest));
    blocks_.push_back(blocks_[b]);
  }

  void inline_call(int f, size_t b, size_t at) {
    Function& fn = program_.functions[f];
    const Op call = fn.blocks[b].ops[at];
    const Function& g = program_.functions[call.index];
    const VarId var_base = static_cast<VarId>(fn.vars.size());
    const int32_t block_base = static_cast<int32_t>(fn.blocks.size());
    const int32_t continuation = block_base + static_cast<int32_t>(g.blocks.size());
    fn.vars.insert(fn.vars.end(), g.vars.begin(), g.vars.end());

    // The call's block: the ops before it, the frame's setup, a jump into the copy.
    Block rest;
    rest.ops.assign(std::make_move_iterator(fn.blocks[b].ops.begin() + static_cast<long>(at) + 1),
                    std::make_move_iterator(fn.blocks[b].ops.end()));
    rest.term = fn.blocks[b].term;
    rest.loc = call.loc;
    if (call.dst >= 0 && g.result >= 0)
      rest.ops.insert(rest.ops.begin(), copy_op(call.dst, var_base + g.result, call.loc));
    std::vector<Op>& ops = fn.blocks[b].ops;
    ops.resize(at);
    const Liveness liveness = compute_liveness(g);
    const std::vector<bool>& read_first = liveness.live_in[0];
    for (size_t v = 0; v < g.vars.size(); ++v) {
      if (!read_first[v] || std::find(g.params.begin(), g.params.end(), v) != g.params.end())
        continue;
      Op zero;
      zero.code = OpCode::Const;
      zero.dst = var_base + static_cast<VarId>(v);
      zero.imm.assign(program_.types.words(g.vars[v].type), 0u);
      zero.loc = call.loc;
      ops.push_back(std::move(zero));
    }
    for (size_t p = 0; p < g.params.size(); ++p)
      ops.push_back(copy_op(var_base + g.params[p], call.args[p], call.loc));
    Terminator& jump = fn.blocks[b].term;
    jump = Terminator{};
    jump.kind = Terminator::Kind::Jump;
    jump.target = block_base;
    jump.loc = call.loc;

    // The copy of g's blocks, over its fresh variables; its Returns continue after the call.
    for (const Block& source : g.blocks) {
      Block& copy = fn.blocks.emplace_back(source);
      // Faults in the copy name g (or the function g's own copies came from).
      const auto name_callee = [&](SourceLoc& loc) { loc.function = written_in(loc, call.index); };
      name_callee(copy.loc);
      name_callee(copy.term.loc);
      for (Op& op : copy.ops) {
        name_callee(op.loc);
        if (op.dst >= 0) op.dst += var_base;
        for (VarId& a : op.args)
          a += var_base;
      }
      Terminator& t = copy.term;
      if (t.cond >= 0) t.cond += var_base;
      if (t.kind == Terminator::Kind::Return) {
        t.kind = Terminator::Kind::Jump;
        t.target = continuation;
      } else {
        if (t.target >= 0) t.target += block_base;
        if (t.target_else >= 0) t.target_else += block_base;
      }
      blocks_.push_back({true, std::nullopt});
    }
    fn.blocks.push_back(std::move(rest));
    blocks_.push_back(blocks_[b]);
  }

  struct BlockOrigin {
    bool copied = false;            // from a callee
    std::optional<SourceLoc> loop;  // the caller's loop around it
  };

  Program& program_;
  const CallGraph graph_;
  const std::vector<int> sites_;  // calls of each function in the source
  LoopCalls& loop_calls_;
  std::vector<bool> keeps_calls_;          // value_and_grad derives it, or a function that calls it
  std::vector<BlockOrigin> blocks_;        // of the function being inlined into
  std::vector<std::optional<bool>> tiny_;  // per function, once asked
  std::vector<CallVerdict> verdicts_;
};

}  // namespace

std::vector<CallVerdict> inline_calls(Program& program, const std::vector<int>& derived,
                                      bool loops_vectorise) {
  // The trial inlines every call in a loop that may pay (all of them when loops do not
  // vectorise: then none is a candidate) ...
  LoopCalls loop_calls;
  loop_calls.trial = loops_vectorise;
  Program trial = program;
  std::vector<CallVerdict> verdicts = Inliner(trial, derived, loop_calls).run();
  if (loop_calls.candidates.empty()) {
    program = std::move(trial);
    return verdicts;
  }
  // ... vectorize_loops says which of their loops then run as array code, and only those
  // calls are inlined.
  std::set<Site> vectorised;
  for (const LoopVerdict& v : vectorize_loops(trial))
    if (v.vectorised && v.loc.function < 0) vectorised.insert(site(v.function, v.loc));
  loop_calls.trial = false;
  for (const auto& [call, loop] : loop_calls.candidates)
    if (vectorised.count(loop)) loop_calls.paying.insert(call);
  return Inliner(program, derived, loop_calls).run();
}

}  // namespace ab
