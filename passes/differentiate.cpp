#include "passes/differentiate.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "passes/analysis/liveness.h"  // successors()

namespace ab {
namespace {

bool has_float(const Types& t, TypeId id) {
  const Type& ty = t[id];
  switch (ty.kind) {
    case Type::Kind::Scalar:
      return ty.scalar == Scalar::Float;
    case Type::Kind::Array:
      return has_float(t, ty.elem);
    case Type::Kind::Struct:
      for (const Field& f : t.struct_def(id).fields)
        if (has_float(t, f.type)) return true;
      return false;
    case Type::Kind::Void:
      return false;
  }
  return false;
}

// Adjoints are accumulated with elementwise adds, which arrays of structs do not have.
bool array_of_struct(const Types& t, TypeId id) {
  const Type& ty = t[id];
  if (ty.kind == Type::Kind::Array) return t.is_struct(t.leaf(id)) || array_of_struct(t, ty.elem);
  if (ty.kind == Type::Kind::Struct)
    for (const Field& f : t.struct_def(id).fields)
      if (array_of_struct(t, f.type)) return true;
  return false;
}

struct Pos {
  int block = 0;
  int op = 0;
};

enum class Restore : uint8_t { None, Save, Tape, Invert };

struct Read {
  VarId var;
  Pos pos;
  bool alias;  // the op's own destination read as an operand (its old value)
};

// Builds one derived function. `vjp_of(g)` gives the index of g's vjp function (made on demand).
void merge_straight_chains(Function& fn);

class Deriver {
 public:
  Deriver(Program& program, Diagnostics& diags, const std::function<int(int)>& vjp_of)
      : P_(program), T_(program.types), diags_(diags), vjp_of_(vjp_of) {}

  // vg: value_and_grad (with respect to the first parameter); else the vjp.
  // Loop headers not to preaccumulate (a first attempt found a value of the loop read outside).
  std::set<int> no_preaccumulation;
  int retry_header = -1;  // set when build() must run again with this header excluded

  bool build(int f, bool vg, Function& out) {
    vg_ = vg;
    src_ = P_.functions[f];
    normalize();
    analyse_cfg();
    if (!activity()) return false;
    find_preaccumulated_loops();
    D_ = Function{};
    D_.name = src_.name + (vg ? ".value_and_grad" : ".vjp");
    D_.loc = src_.loc;
    D_.vars = src_.vars;
    D_.params = src_.params;
    for (size_t v = 0; v < src_.vars.size(); ++v)
      bar_.push_back(active_[v] ? new_var(src_.vars[v].name + ".adj", src_.vars[v].type) : -1);
    if (!vg_) seed_ = new_var("seed", src_.result_type());
    if (!vg_) D_.params.push_back(seed_);
    // First pass: which values the adjoints read (on a scratch copy), then how to restore them.
    {
      const Function saved = D_;
      dry_ = true;
      for (int b = 0; b < nb_; ++b) {
        if (in_pre_loop_[b] >= 0 && pre_.at(in_pre_loop_[b]).header != b) continue;
        cur_ = -1;
        for (int i = static_cast<int>(src_.blocks[b].ops.size()); i-- > 0;)
          adjoint(Pos{b, i});
      }
      for (const auto& [h, pre] : pre_)
        for (VarId j : pre.partial)
          reads_.push_back({j, Pos{h, 0}, false});
      dry_ = false;
      D_ = saved;
    }
    // A preaccumulated loop's values are not restored: nothing outside it may read them.
    for (const Read& r : reads_)
      for (const auto& [h, pre] : pre_)
        if (pre.defined.count(r.var) && (in_pre_loop_[r.pos.block] != h)) {
          retry_header = h;
          return false;
        }
    plan_restores();
    for (int b = 0; b < nb_; ++b)
      if (in_pre_loop_[b] >= 0) restore_[b].assign(restore_[b].size(), Restore::None);
    emit_all();
    merge_straight_chains(D_);
    out = std::move(D_);
    return ok_;
  }

 private:
  // ---- the source function, normalised: one exit block, no edge from a branch into a join ----
  void normalize() {
    auto& blocks = src_.blocks;
    // An entry block with predecessors gets a fresh one in front, so the reverse sweep can end
    // at block 0.
    bool entry_has_pred = false;
    for (const Block& b : blocks)
      for (int s : successors(b.term))
        entry_has_pred = entry_has_pred || s == 0;
    if (entry_has_pred) {
      for (Block& b : blocks) {
        if (b.term.target >= 0) ++b.term.target;
        if (b.term.target_else >= 0) ++b.term.target_else;
      }
      Block entry;
      entry.loc = blocks[0].loc;
      entry.term.kind = Terminator::Kind::Jump;
      entry.term.target = 1;
      entry.term.loc = blocks[0].loc;
      blocks.insert(blocks.begin(), entry);
    }
    exit_ = static_cast<int>(blocks.size());
    Block exit;
    exit.loc = src_.loc;
    exit.term.kind = Terminator::Kind::Return;
    for (Block& b : blocks)
      if (b.term.kind == Terminator::Kind::Return) {
        exit.term.loc = b.term.loc;
        b.term.kind = Terminator::Kind::Jump;
        b.term.target = exit_;
      }
    blocks.push_back(exit);
    std::vector<int> incoming(blocks.size(), 0);
    for (const Block& b : blocks)
      for (int s : successors(b.term))
        ++incoming[s];
    const size_t n = blocks.size();
    for (size_t b = 0; b < n; ++b) {
      if (blocks[b].term.kind != Terminator::Kind::Branch) continue;
      for (int32_t* slot : {&blocks[b].term.target, &blocks[b].term.target_else}) {
        if (incoming[*slot] < 2) continue;
        Block edge;
        edge.loc = blocks[b].term.loc;
        edge.term.kind = Terminator::Kind::Jump;
        edge.term.target = *slot;
        edge.term.loc = blocks[b].term.loc;
        *slot = static_cast<int32_t>(blocks.size());
        blocks.push_back(edge);
      }
    }
    nb_ = static_cast<int>(blocks.size());
  }

  void analyse_cfg() {
    preds_.assign(nb_, {});
    for (int b = 0; b < nb_; ++b)
      for (int s : successors(src_.blocks[b].term))
        preds_[s].push_back(b);
    reach_.assign(nb_, std::vector<bool>(nb_, false));
    for (int b = 0; b < nb_; ++b) {
      std::deque<int> work(1, b);
      while (!work.empty()) {
        const int x = work.front();
        work.pop_front();
        for (int s : successors(src_.blocks[x].term))
          if (!reach_[b][s]) {
            reach_[b][s] = true;
            work.push_back(s);
          }
      }
    }
    // Dominators (dom_[b][a]: a dominates b), by the iterative data-flow rule.
    dom_.assign(nb_, std::vector<bool>(nb_, true));
    dom_[0].assign(nb_, false);
    dom_[0][0] = true;
    for (bool changed = true; changed;) {
      changed = false;
      for (int b = 1; b < nb_; ++b) {
        std::vector<bool> d(nb_, !preds_[b].empty());
        for (int p : preds_[b])
          for (int a = 0; a < nb_; ++a)
            d[a] = d[a] && dom_[p][a];
        d[b] = true;
        if (d != dom_[b]) {
          dom_[b] = std::move(d);
          changed = true;
        }
      }
    }
    // Loop headers counted by iterations: two predecessors, a back edge (from a block the header
    // dominates) and an entry from outside.
    counted_.assign(nb_, false);
    for (int b = 0; b < nb_; ++b) {
      if (preds_[b].size() != 2) continue;
      const int p0 = preds_[b][0], p1 = preds_[b][1];
      if (p0 == b || p1 == b || p0 == p1) continue;
      const bool back0 = dom_[p0][b], back1 = dom_[p1][b];
      if (back0 == back1) continue;
      counted_[b] = true;
      if (back0) std::swap(preds_[b][0], preds_[b][1]);  // [outside, back edge]
    }
  }
  bool in_cycle(int b) const { return reach_[b][b]; }
  // The line of the innermost loop around block b (its header's), for a tape's pushes: a tape
  // that outgrows the stack depth faults there, naming the loop rather than a statement in it.
  SourceLoc loop_loc(int b) const {
    int innermost = -1;
    size_t innermost_size = 0;
    for (int h = 0; h < nb_; ++h)
      for (int latch : preds_[h]) {
        if (!dom_[latch][h]) continue;  // not a back edge
        std::vector<bool> in(nb_, false);
        in[h] = true;
        std::vector<int> work{latch};
        size_t size = 1;
        while (!work.empty()) {
          const int x = work.back();
          work.pop_back();
          if (in[x]) continue;
          in[x] = true;
          ++size;
          for (int p : preds_[x])
            work.push_back(p);
        }
        if (in[b] && (innermost < 0 || size < innermost_size)) {
          innermost = h;
          innermost_size = size;
        }
      }
    return innermost >= 0 ? src_.blocks[innermost].loc : src_.blocks[b].loc;
  }

