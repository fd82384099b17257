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
#include <utility>

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
  std::vector<int> body;  // in walk order
  VarId index = -1;
  int64_t lo = 0, hi = 0;
};

// The body as one straight line: its ops in order, with an `if`'s arms marked around them.
struct Step {
  enum class Kind { Op, Then, Else, Join } kind = Kind::Op;
  size_t op = 0;    // Op: the op's position in body_ops_; Join: the step's own position
  VarId cond = -1;  // Then: the branch's condition
};

// How a carried scalar is reduced: every op writing it is `acc = acc (+|-|max|min) term`.
struct Reduction {
  VarId acc = -1;
  OpCode fold = OpCode::Sum;  // Sum, ReduceMax or ReduceMin
  std::vector<size_t> updates;
};

// An `if` being converted: its condition for every iteration, and what the arms start from.
struct Arm {
  VarId cond = -1;   // a bool array, one element per iteration
  VarId taken = -1;  // where the part being converted runs: cond, then not cond
  std::map<VarId, VarId> lifted, scalars, terms;  // the maps as they were before the `if`
  std::map<VarId, VarId> then_lifted, then_scalars, then_terms;  // after its then part
  std::set<VarId> defined;        // values made inside this arm (not masked again)
  std::map<VarId, VarId> masked;  // an outside value -> its masked array, in this arm
  std::set<VarId> top_defined;    // top_defined_ before the `if`
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
    if (std::string why = find_reductions(); !why.empty()) return why;
    if (std::string why = check_live_after(cfg); !why.empty()) return why;
    std::vector<Op> ops;
    for (const Step& step : steps_)
      if (std::string why = take(step, ops); !why.empty()) return why;
    for (const Reduction& r : reductions_)
      fold(r, ops);
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
    cfg_ = &cfg;
    int end = -1;
    if (std::string why = walk(h.term.target, end); !why.empty()) return why;
    if (end != loop_.latch) return "a break or continue in its body";
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

  // Where control meets from more than one (reachable) block: the join of an `if`.
  bool is_join(int b) const {
    return std::count_if(cfg_->preds[b].begin(), cfg_->preds[b].end(),
                         [&](int p) { return p == 0 || cfg_->reach[0][p]; }) > 1;
  }

  // Walks the body from block b to the first join (or the latch) it reaches, in `end`, recording
  // its ops and each `if` as Then, its ops, Else, its ops, Join.
  std::string walk(int b, int& end) {
    for (;;) {
      if (b == loop_.latch || b == loop_.exit || b == loop_.header) {
        end = b;
        return "";
      }
      if (cfg_->counted[b]) return "it holds a loop that stays a loop";
      if (std::find(loop_.body.begin(), loop_.body.end(), b) != loop_.body.end())
        return "not a 'for' loop";
      loop_.body.push_back(b);
      for (const Op& op : fn_.blocks[b].ops) {
        steps_.push_back({Step::Kind::Op, body_ops_.size(), -1});
        body_ops_.push_back(&op);
        if (op.dst >= 0) written_.insert(op.dst);
      }
      const Terminator& t = fn_.blocks[b].term;
      if (t.kind == Terminator::Kind::Return) return "it returns from inside the loop";
      if (t.kind == Terminator::Kind::Jump) {
        if (cfg_->counted[t.target] && t.target != loop_.header)
          return "it holds a loop that stays a loop";
        if (is_join(t.target)) {
          end = t.target;
          return "";
        }
        b = t.target;
        continue;
      }
      steps_.push_back({Step::Kind::Then, 0, t.cond});
      int then_end = t.target, else_end = t.target_else;
      if (!is_join(t.target))
        if (std::string why = walk(t.target, then_end); !why.empty()) return why;
      steps_.push_back({Step::Kind::Else, 0, -1});
      if (!is_join(t.target_else))
        if (std::string why = walk(t.target_else, else_end); !why.empty()) return why;
      if (then_end != else_end || then_end == loop_.exit || then_end == loop_.header)
        return "a break or continue in its body";
      steps_.push_back({Step::Kind::Join, steps_.size(), -1});
      b = then_end;
      if (b == loop_.latch) {
        end = b;
        return "";
      }
    }
  }

