// vectorize_loops: a reduction loop over a constant range becomes whole-array ops (the contract
// is in the header). Each loop is matched in the shape the front end builds a `for` in:
//   preheader: ...; bound = <hi>; i = copy <lo>; jump header
//   header:    c = lt i, bound; branch c, body, exit
//   body:      a chain of blocks joined by jumps, ending in a jump to the latch
//   latch:     one = const 1; i = add i, one; jump header
// A converted loop's header takes the array ops and jumps to the exit; the body and latch are
// left without a way in and dropped.
#include "passes/vectorize_loops.h"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "passes/analysis/cfg_shape.h"
#include "passes/drop_unreachable_blocks.h"

namespace ab {
namespace {

// The value a scalar int or uint variable holds at the end of `block`'s first `end` ops, when a
// constant (or a copy of one) last wrote it there.
std::optional<int64_t> constant_before(const Block& block, size_t end, VarId v, Scalar kind) {
  for (size_t k = end; k-- > 0;) {
    const Op& op = block.ops[k];
    if (op.dst != v) continue;
    if (op.code == OpCode::Copy) return constant_before(block, k, op.args[0], kind);
    if (op.code != OpCode::Const || op.imm.size() != 1) return std::nullopt;
    return kind == Scalar::Int ? static_cast<int64_t>(static_cast<int32_t>(op.imm[0]))
                               : static_cast<int64_t>(op.imm[0]);
  }
  return std::nullopt;
}

// A `for` loop as the front end builds it.
struct ForLoop {
  int header = -1, latch = -1, exit = -1, preheader = -1;
  std::vector<int> body;  // in order
  VarId index = -1;
  int64_t lo = 0, hi = 0;
};

// How a carried scalar is reduced.
struct Reduction {
  VarId acc = -1;
  OpCode fold = OpCode::Sum;  // Sum, ReduceMax or ReduceMin
  bool negate = false;        // acc -= t: the sum of -t
  size_t op = 0;              // the updating op's position in the body
};

std::string quoted(const Function& fn, VarId v) {
  return fmt::format("'{}'", fn.vars[v].name);
}

class LoopVectorizer {
 public:
  LoopVectorizer(Program& program, Function& fn) : program_(program), fn_(fn) {}

  // Matches the loop at `header` and converts it; returns why not, or "" when converted.
  std::string run(int header, const CfgShape& cfg) {
    if (std::string why = match(header, cfg); !why.empty()) return why;
    gather_body();
    if (std::string why = find_reductions(); !why.empty()) return why;
    if (std::string why = check_live_after(cfg); !why.empty()) return why;
    std::vector<Op> ops;
    for (size_t k = 0; k < body_ops_.size(); ++k)
      if (std::string why = lift(k, ops); !why.empty()) return why;
    Block& h = fn_.blocks[loop_.header];
    h.ops = std::move(ops);
    Terminator jump;
    jump.kind = Terminator::Kind::Jump;
    jump.target = loop_.exit;
    jump.loc = h.term.loc;
    h.term = jump;
    return "";
  }