  // ---- preaccumulated loops ----
  // A loop of a header, one body block and at most a latch whose only carried derivative is one
  // float accumulator, `acc += e` or `acc -= e` (e not reading acc): acc's adjoint is the same in
  // every iteration, so instead of a reverse sweep through the iterations (a tape of each
  // iteration's values) the forward sweep adds each iteration's gradient of e with respect to
  // the loop's other inputs into a partial (`u.partial`, zero at loop entry), and the reverse
  // sweep passes the loop in one step: u.adj += acc.adj * u.partial. A sum of log-likelihood
  // terms over data rows is this loop; it costs what the hand-written gradient costs.
  struct PreLoop {
    int header = -1, entry = -1, exit = -1;
    std::vector<int> chain;  // the body, header to latch: blocks, and inner loops by header
    VarId acc = -1;
    std::vector<VarId> inputs, partial;  // invariant active inputs and their partials
    std::set<VarId> defined;             // every variable the loop writes
  };
  // The natural loop of header h: the header and what reaches its back edge without passing it.
  std::vector<int> natural_loop(int h) const {
    std::vector<bool> in(nb_, false);
    in[h] = true;
    std::vector<int> work{preds_[h][1]};
    while (!work.empty()) {
      const int b = work.back();
      work.pop_back();
      if (in[b]) continue;
      in[b] = true;
      for (int p : preds_[b])
        work.push_back(p);
    }
    std::vector<int> blocks;
    for (int b = 0; b < nb_; ++b)
      if (in[b]) blocks.push_back(b);
    return blocks;
  }

  // A source variable the pass adds that carries no derivative (a copy, a partial).
  VarId new_inactive_var(std::string name, TypeId type) {
    const auto v = static_cast<VarId>(src_.vars.size());
    src_.vars.push_back(Var{std::move(name), type});
    active_.push_back(false);
    defs_.push_back(1);
    return v;
  }

  // Reads the operands `snapshots` names ((position in `at`, operand)) through copies taken just
  // before their ops, from the last op back so that an insertion moves no position still to visit.
  void insert_operand_copies(PreLoop& pre, const std::vector<Pos>& at,
                             const std::set<std::pair<size_t, size_t>>& snapshots) {
    std::map<size_t, std::vector<size_t>> copied_operands;
    for (const auto& [i, k] : snapshots)
      copied_operands[i].push_back(k);
    for (auto it = copied_operands.rbegin(); it != copied_operands.rend(); ++it) {
      const Pos p = at[it->first];
      std::vector<Op>& body = src_.blocks[p.block].ops;
      std::vector<Op> copies;
      for (size_t k : it->second) {
        const VarId a = body[p.op].args[k];
        const VarId copy = new_inactive_var(src_.vars[a].name + ".read", src_.vars[a].type);
        pre.defined.insert(copy);
        body[p.op].args[k] = copy;
        Op& take = copies.emplace_back();
        take.code = OpCode::Copy;
        take.dst = copy;
        take.args = {a};
        take.loc = body[p.op].loc;
      }
      body.insert(body.begin() + p.op, copies.begin(), copies.end());
    }
  }

  // A partial per invariant active input, zero at loop entry: an op of the entry block, restored
  // like any other.
  void add_partials(PreLoop& pre, const std::set<VarId>& inputs) {
    for (VarId u : inputs) {
      pre.inputs.push_back(u);
      pre.partial.push_back(new_inactive_var(src_.vars[u].name + ".partial", src_.vars[u].type));
      not_remat_.insert(pre.partial.back());
      Op zero;
      zero.code = OpCode::Const;
      zero.dst = pre.partial.back();
      zero.imm.assign(T_.words(src_.vars[u].type), 0u);
      zero.loc = src_.blocks[pre.header].loc;
      src_.blocks[pre.entry].ops.push_back(zero);
    }
  }

  // A preaccumulated loop's body in order, for its checks: each step an op (ops[i], unit[i] null)
  // or a preaccumulated inner loop taken whole (ops[i] null, unit[i] the loop), at its position.
  struct BodyInOrder {
    std::vector<const Op*> ops;
    std::vector<const PreLoop*> unit;
    std::vector<Pos> at;
  };
  BodyInOrder body_in_order(const PreLoop& pre) const {
    BodyInOrder body;
    for (int b : pre.chain) {
      if (pre_.count(b) && b != pre.header) {
        body.ops.push_back(nullptr);
        body.unit.push_back(&pre_.at(b));
        body.at.push_back(Pos{b, -1});
        continue;
      }
      for (size_t i = 0; i < src_.blocks[b].ops.size(); ++i) {
        body.ops.push_back(&src_.blocks[b].ops[i]);
        body.unit.push_back(nullptr);
        body.at.push_back(Pos{b, static_cast<int>(i)});
      }
    }
    return body;
  }