  uint32_t count() const { return static_cast<uint32_t>(loop_.hi - loop_.lo); }

  // A carried value (read in the body before the body writes it) must be a reduction: every op
  // that writes it updates it, and no other op reads it.
  std::string find_reductions() {
    std::set<VarId> seen_write, carried;
    for (size_t k = 0; k < body_ops_.size(); ++k) {
      const Op& op = *body_ops_[k];
      for (VarId a : op.args)
        if (written_.count(a) && !seen_write.count(a) && !carried.count(a)) carried.insert(a);
      if (op.dst >= 0) seen_write.insert(op.dst);
    }
    for (VarId acc : carried) {
      if (std::optional<size_t> k = element_write(acc)) {
        element_writes_[acc] = *k;
        continue;
      }
      Reduction r;
      r.acc = acc;
      for (size_t k = 0; k < body_ops_.size(); ++k) {
        const Op& op = *body_ops_[k];
        const bool touches = op.dst == acc || std::count(op.args.begin(), op.args.end(), acc) > 0;
        if (!touches) continue;
        const std::optional<OpCode> fold = update_at(k, acc);
        if (!fold)
          return r.updates.empty()
                     ? fmt::format(
                           "it carries {} from one iteration to the next (not a sum, max or min)",
                           quoted(fn_, acc))
                     : fmt::format("it reads or writes {} other than by one update",
                                   quoted(fn_, acc));
        if (!r.updates.empty() && *fold != r.fold)
          return fmt::format("it updates {} by two kinds of reduction", quoted(fn_, acc));
        r.fold = *fold;
        r.updates.push_back(k);
      }
      reductions_.push_back(r);
    }
    return "";
  }

  // The one op touching `out` when it is `out[..., i] = v` (a Set of out into itself that reads
  // nothing else of it), with `out` an array the body writes only there.
  std::optional<size_t> element_write(VarId out) const {
    std::optional<size_t> found;
    for (size_t k = 0; k < body_ops_.size(); ++k) {
      const Op& op = *body_ops_[k];
      const auto reads = std::count(op.args.begin(), op.args.end(), out);
      if (op.dst != out && reads == 0) continue;
      if (found || !is_set(op) || op.dst != out || op.args[0] != out || reads != 1)
        return std::nullopt;
      found = k;
    }
    return found;
  }

  // The fold of body op k when it is `acc = acc + t`, `acc + t` the other way round,
  // `acc - t`, `max(acc, t)` or `min(acc, t)` on the scalar acc.
  std::optional<OpCode> update_at(size_t k, VarId acc) const {
    const Op& op = *body_ops_[k];
    if (op.args.size() != 2 || op.dst != acc || !program_.types.is_scalar(fn_.vars[acc].type))
      return std::nullopt;
    const bool first = op.args[0] == acc, second = op.args[1] == acc;
    if (first == second) return std::nullopt;
    switch (op.code) {
      case OpCode::Add:
        return OpCode::Sum;
      case OpCode::Sub:
        return first ? std::optional<OpCode>(OpCode::Sum) : std::nullopt;
      case OpCode::Max:
        return first ? std::optional<OpCode>(OpCode::ReduceMax) : std::nullopt;
      case OpCode::Min:
        return first ? std::optional<OpCode>(OpCode::ReduceMin) : std::nullopt;
      default:
        return std::nullopt;
    }
  }

  const Reduction* reduction_of(size_t k) const {
    for (const Reduction& r : reductions_)
      if (std::count(r.updates.begin(), r.updates.end(), k)) return &r;
    return nullptr;
  }