 private:
  std::string match(int header, const CfgShape& cfg) {
    const Block& h = fn_.blocks[header];
    if (!cfg.counted[header] || h.term.kind != Terminator::Kind::Branch || h.ops.size() != 1 ||
        h.ops[0].code != OpCode::Lt || h.ops[0].dst != h.term.cond)
      return "not a 'for' loop";
    loop_.header = header;
    loop_.preheader = cfg.preds[header][0];
    loop_.latch = cfg.preds[header][1];
    loop_.exit = h.term.target_else;
    loop_.index = h.ops[0].args[0];
    const VarId bound = h.ops[0].args[1];
    const Block& latch = fn_.blocks[loop_.latch];
    if (latch.ops.size() != 2 || latch.ops[1].code != OpCode::Add ||
        latch.ops[1].dst != loop_.index || latch.term.kind != Terminator::Kind::Jump)
      return "not a 'for' loop";
    for (int b = h.term.target; b != loop_.latch; b = fn_.blocks[b].term.target) {
      const Terminator& t = fn_.blocks[b].term;
      if (cfg.counted[b]) return "it holds a loop that stays a loop";
      if (t.kind == Terminator::Kind::Return) return "it returns from inside the loop";
      if (t.kind != Terminator::Kind::Jump) return "an if, break or continue in its body";
      if (std::find(loop_.body.begin(), loop_.body.end(), b) != loop_.body.end())
        return "not a 'for' loop";
      loop_.body.push_back(b);
    }
    const Scalar kind = program_.types[fn_.vars[loop_.index].type].scalar;
    const Block& pre = fn_.blocks[loop_.preheader];
    const std::optional<int64_t> lo = constant_before(pre, pre.ops.size(), loop_.index, kind);
    const std::optional<int64_t> hi = constant_before(pre, pre.ops.size(), bound, kind);
    if (!lo || !hi) return "its range is not constant";
    if (*hi <= *lo) return "it runs no iteration";
    loop_.lo = *lo;
    loop_.hi = *hi;
    return "";
  }

  void gather_body() {
    for (int b : loop_.body)
      for (const Op& op : fn_.blocks[b].ops) {
        body_ops_.push_back(&op);
        if (op.dst >= 0) written_.insert(op.dst);
      }
  }

  uint32_t count() const { return static_cast<uint32_t>(loop_.hi - loop_.lo); }

  // A carried value: read in the body before the body writes it.
  std::string find_reductions() {
    std::set<VarId> seen_write;
    std::map<VarId, int> updates;
    for (size_t k = 0; k < body_ops_.size(); ++k) {
      const Op& op = *body_ops_[k];
      for (VarId a : op.args) {
        if (!written_.count(a) || seen_write.count(a)) continue;
        if (is_set(op)) return fmt::format("it writes an element of {}", quoted(fn_, op.dst));
        std::optional<Reduction> r = reduction_at(k);
        if (!r || r->acc != a)
          return fmt::format("it carries {} from one iteration to the next (not a sum, max or min)",
                             quoted(fn_, a));
        if (++updates[a] > 1) return fmt::format("it updates {} twice", quoted(fn_, a));
        reductions_.push_back(*r);
      }
      if (op.dst >= 0) seen_write.insert(op.dst);
    }
    for (const Reduction& r : reductions_)
      for (size_t k = 0; k < body_ops_.size(); ++k)
        if (k != r.op && (body_ops_[k]->dst == r.acc ||
                          std::count(body_ops_[k]->args.begin(), body_ops_[k]->args.end(), r.acc)))
          return fmt::format("it reads or writes {} other than by one update", quoted(fn_, r.acc));
    return "";
  }

  std::optional<Reduction> reduction_at(size_t k) const {
    const Op& op = *body_ops_[k];
    if (op.args.size() != 2 || op.dst < 0 || !program_.types.is_scalar(fn_.vars[op.dst].type))
      return std::nullopt;
    Reduction r;
    r.acc = op.dst;
    r.op = k;
    const bool first = op.args[0] == op.dst, second = op.args[1] == op.dst;
    if (first == second) return std::nullopt;
    switch (op.code) {
      case OpCode::Add:
        return r;
      case OpCode::Sub:
        r.negate = true;
        return first ? std::optional<Reduction>(r) : std::nullopt;
      case OpCode::Max:
      case OpCode::Min:
        r.fold = op.code == OpCode::Max ? OpCode::ReduceMax : OpCode::ReduceMin;
        return first ? std::optional<Reduction>(r) : std::nullopt;
      default:
        return std::nullopt;
    }
  }