  void find_preaccumulated_loops() {
    in_pre_loop_.assign(nb_, -1);
    const Liveness live = compute_liveness(src_);
    // Inner loops first, so that an outer loop can take a preaccumulated inner one as a unit.
    std::vector<std::pair<size_t, int>> headers;
    std::vector<std::vector<int>> loop_blocks(nb_);
    for (int h = 0; h < nb_; ++h) {
      if (!counted_[h] || no_preaccumulation.count(h)) continue;
      loop_blocks[h] = natural_loop(h);
      headers.push_back({loop_blocks[h].size(), h});
    }
    std::sort(headers.begin(), headers.end());
    for (const auto& [size, h] : headers) {
      const std::vector<int>& blocks = loop_blocks[h];
      const Terminator& ht = src_.blocks[h].term;
      if (ht.kind != Terminator::Kind::Branch) continue;
      auto in_loop = [&](int b) {
        return std::find(blocks.begin(), blocks.end(), b) != blocks.end();
      };
      PreLoop pre;
      pre.header = h;
      pre.entry = preds_[h][0];
      pre.exit = in_loop(ht.target) ? ht.target_else : ht.target;
      bool ok = true;
      size_t covered = 1;
      for (int cur = in_loop(ht.target) ? ht.target : ht.target_else; ok && cur != h;) {
        if (pre_.count(cur)) {  // a preaccumulated inner loop
          const PreLoop& inner = pre_.at(cur);
          pre.chain.push_back(cur);
          covered += loop_blocks[cur].size();
          pre.defined.insert(inner.defined.begin(), inner.defined.end());
          pre.defined.insert(inner.partial.begin(), inner.partial.end());
          cur = inner.exit;
        } else {
          const Terminator& t = src_.blocks[cur].term;
          if (t.kind != Terminator::Kind::Jump || !in_loop(cur) ||
              pre.chain.size() > blocks.size()) {
            ok = false;
            break;
          }
          pre.chain.push_back(cur);
          ++covered;
          for (const Op& o : src_.blocks[cur].ops)
            if (o.dst >= 0) pre.defined.insert(o.dst);
          cur = t.target;
        }
      }
      if (!ok || covered != blocks.size() || pre.chain.empty() || pre_.count(pre.chain.back()))
        continue;
      for (const Op& o : src_.blocks[h].ops)
        if (o.dst >= 0) {
          pre.defined.insert(o.dst);
          if (active_[o.dst]) ok = false;
        }
      // The accumulator: the one active variable the loop writes that lives into the header.
      for (VarId v : pre.defined) {
        if (!active_[v] || !live.live_in[h][v]) continue;
        if (pre.acc >= 0 || src_.vars[v].type != Types::kFloat) ok = false;
        pre.acc = v;
      }
      if (!ok || pre.acc < 0) continue;
      const auto [ops, unit, at] = body_in_order(pre);
      // Operands without a derivative (an index, a data value) that the body writes again after
      // an adjoint reads them, by (position, operand): read through a copy taken just before.
      std::set<std::pair<size_t, size_t>> snapshots;
      for (size_t i = 0; ok && i < ops.size(); ++i) {
        if (!ops[i]) {
          const PreLoop& inner = *unit[i];
          if (std::find(inner.inputs.begin(), inner.inputs.end(), pre.acc) != inner.inputs.end() ||
              inner.defined.count(pre.acc))
            ok = false;
          continue;
        }
        const Op& o = *ops[i];
        const bool update = (o.code == OpCode::Add || o.code == OpCode::Sub) && o.dst == pre.acc &&
                            o.args[0] == pre.acc && o.args[1] != pre.acc;
        if (o.dst == pre.acc && !update) ok = false;
        for (size_t k = 0; k < o.args.size(); ++k)
          if (o.args[k] == pre.acc && !(update && k == 0)) ok = false;
        // No value an adjoint reads is written again later in the body (the per-iteration
        // reverse runs at the body's end), unless it is inactive and can be read from a copy.
        for (size_t j = i + 1; ok && differentiated(o) && j < ops.size(); ++j)
          for (size_t k = 0; k < o.args.size(); ++k) {
            const VarId a = o.args[k];
            if (a == pre.acc) continue;
            if (!(ops[j] ? ops[j]->dst == a : unit[j]->defined.count(a) != 0)) continue;
            if (active_[a])
              ok = false;
            else
              snapshots.insert({i, k});
          }
      }
      if (!ok) continue;
      std::set<VarId> inputs;
      for (size_t i = 0; i < ops.size(); ++i) {
        const std::vector<VarId>& args = ops[i] ? ops[i]->args : unit[i]->inputs;
        for (VarId a : args)
          if (active_[a] && !pre.defined.count(a)) inputs.insert(a);
      }
      insert_operand_copies(pre, at, snapshots);  // ops holds no valid pointer after this
      add_partials(pre, inputs);
      for (int b : blocks)
        in_pre_loop_[b] = h;
      last_of_[pre.chain.back()] = h;
      pre_[h] = std::move(pre);
    }
  }

  // The forward sweep's per-iteration reverse of a preaccumulated loop's body, seeded with 1 on
  // the accumulator, into local adjoints and the partials.
  void preaccumulate(const PreLoop& pre) {
    std::vector<VarId> saved_bar = bar_;
    std::vector<VarId> local(src_.vars.size(), -1);
    local_defs_.assign(src_.vars.size(), 0);
    for (int b : pre.chain) {
      if (pre_.count(b)) continue;
      for (const Op& o : src_.blocks[b].ops) {
        if (o.dst < 0) continue;
        ++local_defs_[o.dst];
        if (active_[o.dst] && o.dst != pre.acc && local[o.dst] < 0) {
          local[o.dst] = new_var(src_.vars[o.dst].name + ".local", src_.vars[o.dst].type);
          zero(local[o.dst]);
        }
      }
    }
    for (size_t k = 0; k < pre.inputs.size(); ++k)
      local[pre.inputs[k]] = pre.partial[k];
    local[pre.acc] = fconst(1.0f);
    bar_ = local;
    local_mode_ = true;
    for (size_t c = pre.chain.size(); c-- > 0;) {
      const int b = pre.chain[c];
      if (pre_.count(b)) {  // an inner loop: its inputs' adjoints += its partials * acc's
        const PreLoop& inner = pre_.at(b);
        for (size_t k = 0; k < inner.inputs.size(); ++k)
          if (bar_[inner.inputs[k]] >= 0)
            add_scaled_into(bar_[inner.inputs[k]], inner.partial[k], bar_[inner.acc]);
        continue;
      }
      for (int i = static_cast<int>(src_.blocks[b].ops.size()); i-- > 0;)
        adjoint(Pos{b, i});
    }
    local_mode_ = false;
    bar_ = saved_bar;
  }
  bool precedes(Pos a, Pos b) const {
    return (a.block == b.block && a.op < b.op) || reach_[a.block][b.block];
  }

  // ---- which variables carry a derivative ----
  bool activity() {
    const size_t nv = src_.vars.size();
    active_.assign(nv, false);
    defs_.assign(nv, 0);
    for (size_t k = 0; k < src_.params.size(); ++k) {
      const VarId p = src_.params[k];
      ++defs_[p];
      if ((k == 0 || !vg_) && has_float(T_, src_.vars[p].type)) active_[p] = true;
    }
    for (const Block& b : src_.blocks)
      for (const Op& op : b.ops)
        if (op.dst >= 0) ++defs_[op.dst];
    for (bool changed = true; changed;) {
      changed = false;
      for (const Block& b : src_.blocks)
        for (const Op& op : b.ops) {
          if (op.dst < 0 || active_[op.dst] || !has_float(T_, src_.vars[op.dst].type)) continue;
          if (relevant_active(op)) {
            active_[op.dst] = true;
            changed = true;
          }
        }
    }
    for (const Block& b : src_.blocks)
      for (const Op& op : b.ops) {
        if (op.dst >= 0 && active_[op.dst] && array_of_struct(T_, src_.vars[op.dst].type))
          fail(op.loc, "arrays of structs holding floats are not differentiated");
        if (op.code == OpCode::Trigamma && differentiated(op))
          fail(op.loc, "'trigamma' has no derivative: it cannot be differentiated");
      }
    return ok_;
  }

  // An operand through which the destination can depend on the parameter.
  bool relevant_active(const Op& op) const {
    switch (op.code) {
      case OpCode::Const:
      case OpCode::UniformGet:
      case OpCode::Floor:
      case OpCode::Ceil:
      case OpCode::RandUniform:
      case OpCode::RandNormal:
        return false;
      case OpCode::Get:
        return active_[op.args[0]];
      case OpCode::Set:
        return active_[op.args[0]] || active_[op.args[1]];
      case OpCode::Select:
        return active_[op.args[1]] || active_[op.args[2]];
      case OpCode::ToFloat:  // float(x) of a float is the identity
        return active_[op.args[0]];
      default:
        for (VarId a : op.args)
          if (active_[a]) return true;
        return false;
    }
  }
  bool differentiated(const Op& op) const {
    return op.dst >= 0 && active_[op.dst] && relevant_active(op);
  }

  void fail(SourceLoc loc, const std::string& what) {
    diags_.error(loc, fmt::format("cannot differentiate '{}': {}", src_.name, what));
    ok_ = false;
  }