  std::string check_live_after(const CfgShape& cfg) {
    const int n = static_cast<int>(fn_.blocks.size());
    std::set<VarId> carried;
    for (const Reduction& r : reductions_)
      carried.insert(r.acc);
    for (const auto& [out, k] : element_writes_)
      carried.insert(out);
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

  static Op new_op(OpCode code, VarId dst, std::vector<VarId> args, SourceLoc loc) {
    Op op;
    op.code = code;
    op.dst = dst;
    op.args = std::move(args);
    op.loc = loc;
    return op;
  }

  TypeId all_of(TypeId scalar) { return program_.types.array(scalar, count()); }

  // A constant array of one element per iteration.
  VarId constant_array(VarId like, TypeId scalar, std::vector<uint32_t> words,
                       std::vector<Op>& ops) {
    Op op = new_op(OpCode::Const, new_var(like, all_of(scalar)), {}, loop_loc());
    op.imm = std::move(words);
    ops.push_back(std::move(op));
    return ops.back().dst;
  }

  SourceLoc loop_loc() const { return fn_.blocks[loop_.header].term.loc; }

  // The array of i's values, made once when the body reads i other than as an index.
  VarId index_values(std::vector<Op>& ops) {
    if (index_array_ >= 0) return index_array_;
    std::vector<uint32_t> words;
    for (int64_t i = loop_.lo; i < loop_.hi; ++i)
      words.push_back(static_cast<uint32_t>(i));
    index_array_ = constant_array(loop_.index, fn_.vars[loop_.index].type, words, ops);
    return index_array_;
  }

  // The variable that holds v's value in this iteration: its array, the scalar an arm made for
  // it, or v itself.
  VarId operand(VarId v, std::vector<Op>& ops) {
    if (v == loop_.index) return index_values(ops);
    if (auto it = lifted_.find(v); it != lifted_.end()) return it->second;
    if (auto it = scalars_.find(v); it != scalars_.end()) return it->second;
    return v;
  }

  // `value` as one element per iteration: itself if an array, else repeated.
  VarId as_array(VarId value, VarId like, std::vector<Op>& ops) {
    const TypeId t = fn_.vars[value].type;
    if (!program_.types.is_scalar(t)) return value;
    ops.push_back(new_op(OpCode::Make, new_var(like, all_of(t)), std::vector<VarId>(count(), value),
                         loop_loc()));
    return ops.back().dst;
  }

  // A value made inside every `if` now being converted.
  void made_in_arms(VarId value) {
    for (Arm& arm : arms_)
      arm.defined.insert(value);
  }

  // An operand of an op inside an `if`: an array, and a float from outside the arm is masked
  // (0 where the arm is not taken). The arm's ops run in every iteration; where the loop would
  // not have run them their derivatives may be 0 times an infinity, and the mask keeps those
  // NaNs from the arm's inputs.
  VarId arm_operand(VarId v, std::vector<Op>& ops) {
    const VarId value = as_array(operand(v, ops), v, ops);
    Arm& arm = arms_.back();
    if (program_.types.leaf(fn_.vars[value].type) != Types::kFloat || arm.defined.count(value))
      return value;
    if (auto it = arm.masked.find(value); it != arm.masked.end()) return it->second;
    if (zeros_ < 0) zeros_ = constant_array(v, Types::kFloat, std::vector<uint32_t>(count()), ops);
    const VarId masked = new_var(v, fn_.vars[value].type);
    ops.push_back(new_op(OpCode::Select, masked, {arm.taken, value, zeros_}, loop_loc()));
    arm.masked[value] = masked;
    made_in_arms(masked);
    return masked;
  }

  std::string take(const Step& step, std::vector<Op>& ops) {
    switch (step.kind) {
      case Step::Kind::Op:
        return lift(step.op, ops);
      case Step::Kind::Then:
        return enter_if(step.cond, ops);
      case Step::Kind::Else:
        enter_else(ops);
        return "";
      case Step::Kind::Join:
        return join(step.op, ops);
    }
    return "";
  }

  std::string enter_if(VarId cond, std::vector<Op>& ops) {
    Arm arm;
    arm.cond = arm.taken = as_array(operand(cond, ops), cond, ops);
    arm.lifted = lifted_;
    arm.scalars = scalars_;
    arm.terms = terms_;
    arm.top_defined = top_defined_;
    arms_.push_back(std::move(arm));
    return "";
  }

  void enter_else(std::vector<Op>& ops) {
    Arm& arm = arms_.back();
    ops.push_back(
        new_op(OpCode::Not, new_var(arm.cond, fn_.vars[arm.cond].type), {arm.cond}, loop_loc()));
    arm.taken = ops.back().dst;
    arm.masked.clear();
    arm.then_lifted = std::exchange(lifted_, arm.lifted);
    arm.then_scalars = std::exchange(scalars_, arm.scalars);
    arm.then_terms = std::exchange(terms_, arm.terms);
    top_defined_ = arm.top_defined;
  }

  // Whether a step from `from` on reads v (an op's operand or a branch's condition).
  bool read_from(size_t from, VarId v) const {
    for (size_t s = from; s < steps_.size(); ++s) {
      const Step& step = steps_[s];
      if (step.kind == Step::Kind::Then && step.cond == v) return true;
      if (step.kind != Step::Kind::Op) continue;
      const std::vector<VarId>& args = body_ops_[step.op]->args;
      if (std::count(args.begin(), args.end(), v)) return true;
    }
    return false;
  }

  // The variables either arm changed.
  static std::set<VarId> changed(const std::vector<const std::map<VarId, VarId>*>& after,
                                 const std::map<VarId, VarId>& before) {
    std::set<VarId> out;
    for (const auto* map : after)
      for (const auto& [v, value] : *map)
        if (auto it = before.find(v); it == before.end() || it->second != value) out.insert(v);
    return out;
  }

  // After an `if`: each variable an arm changed and the body reads on is select(c, then, else).
  std::string join(size_t next_step, std::vector<Op>& ops) {
    Arm arm = std::move(arms_.back());
    arms_.pop_back();
    const std::map<VarId, VarId> else_lifted = std::exchange(lifted_, arm.lifted);
    const std::map<VarId, VarId> else_scalars = std::exchange(scalars_, arm.scalars);
    const std::map<VarId, VarId> else_terms = std::exchange(terms_, arm.terms);
    top_defined_ = arm.top_defined;
    std::set<VarId> vars = changed({&arm.then_lifted, &else_lifted}, arm.lifted);
    vars.merge(changed({&arm.then_scalars, &else_scalars}, arm.scalars));
    for (VarId v : vars) {
      if (!read_from(next_step, v)) continue;
      auto value = [&](const std::map<VarId, VarId>& lifted,
                       const std::map<VarId, VarId>& scalars) {
        if (auto it = lifted.find(v); it != lifted.end()) return it->second;
        if (auto it = scalars.find(v); it != scalars.end()) return it->second;
        return v;
      };
      const VarId then_value = value(arm.then_lifted, arm.then_scalars);
      const VarId else_value = value(else_lifted, else_scalars);
      const bool known_before = arm.lifted.count(v) || arm.scalars.count(v) || !written_.count(v) ||
                                arm.top_defined.count(v);
      if (!known_before && (then_value == v || else_value == v))
        return fmt::format("it carries {} from one iteration to the next (not a sum, max or min)",
                           quoted(fn_, v));
      if (!program_.types.is_scalar(fn_.vars[v].type))
        return fmt::format("{} is an array assigned in an if", quoted(fn_, v));
      const VarId a = as_array(then_value, v, ops), b = as_array(else_value, v, ops);
      ops.push_back(new_op(OpCode::Select, new_var(v, all_of(fn_.vars[v].type)), {arm.cond, a, b},
                           loop_loc()));
      lifted_[v] = ops.back().dst;
      scalars_.erase(v);
      made_in_arms(lifted_[v]);
    }
    for (VarId acc : changed({&arm.then_terms, &else_terms}, arm.terms)) {
      auto term = [&](const std::map<VarId, VarId>& terms) {
        auto it = terms.find(acc);
        return it != terms.end() ? it->second : unchanged(acc, ops);
      };
      const VarId a = term(arm.then_terms), b = term(else_terms);
      ops.push_back(
          new_op(OpCode::Select, new_var(acc, fn_.vars[a].type), {arm.cond, a, b}, loop_loc()));
      terms_[acc] = ops.back().dst;
      made_in_arms(terms_[acc]);
    }
    return "";
  }

  // The term that leaves a sum as it is, bit for bit: -0 for floats (x + -0 is x, also for
  // x = -0), 0 for integers.
  VarId unchanged(VarId acc, std::vector<Op>& ops) {
    const TypeId t = fn_.vars[acc].type;
    const uint32_t word = program_.types.leaf(t) == Types::kFloat ? 0x80000000u : 0u;
    return constant_array(acc, t, std::vector<uint32_t>(count(), word), ops);
  }

  std::string lift(size_t k, std::vector<Op>& ops) {
    const Op& op = *body_ops_[k];
    if (const Reduction* r = reduction_of(k)) return update(*r, op, ops);
    note_index_arith(op);
    if (!arms_.empty())
      if (std::string why = refuse_in_arm(op); !why.empty()) return why;
    const bool any_varying =
        std::any_of(op.args.begin(), op.args.end(), [&](VarId a) { return varying(a); });
    if (!any_varying && !is_random(op) && !is_call(op) && !is_emit(op)) {
      if (arms_.empty()) {
        lifted_.erase(op.dst);  // from here on the variable holds this one value
        rows_.erase(op.dst);
        if (op.dst >= 0) top_defined_.insert(op.dst);
        ops.push_back(op);  // the same in every iteration: once
        return "";
      }
      if (moves_words(op)) return rename_in_arm(op, ops);
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
      if (!varying(a) && !program_.types.is_scalar(fn_.vars[operand(a, ops)].type))
        return fmt::format("an elementwise op on the array {} in its body", quoted(fn_, a));
      a = arms_.empty() ? operand(a, ops) : arm_operand(a, ops);
    }
    if (!program_.types.is_scalar(fn_.vars[op.dst].type))
      return fmt::format("{} is an array computed per iteration", quoted(fn_, op.dst));
    out.dst = new_var(op.dst, all_of(fn_.vars[op.dst].type));
    lifted_[op.dst] = out.dst;
    scalars_.erase(op.dst);
    made_in_arms(out.dst);
    ops.push_back(std::move(out));
    return "";
  }

  // A constant, a copy or a read at a fixed place: it cannot fault.
  static bool moves_words(const Op& op) {
    if (op.code == OpCode::Const || op.code == OpCode::Copy) return true;
    return has_path(op.code) && !is_set(op) &&
           std::none_of(op.path.begin(), op.path.end(),
                        [](const PathStep& s) { return s.dynamic; });
  }

  // An op inside an `if` that reads nothing that varies, run in every iteration into a scalar
  // of its own, so that the variable keeps its value where the arm is not taken.
  std::string rename_in_arm(const Op& op, std::vector<Op>& ops) {
    Op out = op;
    for (VarId& a : out.args)
      a = operand(a, ops);
    out.dst = new_var(op.dst, fn_.vars[op.dst].type);
    scalars_[op.dst] = out.dst;
    lifted_.erase(op.dst);
    rows_.erase(op.dst);
    ops.push_back(std::move(out));
    return "";
  }

  // What an arm may not hold: its ops run in every iteration, so one that can fault would fault
  // where the loop did not.
  std::string refuse_in_arm(const Op& op) const {
    if (is_assert(op)) return "an assert inside an if";
    if (is_division(op) && program_.types.leaf(fn_.vars[op.dst].type) != Types::kFloat)
      return "an integer division inside an if";
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

  // y[i + c] (any static steps before the index): the rows lo + c .. hi + c of y, as one static
  // step reaching them, or nothing when they are the whole of y; X[i + c] is rows of X, kept for
  // dot; `out[i + c] = v` writes those rows of out at once.
  std::string lift_index(const Op& op, std::vector<Op>& ops) {
    const size_t first = op.code == OpCode::Get ? 1 : is_set(op) ? 2 : 0;
    if (is_set(op) && (!element_writes_.count(op.dst) || !arms_.empty()))
      return fmt::format("it writes an element of {}{}", quoted(fn_, op.args[0]),
                         arms_.empty() ? "" : " inside an if");
    if (op.code == OpCode::Get && varying(op.args[0]))
      return fmt::format("it indexes {}, which varies", quoted(fn_, op.args[0]));
    std::optional<PathStep> rows;
    if (std::string why = rows_step(op, first, rows); !why.empty()) return why;
    Op out = op;
    out.path.pop_back();
    out.args.resize(first);
    if (rows && !out.path.empty() && !out.path.back().dynamic)
      out.path.back().offset += rows->offset;
    else if (rows)
      out.path.push_back(*rows);
    if (first == 1) out.args[0] = operand(op.args[0], ops);
    if (is_set(op)) return lift_element_write(op, std::move(out), ops);
    if (out.code == OpCode::Get && out.path.empty()) out.code = OpCode::Copy;
    const TypeId elem = fn_.vars[op.dst].type;
    out.dst = new_var(op.dst, all_of(elem));
    scalars_.erase(op.dst);
    if (program_.types.is_scalar(elem))
      lifted_[op.dst] = out.dst;
    else
      rows_[op.dst] = out.dst;
    ops.push_back(std::move(out));
    return "";
  }

  // The static step to the rows an index i + c reaches over the loop's range, in `rows` (none
  // when they are the whole array), or why not.
  std::string rows_step(const Op& op, size_t first, std::optional<PathStep>& rows) const {
    const PathStep& last = op.path.back();
    const bool one_dynamic = std::count_if(op.path.begin(), op.path.end(),
                                           [](const PathStep& s) { return s.dynamic; }) == 1;
    std::optional<int64_t> c;
    if (last.dynamic && op.args.size() == first + 1 && one_dynamic) c = offset_of(op.args[first]);
    if (!c) return "an index other than the loop's variable plus a constant, or a step after it";
    const int64_t from = loop_.lo + *c, to = loop_.hi + *c;
    // The loop would fault at the row outside; the array form could not fault there.
    if (from < 0 || to > static_cast<int64_t>(last.count))
      return "its index leaves the array it indexes";
    if (from == 0 && to == static_cast<int64_t>(last.count)) return "";
    PathStep step;
    step.offset = last.offset + static_cast<uint32_t>(from) * last.stride;
    rows = step;
    return "";
  }

  // out[i + c] = v for every row: out's rows written at once with v's array.
  std::string lift_element_write(const Op& op, Op out, std::vector<Op>& ops) {
    const VarId value = op.args[1];
    if (rows_.count(value) || !program_.types.is_scalar(fn_.vars[value].type))
      return fmt::format("it writes an array into each element of {}", quoted(fn_, op.dst));
    out.args[1] = as_array(operand(value, ops), value, ops);
    ops.push_back(std::move(out));
    return "";
  }

  // c when v holds i + c in every iteration.
  std::optional<int64_t> offset_of(VarId v) const {
    if (v == loop_.index) return 0;
    auto it = offsets_.find(v);
    return it == offsets_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }

  // The integer constant v holds in every iteration, if one.
  std::optional<int64_t> constant_of(VarId v) const {
    if (auto it = constants_.find(v); it != constants_.end()) return it->second;
    if (written_.count(v) || !program_.types.is_scalar(fn_.vars[v].type)) return std::nullopt;
    const Scalar kind = program_.types[fn_.vars[v].type].scalar;
    if (kind != Scalar::Int && kind != Scalar::UInt) return std::nullopt;
    const Block& pre = fn_.blocks[loop_.preheader];
    return constant_before(pre, pre.ops.size(), v, kind);
  }

  // Tracks, outside any `if`, the integer constants and the values i + c an op writes, so that
  // y[i - 1] reads rows of y.
  void note_index_arith(const Op& op) {
    offsets_.erase(op.dst);
    constants_.erase(op.dst);
    if (!arms_.empty() || op.dst < 0 || !program_.types.is_scalar(fn_.vars[op.dst].type)) return;
    const Scalar kind = program_.types[fn_.vars[op.dst].type].scalar;
    if (kind != Scalar::Int && kind != Scalar::UInt) return;
    if (op.code == OpCode::Const && op.imm.size() == 1) {
      constants_[op.dst] = kind == Scalar::Int ? static_cast<int32_t>(op.imm.at(0))
                                               : static_cast<int64_t>(op.imm.at(0));
      return;
    }
    std::optional<int64_t> result;
    if (op.code == OpCode::Copy) result = offset_of(op.args[0]);
    if (op.code == OpCode::Add || op.code == OpCode::Sub) {
      const std::optional<int64_t> a = offset_of(op.args[0]), b = constant_of(op.args[1]);
      if (a && b) result = op.code == OpCode::Add ? *a + *b : *a - *b;
      const std::optional<int64_t> ca = constant_of(op.args[0]), ob = offset_of(op.args[1]);
      if (op.code == OpCode::Add && ca && ob) result = *ca + *ob;
    }
    if (result) offsets_[op.dst] = *result;
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
    out.args = {rows_.at(row), operand(other, ops)};
    out.dst = new_var(op.dst, all_of(fn_.vars[op.dst].type));
    lifted_[op.dst] = out.dst;
    scalars_.erase(op.dst);
    ops.push_back(std::move(out));
    return "";
  }

  // An update `acc += t` gives this iteration's term t (-t for `acc -= t`); a reduction is
  // updated at most once on each path through the body.
  std::string update(const Reduction& r, const Op& op, std::vector<Op>& ops) {
    if (!arms_.empty() && r.fold != OpCode::Sum)
      // max(acc, x) leaves no x's acc as it is (a NaN acc is replaced), so no term stands for
      // the untaken arm.
      return fmt::format("it updates {} by {} inside an if", quoted(fn_, r.acc),
                         r.fold == OpCode::ReduceMax ? "max" : "min");
    if (terms_.count(r.acc)) return fmt::format("it updates {} twice", quoted(fn_, r.acc));
    const VarId term = op.args[0] == r.acc ? op.args[1] : op.args[0];
    if (rows_.count(term)) return fmt::format("it sums the row {}", quoted(fn_, term));
    VarId terms = as_array(operand(term, ops), term, ops);
    if (op.code == OpCode::Sub) {
      ops.push_back(new_op(OpCode::Neg, new_var(term, fn_.vars[terms].type), {terms}, op.loc));
      terms = ops.back().dst;
    }
    terms_[r.acc] = terms;
    made_in_arms(terms);
    return "";
  }

  // acc = fold([acc, t...]): the loop's chain from acc, in order.
  void fold(const Reduction& r, std::vector<Op>& ops) {
    const SourceLoc loc = body_ops_[r.updates.front()]->loc;
    const TypeId scalar = fn_.vars[r.acc].type;
    const VarId chain = new_var(r.acc, program_.types.array(scalar, count() + 1));
    ops.push_back(new_op(OpCode::Make, chain, {r.acc, terms_.at(r.acc)}, loc));
    ops.push_back(new_op(r.fold, r.acc, {chain}, loc));
  }

  Program& program_;
  Function& fn_;
  const CfgShape* cfg_ = nullptr;
  ForLoop loop_;
  std::vector<const Op*> body_ops_;
  std::vector<Step> steps_;
  std::set<VarId> written_;
  std::vector<Reduction> reductions_;
  std::map<VarId, VarId> lifted_;   // a varying scalar -> its array
  std::map<VarId, VarId> rows_;     // a row X[i] -> the whole X
  std::map<VarId, VarId> scalars_;  // a variable an arm sets to one value -> that value's scalar
  std::map<VarId, VarId> terms_;    // a reduction -> this iteration's term, as an array
  std::map<VarId, size_t> element_writes_;  // an array written as out[i + c] = v -> that op
  std::map<VarId, int64_t> offsets_;        // a value that is i + c in every iteration -> c
  std::map<VarId, int64_t> constants_;      // an integer constant the body sets -> its value
  std::set<VarId> top_defined_;             // variables the body set, outside any if, to one value
  std::vector<Arm> arms_;                   // the ifs being converted, innermost last
  VarId index_array_ = -1;
  VarId zeros_ = -1;
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