  std::string check_live_after(const CfgShape& cfg) {
    const int n = static_cast<int>(fn_.blocks.size());
    std::set<VarId> carried;
    for (const Reduction& r : reductions_)
      carried.insert(r.acc);
    std::set<int> own(loop_.body.begin(), loop_.body.end());
    own.insert({loop_.header, loop_.latch});
    for (int b = 0; b < n; ++b) {
      if (own.count(b) || (b != loop_.exit && !cfg.reach[loop_.exit][b])) continue;
      const Block& block = fn_.blocks[b];
      std::vector<VarId> reads;
      for (const Op& op : block.ops)
        reads.insert(reads.end(), op.args.begin(), op.args.end());
      if (block.term.cond >= 0) reads.push_back(block.term.cond);
      if (block.term.kind == Terminator::Kind::Return && fn_.result >= 0)
        reads.push_back(fn_.result);
      for (VarId v : reads)
        if (written_.count(v) && !carried.count(v) && v != loop_.index)
          return fmt::format("{}, which it computes, is read after the loop", quoted(fn_, v));
    }
    return "";
  }

  bool varying(VarId v) const { return lifted_.count(v) || rows_.count(v) || v == loop_.index; }

  // An array variable for `like`'s values in every iteration, named after it ("eta" -> "eta.all").
  VarId new_var(VarId like, TypeId type) {
    Var v = fn_.vars[like];
    v.type = type;
    const std::string base = v.name + ".all";
    v.name = base;
    for (int k = 2; std::any_of(fn_.vars.begin(), fn_.vars.end(),
                                [&](const Var& other) { return other.name == v.name; });
         ++k)
      v.name = fmt::format("{}{}", base, k);
    fn_.vars.push_back(v);
    return static_cast<VarId>(fn_.vars.size() - 1);
  }

  // The array of i's values, made once when the body reads i other than as an index.
  VarId index_values(std::vector<Op>& ops) {
    if (index_array_ >= 0) return index_array_;
    const TypeId t = fn_.vars[loop_.index].type;
    index_array_ = new_var(loop_.index, program_.types.array(t, count()));
    Op op;
    op.code = OpCode::Const;
    op.dst = index_array_;
    for (int64_t i = loop_.lo; i < loop_.hi; ++i)
      op.imm.push_back(static_cast<uint32_t>(i));
    op.loc = fn_.blocks[loop_.header].term.loc;
    ops.push_back(std::move(op));
    return index_array_;
  }

  // The operand an op on arrays reads for `v`: its array if it varies, `v` if not.
  VarId operand(VarId v, std::vector<Op>& ops) {
    if (v == loop_.index) return index_values(ops);
    auto it = lifted_.find(v);
    return it == lifted_.end() ? v : it->second;
  }

  std::string lift(size_t k, std::vector<Op>& ops) {
    const Op& op = *body_ops_[k];
    for (const Reduction& r : reductions_)
      if (r.op == k) return fold(r, ops);  // acc is read nowhere else: folding here is the loop's
    const bool any_varying =
        std::any_of(op.args.begin(), op.args.end(), [&](VarId a) { return varying(a); });
    if (!any_varying && !is_random(op) && !is_call(op) && !is_emit(op)) {
      lifted_.erase(op.dst);  // from here on the variable holds this one value
      rows_.erase(op.dst);
      ops.push_back(op);  // the same in every iteration: once
      return "";
    }
    if (has_path(op.code)) return lift_index(op, ops);
    if (std::string why = refuse(op); !why.empty()) return why;
    if (op.code == OpCode::Dot) return lift_dot(op, ops);
    const OpClass cls = op_info(op.code).cls;
    if (op.code != OpCode::Copy && cls != OpClass::Unary && cls != OpClass::Binary &&
        cls != OpClass::Ternary)
      return fmt::format("'{}' of a value that varies with the loop", op_info(op.code).name);
    Op out = op;
    for (VarId& a : out.args) {
      if (rows_.count(a))
        return fmt::format("it uses the row {} other than in dot", quoted(fn_, a));
      if (!varying(a) && !program_.types.is_scalar(fn_.vars[a].type))
        return fmt::format("an elementwise op on the array {} in its body", quoted(fn_, a));
      a = operand(a, ops);
    }
    if (!program_.types.is_scalar(fn_.vars[op.dst].type))
      return fmt::format("{} is an array computed per iteration", quoted(fn_, op.dst));
    out.dst = new_var(op.dst, program_.types.array(fn_.vars[op.dst].type, count()));
    lifted_[op.dst] = out.dst;
    ops.push_back(std::move(out));
    return "";
  }