  // ---- emission helpers: ops go to block cur_ of D_ (nowhere useful in the dry pass) ----
  VarId new_var(std::string name, TypeId type) {
    D_.vars.push_back(Var{std::move(name), type});
    return static_cast<VarId>(D_.vars.size() - 1);
  }
  TypeId type(VarId v) const { return D_.vars[v].type; }
  Op& emit(OpCode code, VarId dst, std::vector<VarId> args) {
    Op op;
    op.code = code;
    op.dst = dst;
    op.args = std::move(args);
    op.loc = loc_;
    std::vector<Op>& ops = cur_ < 0 ? scratch_ : D_.blocks[cur_].ops;
    ops.push_back(std::move(op));
    return ops.back();
  }
  VarId op(OpCode code, TypeId t, std::vector<VarId> args) {
    const VarId d = new_var("", t);
    emit(code, d, std::move(args));
    return d;
  }
  VarId fconst(float f) {
    const VarId d = new_var("", Types::kFloat);
    emit(OpCode::Const, d, {}).imm = {float_bits(f)};
    return d;
  }
  VarId zeros(TypeId t) {
    const VarId d = new_var("", t);
    emit(OpCode::Const, d, {}).imm.assign(T_.words(t), 0u);
    return d;
  }
  VarId iconst(int32_t k) {
    const VarId d = new_var("", Types::kInt);
    emit(OpCode::Const, d, {}).imm = {static_cast<uint32_t>(k)};
    return d;
  }
  // `a` (any shape) times the float scalar or same-shaped `b`.
  VarId mul(VarId a, VarId b) {
    return op(OpCode::Mul, T_.is_array(type(b)) ? type(b) : type(a), {a, b});
  }
  VarId same(OpCode code, VarId a, std::vector<VarId> more = {}) {
    more.insert(more.begin(), a);
    TypeId t = type(a);
    for (VarId m : more)
      if (T_.is_array(type(m))) t = type(m);
    return op(code, t, std::move(more));
  }

  // A primal value the reverse sweep reads: recorded in the dry pass; a constant or a uniform
  // read is computed again into a fresh variable.
  VarId val(VarId v) {
    if (dry_) {
      reads_.push_back({v, pos_, v == alias_dst_});
      return v;
    }
    if (local_mode_) return v;  // the forward sweep: every value is where it was computed
    auto it = remat_.find(v);
    if (it == remat_.end()) return v;
    Op copy = *it->second;
    for (VarId& a : copy.args)
      a = val(a);
    const VarId d = new_var("", type(v));
    copy.dst = d;
    copy.loc = loc_;
    (cur_ < 0 ? scratch_ : D_.blocks[cur_].ops).push_back(std::move(copy));
    return d;
  }

  // bar[target] += contribution, reducing a broadcast (an array contribution to a scalar) and
  // going field by field through structs.
  void acc(VarId target_var, VarId contribution) {
    if (!active_[target_var]) return;
    add_into(bar_[target_var], contribution);
  }
  void add_into(VarId into, VarId c) {
    const TypeId ti = type(into), tc = type(c);
    if (T_.is_struct(ti)) {
      const StructDef& def = T_.struct_def(ti);
      for (const Field& f : def.fields) {
        if (!has_float(T_, f.type)) continue;
        const VarId part = field(into, f), add = field(c, f);
        add_into(part, add);
        Op& set = emit(OpCode::Set, into, {into, part});
        set.path = {PathStep{false, f.offset, 0, 0}};
      }
      return;
    }
    if (T_.is_scalar(ti) && T_.is_array(tc)) c = op(OpCode::Sum, ti, {c});
    emit(OpCode::Add, into, {into, c});
  }
  // into += x * s for a float scalar s; a struct (a loop's partial of a struct input) field by
  // field, since elementwise ops have no struct operands.
  void add_scaled_into(VarId into, VarId x, VarId s) {
    if (!T_.is_struct(type(x))) {
      add_into(into, mul(x, s));
      return;
    }
    for (const Field& f : T_.struct_def(type(x)).fields) {
      if (!has_float(T_, f.type)) continue;
      const VarId part = field(into, f);
      add_scaled_into(part, field(x, f), s);
      Op& set = emit(OpCode::Set, into, {into, part});
      set.path = {PathStep{false, f.offset, 0, 0}};
    }
  }
  VarId field(VarId s, const Field& f) {
    const VarId d = new_var("", f.type);
    emit(OpCode::Get, d, {s}).path = {PathStep{false, f.offset, 0, 0}};
    return d;
  }
  void zero(VarId v) {
    const VarId z = zeros(type(v));
    emit(OpCode::Copy, v, {z});
  }

  // ---- the adjoint of one op ----
  void adjoint(Pos at) {
    const Op& o = src_.blocks[at.block].ops[at.op];
    pos_ = at;
    loc_ = o.loc;
    const VarId d = o.dst;
    const Restore how = dry_ || local_mode_ ? Restore::None : restore_[at.block][at.op];
    if (!differentiated(o)) {
      if (d >= 0 && active_[d] && needs_zero(at)) zero(bar_[d]);
      restore(at, how);
      return;
    }
    const VarId g0 = bar_[d];
    // In-place forms: x += e, x -= e, a[i] = e.
    if ((o.code == OpCode::Add || o.code == OpCode::Sub) && o.args[0] == d && o.args[1] != d) {
      acc(o.args[1], o.code == OpCode::Add ? g0 : same(OpCode::Neg, g0));
      restore(at, how);
      return;
    }
    if (o.code == OpCode::Set && o.args[0] == d && o.args[1] != d) {
      if (active_[o.args[1]]) {
        std::vector<VarId> idx;
        for (size_t k = 2; k < o.args.size(); ++k)
          idx.push_back(val(o.args[k]));
        const VarId part = new_var("", src_.vars[o.args[1]].type);
        std::vector<VarId> get_args{g0};
        get_args.insert(get_args.end(), idx.begin(), idx.end());
        emit(OpCode::Get, part, get_args).path = o.path;
        acc(o.args[1], part);
        const VarId z = zeros(src_.vars[o.args[1]].type);
        std::vector<VarId> set_args{g0, z};
        set_args.insert(set_args.end(), idx.begin(), idx.end());
        emit(OpCode::Set, g0, set_args).path = o.path;
      }
      restore(at, how);
      return;
    }
    const bool alias = std::find(o.args.begin(), o.args.end(), d) != o.args.end();
    VarId g = g0, r = d;
    if (alias) {
      alias_dst_ = d;
      r = dry_ ? d : op(OpCode::Copy, type(d), {d});
      if (dry_) reads_.push_back({d, at, false});
      g = op(OpCode::Copy, type(g0), {g0});
      zero(g0);
      restore(at, how);
    }
    rule(o, g, r);
    alias_dst_ = -1;
    if (!alias) {
      if (needs_zero(at)) zero(g0);
      restore(at, how);
    }
  }
  void result_read(VarId d) { reads_.push_back({d, pos_, false}); }

  // A destination's adjoint must be cleared when the reverse sweep passes its write, unless the
  // write is the variable's only one and runs at most once (nothing reads the adjoint after).
  bool needs_zero(Pos at) const {
    const VarId d = src_.blocks[at.block].ops[at.op].dst;
    if (local_mode_) return local_defs_[d] > 1;
    return defs_[d] > 1 || in_cycle(at.block);
  }

  void rule(const Op& o, VarId g, VarId r) {
    const auto& a = o.args;
    auto arg = [&](size_t k) { return val(a[k]); };
    auto res = [&] { return dry_ ? (result_read(o.dst), r) : r; };
    auto one = [&] { return fconst(1.0f); };
    switch (o.code) {
      case OpCode::Copy:
      case OpCode::ToFloat:
        acc(a[0], g);
        return;
      case OpCode::Neg:
        acc(a[0], same(OpCode::Neg, g));
        return;
      case OpCode::Abs: {  // sign: 1 - 2 [x < 0]
        const VarId x = arg(0);
        const VarId neg = op(OpCode::Lt, with_leaf(type(x), Types::kBool), {x, fconst(0.0f)});
        const VarId negf = op(OpCode::ToFloat, type(x), {neg});
        const VarId sign = same(OpCode::Sub, one(), {same(OpCode::Add, negf, {negf})});
        acc(a[0], mul(g, sign));
        return;
      }
      case OpCode::Sqrt:
        acc(a[0], same(OpCode::Div, mul(g, fconst(0.5f)), {res()}));
        return;
      case OpCode::Exp:
        acc(a[0], mul(g, res()));
        return;
      case OpCode::Log:
        acc(a[0], same(OpCode::Div, g, {arg(0)}));
        return;
      case OpCode::Sin:
        acc(a[0], mul(g, same(OpCode::Cos, arg(0))));
        return;
      case OpCode::Cos:
        acc(a[0], same(OpCode::Neg, mul(g, same(OpCode::Sin, arg(0)))));
        return;
      case OpCode::Tanh: {
        const VarId t = res();
        acc(a[0], mul(g, same(OpCode::Sub, one(), {mul(t, t)})));
        return;
      }
      case OpCode::Lgamma:
        acc(a[0], mul(g, same(OpCode::Digamma, arg(0))));
        return;
      case OpCode::Digamma:
        acc(a[0], mul(g, same(OpCode::Trigamma, arg(0))));
        return;
      case OpCode::Log1p:
        acc(a[0], same(OpCode::Div, g, {same(OpCode::Add, one(), {arg(0)})}));
        return;
      case OpCode::Expm1:
        acc(a[0], mul(g, same(OpCode::Exp, arg(0))));
        return;
      case OpCode::Log1pExp:
        acc(a[0], mul(g, same(OpCode::InvLogit, arg(0))));
        return;
      case OpCode::Erf:
      case OpCode::Erfc: {  // +-2/sqrt(pi) e^(-x^2)
        const VarId x = arg(0);
        const VarId e = same(OpCode::Exp, same(OpCode::Neg, mul(x, x)));
        const float k = o.code == OpCode::Erf ? 1.12837917f : -1.12837917f;
        acc(a[0], mul(g, mul(e, fconst(k))));
        return;
      }
      case OpCode::InvLogit: {
        const VarId s = res();
        acc(a[0], mul(g, mul(s, same(OpCode::Sub, one(), {s}))));
        return;
      }
      case OpCode::Add:
        acc(a[0], g);
        acc(a[1], g);
        return;
      case OpCode::Sub:
        acc(a[0], g);
        acc(a[1], same(OpCode::Neg, g));
        return;
      case OpCode::Mul:
        if (active_[a[0]]) acc(a[0], mul(g, arg(1)));
        if (active_[a[1]]) acc(a[1], mul(g, arg(0)));
        return;
      case OpCode::Div: {
        const VarId q = same(OpCode::Div, g, {arg(1)});
        acc(a[0], q);
        if (active_[a[1]]) acc(a[1], same(OpCode::Neg, mul(q, res())));
        return;
      }
      case OpCode::Rem: {  // fmod(x, y) = x - trunc(x / y) y
        acc(a[0], g);
        if (active_[a[1]]) {
          const VarId n = same(OpCode::Div, same(OpCode::Sub, arg(0), {res()}), {arg(1)});
          acc(a[1], same(OpCode::Neg, mul(g, n)));
        }
        return;
      }
      case OpCode::Min:
      case OpCode::Max: {  // min = b < a ? b : a; max = b < a ? a : b
        const VarId x = arg(0), y = arg(1);
        const TypeId ft = T_.is_array(type(x)) ? type(x) : type(y);
        const VarId lt = op(OpCode::Lt, with_leaf(ft, Types::kBool), {y, x});
        const VarId m = op(OpCode::ToFloat, ft, {lt});  // 1 where b < a
        const VarId rest = same(OpCode::Sub, one(), {m});
        acc(a[0], mul(g, o.code == OpCode::Min ? rest : m));
        acc(a[1], mul(g, o.code == OpCode::Min ? m : rest));
        return;
      }
      case OpCode::Clamp: {  // min(max(x, lo), hi)
        const VarId x = arg(0), lo = arg(1), hi = arg(2);
        const TypeId ft = type(o.dst);
        const VarId m = same(OpCode::Max, x, {lo});
        const VarId to_hi =
            op(OpCode::ToFloat, ft, {op(OpCode::Lt, with_leaf(ft, Types::kBool), {hi, m})});
        const VarId to_x =
            op(OpCode::ToFloat, ft, {op(OpCode::Lt, with_leaf(ft, Types::kBool), {lo, x})});
        const VarId below = mul(g, same(OpCode::Sub, one(), {to_hi}));
        acc(a[2], mul(g, to_hi));
        acc(a[0], mul(below, to_x));
        acc(a[1], mul(below, same(OpCode::Sub, one(), {to_x})));
        return;
      }
      case OpCode::Pow: {
        const VarId x = arg(0), y = arg(1);
        if (active_[a[0]])
          acc(a[0], mul(g, mul(y, same(OpCode::Pow, x, {same(OpCode::Sub, y, {one()})}))));
        if (active_[a[1]]) {
          // r ln x, and 0 where r is 0 (0^y, whose ln x is -inf) for scalars.
          VarId d = mul(res(), same(OpCode::Log, x));
          if (T_.is_scalar(type(d))) {
            const VarId nz = op(OpCode::Ne, Types::kBool, {res(), fconst(0.0f)});
            d = op(OpCode::Select, Types::kFloat, {nz, d, fconst(0.0f)});
          }
          acc(a[1], mul(g, d));
        }
        return;
      }
      case OpCode::LogSumExp: {
        // The weights e^(a - r) and e^(b - r) from a - b alone: r = ln(e^a + e^b) keeps none of
        // a's low bits at large magnitudes (a - r at a = -1e7 is off by an ulp of 1e7, 1).
        const VarId diff = same(OpCode::Sub, arg(0), {arg(1)});
        acc(a[0], mul(g, same(OpCode::InvLogit, diff)));
        acc(a[1], mul(g, same(OpCode::InvLogit, same(OpCode::Neg, diff))));
        return;
      }
      case OpCode::Dot:
        if (active_[a[0]]) acc(a[0], mul(arg(1), g));
        if (active_[a[1]]) acc(a[1], mul(arg(0), g));
        return;
      case OpCode::Sum:
        acc(a[0], g);
        return;
      case OpCode::ReduceMax:
      case OpCode::ReduceMin: {  // shared evenly by the elements equal to the result
        const VarId v = arg(0);
        const VarId at = op(OpCode::ToFloat, type(v),
                            {op(OpCode::Eq, with_leaf(type(v), Types::kBool), {v, res()})});
        const VarId share =
            op(OpCode::Div, Types::kFloat, {g, op(OpCode::Sum, Types::kFloat, {at})});
        acc(a[0], mul(at, share));
        return;
      }
      case OpCode::ReduceLogSumExp: {
        // softmax from v - max(v), which is exact, not from v - r: r keeps none of v's low bits
        // at large magnitudes (as for the two-argument form).
        const VarId v = arg(0);
        const VarId e =
            same(OpCode::Exp, same(OpCode::Sub, v, {op(OpCode::ReduceMax, Types::kFloat, {v})}));
        acc(a[0], mul(e, op(OpCode::Div, Types::kFloat, {g, op(OpCode::Sum, Types::kFloat, {e})})));
        return;
      }
      case OpCode::MatMul: {
        const TypeId ta = src_.vars[a[0]].type, tb = src_.vars[a[1]].type;
        const bool a_matrix = T_.is_array(T_[ta].elem), b_matrix = T_.is_array(T_[tb].elem);
        if (a_matrix && b_matrix) {  // A @ B: A' += G B^T, B' += A^T G
          if (active_[a[0]]) acc(a[0], op(OpCode::MatMul, ta, {g, transposed(arg(1))}));
          if (active_[a[1]]) acc(a[1], op(OpCode::MatMul, tb, {transposed(arg(0)), g}));
        } else if (a_matrix) {  // A @ v: A' += outer(g, v), v' += g @ A
          if (active_[a[0]]) acc(a[0], op(OpCode::Outer, ta, {g, arg(1)}));
          if (active_[a[1]]) acc(a[1], op(OpCode::MatMul, tb, {g, arg(0)}));
        } else {  // v @ A: v' += A @ g, A' += outer(v, g)
          if (active_[a[0]]) acc(a[0], op(OpCode::MatMul, ta, {arg(1), g}));
          if (active_[a[1]]) acc(a[1], op(OpCode::Outer, tb, {arg(0), g}));
        }
        return;
      }
      case OpCode::Outer: {  // a' += G @ b, b' += a @ G
        if (active_[a[0]]) acc(a[0], op(OpCode::MatMul, src_.vars[a[0]].type, {g, arg(1)}));
        if (active_[a[1]]) acc(a[1], op(OpCode::MatMul, src_.vars[a[1]].type, {arg(0), g}));
        return;
      }
      case OpCode::Transpose:
        acc(a[0], op(OpCode::Transpose, src_.vars[a[0]].type, {g}));
        return;
      case OpCode::Select: {
        const VarId c = val(a[0]);
        const VarId z = zeros(type(g));
        acc(a[1], op(OpCode::Select, type(g), {c, g, z}));
        acc(a[2], op(OpCode::Select, type(g), {c, z, g}));
        return;
      }
      case OpCode::Make: {
        const TypeId t = type(o.dst);
        for (size_t k = 0; k < a.size(); ++k) {
          if (!active_[a[k]]) continue;
          uint32_t offset = 0;
          if (T_.is_struct(t))
            offset = T_.struct_def(t).fields[k].offset;
          else
            offset = static_cast<uint32_t>(k) * T_.words(T_[t].elem);
          const VarId part = new_var("", src_.vars[a[k]].type);
          emit(OpCode::Get, part, {g}).path = {PathStep{false, offset, 0, 0}};
          acc(a[k], part);
        }
        return;
      }
      case OpCode::Get: {
        if (!active_[a[0]]) return;
        std::vector<VarId> idx;
        for (size_t k = 1; k < a.size(); ++k)
          idx.push_back(val(a[k]));
        const VarId into = bar_[a[0]];
        const VarId part = new_var("", type(o.dst));
        std::vector<VarId> get_args{into};
        get_args.insert(get_args.end(), idx.begin(), idx.end());
        emit(OpCode::Get, part, get_args).path = o.path;
        add_into(part, g);
        std::vector<VarId> set_args{into, part};
        set_args.insert(set_args.end(), idx.begin(), idx.end());
        emit(OpCode::Set, into, set_args).path = o.path;
        return;
      }
      case OpCode::Set: {  // d = a0 with [path] = a1
        std::vector<VarId> idx;
        for (size_t k = 2; k < a.size(); ++k)
          idx.push_back(val(a[k]));
        if (active_[a[1]]) {
          const VarId part = new_var("", src_.vars[a[1]].type);
          std::vector<VarId> get_args{g};
          get_args.insert(get_args.end(), idx.begin(), idx.end());
          emit(OpCode::Get, part, get_args).path = o.path;
          acc(a[1], part);
        }
        if (active_[a[0]]) {
          const VarId rest = new_var("", type(g));
          std::vector<VarId> set_args{g, zeros(src_.vars[a[1]].type)};
          set_args.insert(set_args.end(), idx.begin(), idx.end());
          emit(OpCode::Set, rest, set_args).path = o.path;
          acc(a[0], rest);
        }
        return;
      }
      case OpCode::Call: {
        std::vector<VarId> args;
        for (VarId x : a)
          args.push_back(val(x));
        args.push_back(g);
        const int vjp = vjp_of_(o.index);
        const Function& callee = P_.functions[o.index];
        const TypeId adj_type = vjp_result_type(o.index);
        const VarId adj = new_var("", adj_type);
        emit(OpCode::Call, adj, args).index = vjp;
        const StructDef& def = T_.struct_def(adj_type);
        size_t field_k = 0;
        for (size_t k = 0; k < a.size(); ++k) {
          if (!has_float(T_, callee.vars[callee.params[k]].type)) continue;
          const Field& f = def.fields[field_k++];
          if (active_[a[k]]) acc(a[k], field(adj, f));
        }
        return;
      }
      default:
        return;  // no derivative (integers, comparisons, floor, ceil, constants, uniforms)
    }
  }