  // The first reason an op that reads a varying value cannot run on arrays, if any.
  std::string refuse(const Op& op) const {
    if (is_call(op))
      return fmt::format("a call to {}", program_.functions[static_cast<size_t>(op.index)].name);
    if (is_random(op)) return "a random draw";
    if (is_emit(op)) return "an emit";
    if (is_assert(op)) return "an assert";
    if (op.code == OpCode::Select) return "a select on a value that varies";
    if (op.code == OpCode::Make) return "an array or struct built per iteration";
    // An integer division may fault in one iteration; the loop would stop there, before the
    // later ops of that iteration, and the array form would not.
    if (is_division(op) && program_.types.leaf(fn_.vars[op.dst].type) != Types::kFloat)
      return "an integer division of a value that varies";
    return "";
  }

  // y[i] (any static steps before the index) is the whole array y; X[i] a row, kept for dot.
  std::string lift_index(const Op& op, std::vector<Op>& ops) {
    if (is_set(op)) return fmt::format("it writes an element of {}", quoted(fn_, op.args[0]));
    const size_t first = op.code == OpCode::Get ? 1 : 0;
    if (op.code == OpCode::Get && varying(op.args[0]))
      return fmt::format("it indexes {}, which varies", quoted(fn_, op.args[0]));
    const PathStep& last = op.path.back();
    const bool by_index = last.dynamic && op.args.size() == first + 1 &&
                          op.args[first] == loop_.index &&
                          std::count_if(op.path.begin(), op.path.end(),
                                        [](const PathStep& s) { return s.dynamic; }) == 1;
    if (!by_index) return "an index other than the loop's variable, or a step after it";
    if (loop_.lo != 0 || static_cast<uint32_t>(loop_.hi) != last.count)
      return "its range is not the whole length of the array it indexes";
    Op out = op;
    out.path.pop_back();
    out.args.resize(first);
    if (out.code == OpCode::Get && out.path.empty()) out.code = OpCode::Copy;
    const TypeId elem = fn_.vars[op.dst].type;
    out.dst = new_var(op.dst, program_.types.array(elem, count()));
    if (program_.types.is_scalar(elem))
      lifted_[op.dst] = out.dst;
    else
      rows_[op.dst] = out.dst;
    ops.push_back(std::move(out));
    return "";
  }

  // dot(X[i], w) or dot(w, X[i]): the row of X @ w, which is dot bit for bit (product_element,
  // autobatch/numerics.h).
  std::string lift_dot(const Op& op, std::vector<Op>& ops) {
    const VarId a = op.args[0], b = op.args[1];
    const VarId row = rows_.count(a) ? a : rows_.count(b) ? b : -1;
    const VarId other = row == a ? b : a;
    if (row < 0 || varying(other) || rows_.count(other) ||
        program_.types.leaf(fn_.vars[row].type) != Types::kFloat)
      return "a dot product other than of a data row and a vector the loop does not change";
    if (!program_.types.is_array(fn_.vars[row].type) ||
        program_.types.is_array(program_.types[fn_.vars[row].type].elem))
      return "a dot product of matrices";
    Op out = op;
    out.code = OpCode::MatMul;
    out.args = {rows_.at(row), other};
    out.dst = new_var(op.dst, program_.types.array(fn_.vars[op.dst].type, count()));
    lifted_[op.dst] = out.dst;
    ops.push_back(std::move(out));
    return "";
  }