  // transpose(m) of a float matrix.
  VarId transposed(VarId m) {
    const TypeId t = type(m);
    const uint32_t rows = T_[t].count, cols = T_[T_[t].elem].count;
    return op(OpCode::Transpose, T_.array(T_.array(Types::kFloat, rows), cols), {m});
  }

  TypeId with_leaf(TypeId t, TypeId scalar) {
    if (!T_.is_array(t)) return scalar;
    return T_.array(with_leaf(T_[t].elem, scalar), T_[t].count);
  }

 public:
  // The struct g.vjp returns: one field per float-carrying parameter, named after it.
  TypeId vjp_result_type(int g) {
    const Function& callee = P_.functions[g];
    const std::string name = callee.name + ".vjp";
    const TypeId found = T_.find_struct(name);
    if (found >= 0) return found;
    std::vector<Field> fields;
    for (VarId p : callee.params)
      if (has_float(T_, callee.vars[p].type))
        fields.push_back(Field{callee.vars[p].name, callee.vars[p].type, 0, {}});
    if (fields.empty()) fields.push_back(Field{"none", Types::kFloat, 0, {}});
    return *T_.add_struct(name, std::move(fields));  // not found above: cannot clash
  }

 private:
  // ---- restoring what the adjoints read ----
  void plan_restores() {
    // Values computed again instead of saved: variables whose every write is the same constant,
    // and a uniform read written once and read only later in its own block, its indices unchanged
    // in between.
    const size_t nv = src_.vars.size();
    std::vector<const Op*> first_def(nv, nullptr);
    std::vector<bool> all_const(nv, true);
    std::vector<Pos> def_pos(nv);
    for (int b = 0; b < nb_; ++b)
      for (size_t i = 0; i < src_.blocks[b].ops.size(); ++i) {
        const Op& o = src_.blocks[b].ops[i];
        if (o.dst < 0) continue;
        if (!first_def[o.dst]) {
          first_def[o.dst] = &o;
          def_pos[o.dst] = Pos{b, static_cast<int>(i)};
        }
        if (o.code != OpCode::Const || o.imm != first_def[o.dst]->imm) all_const[o.dst] = false;
      }
    for (VarId p : src_.params)
      all_const[p] = false;
    for (VarId v : not_remat_)
      all_const[v] = false;
    for (size_t v = 0; v < nv; ++v) {
      if (!first_def[v] || active_[v]) continue;
      if (all_const[v]) {
        remat_[static_cast<VarId>(v)] = first_def[v];
        continue;
      }
      if (defs_[v] != 1 || first_def[v]->code != OpCode::UniformGet) continue;
      const Pos dp = def_pos[v];
      bool ok = true;
      int last = dp.op;
      for (const Read& r : reads_)
        if (r.var == static_cast<VarId>(v)) {
          ok = ok && r.pos.block == dp.block && r.pos.op > dp.op;
          last = std::max(last, r.pos.op);
        }
      const auto& ops = src_.blocks[dp.block].ops;
      for (VarId idx : first_def[v]->args)
        for (int i = dp.op + 1; ok && i <= last; ++i)
          ok = ops[i].dst != idx;
      if (ok) remat_[static_cast<VarId>(v)] = first_def[v];
    }
    // The reads of a recomputed value are reads of its operands.
    std::vector<Read> reads;
    for (const Read& r : reads_) {
      auto it = remat_.find(r.var);
      if (it == remat_.end()) {
        reads.push_back(r);
        continue;
      }
      for (VarId a : it->second->args)
        reads.push_back({a, r.pos, false});
    }
    restore_.assign(nb_, {});
    saved_.assign(nb_, {});
    for (int b = 0; b < nb_; ++b) {
      restore_[b].assign(src_.blocks[b].ops.size(), Restore::None);
      saved_[b].assign(src_.blocks[b].ops.size(), -1);
      for (size_t i = 0; i < src_.blocks[b].ops.size(); ++i) {
        const Op& o = src_.blocks[b].ops[i];
        if (o.dst < 0 || remat_.count(o.dst)) continue;
        const Pos here{b, static_cast<int>(i)};
        bool needed = false;
        for (const Read& r : reads)
          if (r.var == o.dst &&
              (precedes(r.pos, here) || (r.alias && r.pos.block == b && r.pos.op == here.op)))
            needed = true;
        if (!needed) continue;
        const bool invertible =
            (o.code == OpCode::Add || o.code == OpCode::Sub) && o.args[0] == o.dst &&
            o.args[1] != o.dst && remat_.count(o.args[1]) && all_const[o.args[1]] &&
            (src_.vars[o.dst].type == Types::kInt || src_.vars[o.dst].type == Types::kUInt);
        if (invertible) {
          restore_[b][i] = Restore::Invert;
        } else if (in_cycle(b)) {
          restore_[b][i] = Restore::Tape;
        } else {
          restore_[b][i] = Restore::Save;
          saved_[b][i] = new_var(src_.vars[o.dst].name + ".saved", src_.vars[o.dst].type);
        }
      }
    }
  }

  void restore(Pos at, Restore how) {
    if (how == Restore::None) return;
    const Op& o = src_.blocks[at.block].ops[at.op];
    switch (how) {
      case Restore::Save:
        emit(OpCode::Copy, o.dst, {saved_[at.block][at.op]});
        break;
      case Restore::Tape:
        emit(OpCode::Pop, -1, {o.dst});
        break;
      case Restore::Invert:
        emit(o.code == OpCode::Add ? OpCode::Sub : OpCode::Add, o.dst, {o.dst, val(o.args[1])});
        break;
      case Restore::None:
        break;
    }
  }

  // ---- the derived function's blocks ----
  void emit_all() {
    // Blocks: the forward sweep [0, nb), the reverse sweep's start, the reverse of each block,
    // the end; the branch chains of joins with more than two predecessors after those.
    D_.blocks.resize(nb_);
    const int rstart = nb_;
    rblock_.assign(nb_, -1);
    D_.blocks.emplace_back();
    for (int b = nb_; b-- > 0;) {
      if (in_pre_loop_[b] >= 0 && in_pre_loop_[b] != b) continue;  // passed in one step
      rblock_[b] = static_cast<int>(D_.blocks.size());
      D_.blocks.emplace_back();
    }
    const int rfinal = static_cast<int>(D_.blocks.size());
    D_.blocks.emplace_back();
    // Control variables.
    ctl_.assign(nb_, -1);
    for (int b = 0; b < nb_; ++b) {
      if (preds_[b].size() < 2 || pre_.count(b)) continue;
      ctl_[b] = new_var(counted_[b] ? fmt::format("b{}.iterations", b) : fmt::format("b{}.from", b),
                        Types::kInt);
      if (counted_[b] && !in_cycle(preds_[b][0]))
        ctl_saved_[b] = new_var(fmt::format("b{}.iterations.saved", b), Types::kInt);
    }
    VarId value_out = -1;
    if (vg_) value_out = new_var("value", Types::kFloat);

    // Forward sweep.
    for (int b = 0; b < nb_; ++b) {
      const Block& sb = src_.blocks[b];
      Block& db = D_.blocks[b];
      db.loc = sb.loc;
      cur_ = b;
      for (size_t i = 0; i < sb.ops.size(); ++i) {
        const Op& o = sb.ops[i];
        loc_ = o.loc;
        if (restore_[b][i] == Restore::Tape) emit(OpCode::Push, -1, {o.dst}).loc = loop_loc(b);
        if (restore_[b][i] == Restore::Save) emit(OpCode::Copy, saved_[b][i], {o.dst});
        D_.blocks[b].ops.push_back(o);
      }
      if (last_of_.count(b)) {
        loc_ = sb.loc;
        preaccumulate(pre_.at(last_of_.at(b)));
      }
      loc_ = sb.term.loc;
      for (int s : successors(sb.term)) {
        if (ctl_[s] < 0) continue;
        const VarId c = ctl_[s];
        if (counted_[s]) {
          if (preds_[s][0] == b) {  // entering the loop: keep the outer count
            if (in_cycle(b))
              emit(OpCode::Push, -1, {c}).loc = loop_loc(b);
            else
              emit(OpCode::Copy, ctl_saved_[s], {c});
            emit(OpCode::Copy, c, {iconst(0)});
          } else {
            emit(OpCode::Add, c, {c, iconst(1)});
          }
        } else {
          const auto k = std::find(preds_[s].begin(), preds_[s].end(), b) - preds_[s].begin();
          emit(OpCode::Copy, c, {iconst(static_cast<int32_t>(k))});
          if (in_cycle(s)) emit(OpCode::Push, -1, {c}).loc = loop_loc(s);
        }
      }
      D_.blocks[b].term = sb.term;
    }
    // The exit: keep the value, start the reverse sweep.
    cur_ = exit_;
    loc_ = src_.blocks[exit_].term.loc;
    if (vg_) emit(OpCode::Copy, value_out, {src_.result});
    D_.blocks[exit_].term = Terminator{};
    D_.blocks[exit_].term.kind = Terminator::Kind::Jump;
    D_.blocks[exit_].term.target = rstart;
    D_.blocks[exit_].term.loc = loc_;

    // Reverse start: adjoints zero, the seed on the result.
    cur_ = rstart;
    D_.blocks[rstart].loc = loc_;
    for (size_t v = 0; v < src_.vars.size(); ++v)
      if (bar_[v] >= 0) zero(bar_[v]);
    if (active_[src_.result]) {
      if (vg_)
        emit(OpCode::Copy, bar_[src_.result], {fconst(1.0f)});
      else
        emit(OpCode::Copy, bar_[src_.result], {seed_});
    }
    jump(rstart, rblock_[exit_]);

    // Reverse of each block.
    for (int b = nb_; b-- > 0;) {
      if (rblock_[b] < 0) continue;
      cur_ = rblock_[b];
      const Block& sb = src_.blocks[b];
      if (pre_.count(b)) {  // a preaccumulated loop: u.adj += acc.adj * u.partial
        const PreLoop& pre = pre_.at(b);
        D_.blocks[cur_].loc = sb.loc;
        loc_ = sb.loc;
        for (size_t k = 0; k < pre.inputs.size(); ++k)
          add_scaled_into(bar_[pre.inputs[k]], pre.partial[k], bar_[pre.acc]);
        jump(cur_, rblock_[pre.entry]);
        continue;
      }
      D_.blocks[cur_].loc = sb.loc;
      loc_ = sb.term.loc;
      // Undo what the forward block did on its way out.
      for (int s : successors(sb.term)) {
        if (ctl_[s] < 0 || !counted_[s]) continue;
        if (preds_[s][0] == b) {
          if (in_cycle(b))
            emit(OpCode::Pop, -1, {ctl_[s]});
          else
            emit(OpCode::Copy, ctl_[s], {ctl_saved_[s]});
        } else {
          emit(OpCode::Sub, ctl_[s], {ctl_[s], iconst(1)});
        }
      }
      for (int i = static_cast<int>(sb.ops.size()); i-- > 0;)
        adjoint(Pos{b, i});
      loc_ = sb.loc;
      if (b == 0) {
        jump(cur_, rfinal);
      } else if (preds_[b].size() == 1) {
        jump(cur_, rblock_[preds_[b][0]]);
      } else if (counted_[b]) {
        const VarId more = op(OpCode::Gt, Types::kBool, {ctl_[b], iconst(0)});
        branch(cur_, more, rblock_[preds_[b][1]], rblock_[preds_[b][0]]);
      } else {
        if (in_cycle(b)) emit(OpCode::Pop, -1, {ctl_[b]});
        const auto& ps = preds_[b];
        for (size_t k = 0; k + 1 < ps.size(); ++k) {
          const VarId is_k = op(OpCode::Eq, Types::kBool, {ctl_[b], iconst(static_cast<int>(k))});
          if (k + 2 == ps.size()) {
            branch(cur_, is_k, rblock_[ps[k]], rblock_[ps[k + 1]]);
          } else {
            const int next = static_cast<int>(D_.blocks.size());
            D_.blocks.emplace_back();
            D_.blocks[next].loc = sb.loc;
            branch(cur_, is_k, rblock_[ps[k]], next);
            cur_ = next;
          }
        }
      }
    }
    // The end: the value and the adjoints of the parameters.
    cur_ = rfinal;
    loc_ = src_.loc;
    D_.blocks[rfinal].loc = src_.loc;
    if (vg_) {
      const TypeId t = value_and_grad_type(T_, src_.vars[src_.params[0]].type);
      D_.result = new_var("result", t);
      emit(OpCode::Make, D_.result, {value_out, bar_[src_.params[0]]});
    } else {
      const TypeId t = vjp_result_type_of_src();
      D_.result = new_var("result", t);
      std::vector<VarId> parts;
      for (VarId p : src_.params)
        if (has_float(T_, src_.vars[p].type)) parts.push_back(bar_[p]);
      if (parts.empty()) parts.push_back(fconst(0.0f));
      emit(OpCode::Make, D_.result, parts);
    }
    D_.blocks[rfinal].term.kind = Terminator::Kind::Return;
    D_.blocks[rfinal].term.loc = loc_;
  }
  TypeId vjp_result_type_of_src() { return vjp_result_type(src_index_); }