  // acc = fold([acc, t...]): the loop's chain from acc, in order.
  std::string fold(const Reduction& r, std::vector<Op>& ops) {
    const Op& update = *body_ops_[r.op];
    const VarId term = update.args[0] == r.acc ? update.args[1] : update.args[0];
    const TypeId scalar = fn_.vars[r.acc].type;
    const TypeId terms_type = program_.types.array(scalar, count());
    VarId terms = -1;
    if (rows_.count(term)) return fmt::format("it sums the row {}", quoted(fn_, term));
    if (varying(term)) {
      terms = operand(term, ops);
    } else {  // the same term every iteration
      Op repeat;
      repeat.code = OpCode::Make;
      repeat.dst = terms = new_var(term, terms_type);
      repeat.args.assign(count(), term);
      repeat.loc = update.loc;
      ops.push_back(std::move(repeat));
    }
    if (r.negate) {
      Op neg;
      neg.code = OpCode::Neg;
      neg.dst = new_var(term, terms_type);
      neg.args = {terms};
      neg.loc = update.loc;
      terms = neg.dst;
      ops.push_back(std::move(neg));
    }
    Op chain;
    chain.code = OpCode::Make;
    chain.dst = new_var(r.acc, program_.types.array(scalar, count() + 1));
    chain.args = {r.acc, terms};
    chain.loc = update.loc;
    Op total;
    total.code = r.fold;
    total.dst = r.acc;
    total.args = {chain.dst};
    total.loc = update.loc;
    ops.push_back(std::move(chain));
    ops.push_back(std::move(total));
    return "";
  }

  Program& program_;
  Function& fn_;
  ForLoop loop_;
  std::vector<const Op*> body_ops_;
  std::set<VarId> written_;
  std::vector<Reduction> reductions_;
  std::map<VarId, VarId> lifted_;  // a varying scalar -> its array
  std::map<VarId, VarId> rows_;    // a row X[i] -> the whole X
  VarId index_array_ = -1;
};

// Loop headers of fn (the targets of back edges), in block order.
std::vector<int> loop_headers(const Function& fn, const CfgShape& cfg) {
  std::vector<int> headers;
  for (size_t h = 0; h < fn.blocks.size(); ++h)
    for (int p : cfg.preds[h])
      if (cfg.dom[p][h] && cfg.reach[0][h]) {
        headers.push_back(static_cast<int>(h));
        break;
      }
  return headers;
}

// Whether loop `inner`'s header lies inside the loop at `outer` (outer reaches it and it
// reaches outer back).
bool nested_in(const CfgShape& cfg, int inner, int outer) {
  return inner != outer && cfg.dom[inner][outer] && cfg.reach[inner][outer];
}

void vectorize_function(Program& program, int f, std::vector<LoopVerdict>& verdicts) {
  Function& fn = program.functions[static_cast<size_t>(f)];
  std::map<int, LoopVerdict> decided;  // by header; block ids stay fixed until the end
  bool changed = false;
  for (bool progress = true; progress;) {
    progress = false;
    const CfgShape cfg = cfg_shape(fn);
    const std::vector<int> headers = loop_headers(fn, cfg);
    for (int h : headers) {
      if (decided.count(h)) continue;
      // Inner loops first: an outer loop waits until each loop inside it is decided.
      const bool waits = std::any_of(headers.begin(), headers.end(), [&](int inner) {
        return nested_in(cfg, inner, h) && !decided.count(inner);
      });
      if (waits) continue;
      LoopVerdict v;
      v.function = f;
      v.loc = fn.blocks[h].term.loc;
      v.reason = LoopVectorizer(program, fn).run(h, cfg);
      v.vectorised = v.reason.empty();
      decided[h] = v;
      progress = true;
      if (v.vectorised) {
        changed = true;
        break;  // the CFG changed: look again
      }
    }
  }
  for (auto& [h, v] : decided)
    verdicts.push_back(v);
  if (changed) drop_unreachable_blocks(fn);
}

}  // namespace

std::vector<LoopVerdict> vectorize_loops(Program& program) {
  std::vector<LoopVerdict> verdicts;
  for (size_t f = 0; f < program.functions.size(); ++f)
    vectorize_function(program, static_cast<int>(f), verdicts);
  std::stable_sort(verdicts.begin(), verdicts.end(),
                   [](const LoopVerdict& a, const LoopVerdict& b) {
                     return a.function != b.function   ? a.function < b.function
                            : a.loc.line != b.loc.line ? a.loc.line < b.loc.line
                                                       : a.loc.col < b.loc.col;
                   });
  return verdicts;
}

}  // namespace ab