  void jump(int from, int to) {
    Terminator& t = D_.blocks[from].term;
    t = Terminator{};
    t.kind = Terminator::Kind::Jump;
    t.target = to;
    t.loc = loc_;
  }
  void branch(int from, VarId cond, int yes, int no) {
    Terminator& t = D_.blocks[from].term;
    t = Terminator{};
    t.kind = Terminator::Kind::Branch;
    t.cond = cond;
    t.target = yes;
    t.target_else = no;
    t.loc = loc_;
  }

 public:
  int src_index_ = -1;

 private:
  Program& P_;
  Types& T_;
  Diagnostics& diags_;
  const std::function<int(int)>& vjp_of_;
  bool vg_ = true, ok_ = true, dry_ = false;
  Function src_, D_;
  int nb_ = 0, exit_ = -1, cur_ = -1;
  Pos pos_;
  SourceLoc loc_;
  VarId seed_ = -1, alias_dst_ = -1;
  std::vector<std::vector<int>> preds_;
  std::vector<std::vector<bool>> reach_, dom_;
  std::vector<bool> counted_, active_;
  std::vector<int> defs_;
  std::vector<VarId> bar_, ctl_;
  std::map<int, VarId> ctl_saved_;
  std::vector<int> rblock_;
  std::vector<Read> reads_;
  std::map<VarId, const Op*> remat_;
  std::vector<std::vector<Restore>> restore_;
  std::vector<std::vector<VarId>> saved_;
  std::vector<Op> scratch_;
  std::map<int, PreLoop> pre_;    // by header
  std::vector<int> in_pre_loop_;  // per block: the header of its preaccumulated loop, or -1
  std::set<VarId> not_remat_;
  std::map<int, int> last_of_;  // a preaccumulated loop's last body block -> its header
  std::vector<int> local_defs_;
  bool local_mode_ = false;
};

// Joins a block that jumps to a block with no other predecessor with that block: the derived
// function's forward and reverse sweeps of straight-line code become one block (one scheduler
// step), and so does a reverse loop's latch and body.
void merge_straight_chains(Function& fn) {
  const size_t n = fn.blocks.size();
  std::vector<int> preds(n, 0);
  for (const Block& b : fn.blocks)
    for (int s : successors(b.term))
      ++preds[s];
  std::vector<bool> dead(n, false);
  for (size_t b = 0; b < n; ++b) {
    if (dead[b]) continue;
    for (;;) {
      const Terminator& t = fn.blocks[b].term;
      if (t.kind != Terminator::Kind::Jump) break;
      const int c = t.target;
      if (c == 0 || c == static_cast<int>(b) || preds[c] != 1 || dead[c]) break;
      Block& into = fn.blocks[b];
      Block& from = fn.blocks[c];
      into.ops.insert(into.ops.end(), from.ops.begin(), from.ops.end());
      into.term = from.term;
      from.ops.clear();
      dead[c] = true;
    }
  }
  std::vector<int> index(n, -1);
  std::vector<Block> kept;
  for (size_t b = 0; b < n; ++b)
    if (!dead[b]) {
      index[b] = static_cast<int>(kept.size());
      kept.push_back(std::move(fn.blocks[b]));
    }
  for (Block& b : kept) {
    if (b.term.target >= 0) b.term.target = index[b.term.target];
    if (b.term.target_else >= 0) b.term.target_else = index[b.term.target_else];
  }
  fn.blocks = std::move(kept);
}

// Random draws and emits anywhere f can reach make its value something else than a function of
// its arguments: reported at their lines.
bool check_pure(const Program& p, int f, int first, Diagnostics& diags) {
  std::set<int> seen{f};
  std::vector<int> work{f};
  bool ok = true;
  while (!work.empty()) {
    const Function& fn = p.functions[work.back()];
    work.pop_back();
    for (const Block& b : fn.blocks)
      for (const Op& op : b.ops) {
        if (op.code == OpCode::RandUniform || op.code == OpCode::RandNormal) {
          diags.error(op.loc, fmt::format("cannot differentiate '{}': a random draw in '{}'",
                                          p.functions[f].name, fn.name));
          ok = false;
        } else if (op.code == OpCode::Emit) {
          diags.error(op.loc, fmt::format("cannot differentiate '{}': an emit in '{}'",
                                          p.functions[f].name, fn.name));
          ok = false;
        } else if (op.code == OpCode::Call && op.index >= first) {
          // The derived function's reverse sweep restores values with pops, which a second
          // reverse sweep would not undo: second derivatives are refused, not wrong.
          diags.error(op.loc, fmt::format("cannot differentiate '{}': '{}' takes a gradient, and "
                                          "second derivatives are not supported",
                                          p.functions[f].name, fn.name));
          ok = false;
        } else if (op.code == OpCode::Call && seen.insert(op.index).second) {
          work.push_back(op.index);
        }
      }
  }
  return ok;
}

}  // namespace

TypeId value_and_grad_type(Types& types, TypeId x) {
  const std::string name = "value_and_grad<" + types.to_string(x) + ">";
  const TypeId found = types.find_struct(name);
  if (found >= 0) return found;
  // Not found above, so the name is free.
  return *types.add_struct(name, {Field{"value", Types::kFloat, 0, {}}, Field{"grad", x, 0, {}}});
}

bool differentiate(Program& program, int first, const std::vector<DerivativeRequest>& requests,
                   Diagnostics& diags) {
  bool ok = true;
  for (const DerivativeRequest& r : requests)
    ok = check_pure(program, r.function, first, diags) && ok;
  if (!ok) return false;
  program.functions.resize(first + requests.size());
  std::map<int, int> vjp_index;
  std::vector<int> pending;
  std::function<int(int)> vjp_of = [&](int g) {
    auto it = vjp_index.find(g);
    if (it != vjp_index.end()) return it->second;
    const int index = static_cast<int>(program.functions.size());
    program.functions.emplace_back();
    program.functions.back().name = program.functions[g].name + ".vjp";
    vjp_index[g] = index;
    pending.push_back(g);
    return index;
  };
  // Builds f's derived function, again without a loop's preaccumulation when it does not fit.
  auto derive = [&](int f, bool vg, Function& out) {
    std::set<int> excluded;
    for (;;) {
      Deriver d(program, diags, vjp_of);
      d.src_index_ = f;
      d.no_preaccumulation = excluded;
      if (!vg) d.vjp_result_type(f);
      const bool built = d.build(f, vg, out);
      if (d.retry_header < 0) return built;
      excluded.insert(d.retry_header);
    }
  };
  for (size_t k = 0; k < requests.size(); ++k) {
    Function out;
    ok = derive(requests[k].function, true, out) && ok;
    program.functions[first + k] = std::move(out);
  }
  while (!pending.empty()) {
    const int g = pending.back();
    pending.pop_back();
    Function out;
    ok = derive(g, false, out) && ok;
    program.functions[vjp_index[g]] = std::move(out);
  }
  return ok;
}

}  // namespace ab
