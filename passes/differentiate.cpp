#include "passes/differentiate.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "passes/analysis/activity.h"
#include "passes/analysis/cfg_shape.h"
#include "passes/analysis/liveness.h"  // successors()
#include "passes/derivative_rules.h"
#include "passes/merge_blocks.h"  // merge_straight_chains

namespace ab {
namespace {

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

class Deriver : public AdjointEmitter {
 public:
  Deriver(Program& program, Diagnostics& diags, const std::function<int(int)>& vjp_of)
      : AdjointEmitter(program.types), P_(program), diags_(diags), vjp_of_(vjp_of) {}

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
    CfgShape cfg = cfg_shape(src_);
    preds_ = std::move(cfg.preds);
    reach_ = std::move(cfg.reach);
    dom_ = std::move(cfg.dom);
    counted_ = std::move(cfg.counted);
  }
  bool in_cycle(int b) const { return reach_[b][b]; }
  // The line of the innermost loop around block b (its header's), for a tape's pushes: a tape
  // that outgrows the stack depth faults there, naming the loop rather than a statement in it.
  SourceLoc loop_loc(int b) const {
    const int h = innermost_loop(preds_, dom_, b);
    return h >= 0 ? src_.blocks[h].loc : src_.blocks[b].loc;
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

  // Header h's loop body as a chain of blocks and preaccumulated inner loops from the header
  // back to it, with what it writes; none when the body branches or leaves the loop.
  std::optional<PreLoop> loop_chain(int h, const std::vector<std::vector<int>>& loop_blocks) {
    const std::vector<int>& blocks = loop_blocks[h];
    const Terminator& ht = src_.blocks[h].term;
    if (ht.kind != Terminator::Kind::Branch) return std::nullopt;
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
        if (t.kind != Terminator::Kind::Jump || !in_loop(cur) || pre.chain.size() > blocks.size()) {
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
      return std::nullopt;
    return pre;
  }

  // Whether the body (`ops`, an inner loop where `unit` is set) updates the accumulator only by
  // `acc += e` / `acc -= e` and no adjoint reads a value the body writes again later; the inactive
  // operands read that way go in `snapshots` as (position, operand), read from a copy.
  bool body_preaccumulates(const PreLoop& pre, const std::vector<const Op*>& ops,
                           const std::vector<const PreLoop*>& unit,
                           std::set<std::pair<size_t, size_t>>& snapshots) {
    bool ok = true;
    // Operands without a derivative (an index, a data value) that the body writes again after
    // an adjoint reads them, by (position, operand): read through a copy taken just before.
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
    return ok;
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
      std::optional<PreLoop> found = loop_chain(h, loop_blocks);
      if (!found) continue;
      PreLoop pre = std::move(*found);
      bool ok = true;
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
      std::set<std::pair<size_t, size_t>> snapshots;
      if (!body_preaccumulates(pre, ops, unit, snapshots)) continue;
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
    Activity found = find_activity(src_, T_, vg_);
    active_ = std::move(found.active);
    defs_ = std::move(found.defs);
    for (const Block& b : src_.blocks)
      for (const Op& op : b.ops) {
        if (op.dst >= 0 && active_[op.dst] && array_of_struct(T_, src_.vars[op.dst].type))
          fail(op.loc, "arrays of structs holding floats are not differentiated");
        if (op_info(op.code).derivative == Derivative::Missing && differentiated(op))
          fail(op.loc, fmt::format("'{}' has no derivative: it cannot be differentiated",
                                   op_info(op.code).builtin));
      }
    return ok_;
  }

  bool differentiated(const Op& op) const {
    return op.dst >= 0 && active_[op.dst] && carries_activity(op, active_);
  }

  void fail(SourceLoc loc, const std::string& what) {
    diags_.error(loc, fmt::format("cannot differentiate '{}': {}", src_.name, what));
    ok_ = false;
  }

  // ---- the hooks of the adjoint emission (passes/derivative_rules.h) ----
  bool active(VarId v) const override { return active_[v]; }
  VarId adjoint_of(VarId v) const override { return bar_[v]; }
  TypeId source_type(VarId v) const override { return src_.vars[v].type; }
  const Function& callee(int f) const override { return P_.functions[f]; }
  int vjp_of(int f) override { return vjp_of_(f); }
  VarId result_value(const Op& o, VarId r) override {
    if (dry_) result_read(o.dst);
    return r;
  }

  // A primal value the reverse sweep reads: recorded in the dry pass; a constant or a uniform
  // read is computed again into a fresh variable.
  VarId val(VarId v) override {
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
    current_ops().push_back(std::move(copy));
    return d;
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
    if (in_place_rule(o, g0)) {
      restore(at, how);
      return;
    }
    const bool alias = std::find(o.args.begin(), o.args.end(), d) != o.args.end();
    VarId g = g0, r = d;
    if (alias) {
      alias_dst_ = d;
      r = dry_ ? d : copy_of(d);
      if (dry_) reads_.push_back({d, at, false});
      g = copy_of(g0);
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

 public:
  // The struct g.vjp returns: one field per float-carrying parameter, named after it.
  TypeId vjp_result_type(int g) override {
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
  // The derived function's blocks: the forward sweep [0, nb), the reverse sweep's start, the
  // reverse of each block, the end; the branch chains of joins with more than two predecessors
  // after those.
  struct Sweep {
    int rstart = -1, rfinal = -1;
    VarId value_out = -1;
  };
  void emit_all() {
    Sweep sw;
    D_.blocks.resize(nb_);
    sw.rstart = nb_;
    rblock_.assign(nb_, -1);
    D_.blocks.emplace_back();
    for (int b = nb_; b-- > 0;) {
      if (in_pre_loop_[b] >= 0 && in_pre_loop_[b] != b) continue;  // passed in one step
      rblock_[b] = static_cast<int>(D_.blocks.size());
      D_.blocks.emplace_back();
    }
    sw.rfinal = static_cast<int>(D_.blocks.size());
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
    if (vg_) sw.value_out = new_var("value", Types::kFloat);

    for (int b = 0; b < nb_; ++b)
      forward_block(b);
    // The exit: keep the value, start the reverse sweep.
    cur_ = exit_;
    loc_ = src_.blocks[exit_].term.loc;
    if (vg_) emit(OpCode::Copy, sw.value_out, {src_.result});
    D_.blocks[exit_].term = Terminator{};
    D_.blocks[exit_].term.kind = Terminator::Kind::Jump;
    D_.blocks[exit_].term.target = sw.rstart;
    D_.blocks[exit_].term.loc = loc_;

    // Reverse start: adjoints zero, the seed on the result.
    cur_ = sw.rstart;
    D_.blocks[sw.rstart].loc = loc_;
    for (size_t v = 0; v < src_.vars.size(); ++v)
      if (bar_[v] >= 0) zero(bar_[v]);
    if (active_[src_.result]) {
      if (vg_)
        emit(OpCode::Copy, bar_[src_.result], {fconst(1.0f)});
      else
        emit(OpCode::Copy, bar_[src_.result], {seed_});
    }
    jump(sw.rstart, rblock_[exit_]);

    for (int b = nb_; b-- > 0;)
      if (rblock_[b] >= 0) reverse_block(b, sw);
    emit_end(sw);
  }

  // Block b as it was, with the tape pushes and saves its values need and the control
  // variables' updates on its way out.
  void forward_block(int b) {
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

  // The reverse of block b: its ops' adjoints in reverse order, then back to its predecessor.
  void reverse_block(int b, const Sweep& sw) {
    cur_ = rblock_[b];
    const Block& sb = src_.blocks[b];
    if (pre_.count(b)) {  // a preaccumulated loop: u.adj += acc.adj * u.partial
      const PreLoop& pre = pre_.at(b);
      D_.blocks[cur_].loc = sb.loc;
      loc_ = sb.loc;
      for (size_t k = 0; k < pre.inputs.size(); ++k)
        add_scaled_into(bar_[pre.inputs[k]], pre.partial[k], bar_[pre.acc]);
      jump(cur_, rblock_[pre.entry]);
      return;
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
    reverse_exit(b, sb, sw.rfinal);
  }

  // The end of block b's reverse: on to the reverse of the predecessor it was entered from.
  void reverse_exit(int b, const Block& sb, int rfinal) {
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
  void emit_end(const Sweep& sw) {
    cur_ = sw.rfinal;
    loc_ = src_.loc;
    D_.blocks[sw.rfinal].loc = src_.loc;
    if (vg_) {
      const TypeId t = value_and_grad_type(T_, src_.vars[src_.params[0]].type);
      D_.result = new_var("result", t);
      emit(OpCode::Make, D_.result, {sw.value_out, bar_[src_.params[0]]});
    } else {
      const TypeId t = vjp_result_type_of_src();
      D_.result = new_var("result", t);
      std::vector<VarId> parts;
      for (VarId p : src_.params)
        if (has_float(T_, src_.vars[p].type)) parts.push_back(bar_[p]);
      if (parts.empty()) parts.push_back(fconst(0.0f));
      emit(OpCode::Make, D_.result, parts);
    }
    D_.blocks[sw.rfinal].term.kind = Terminator::Kind::Return;
    D_.blocks[sw.rfinal].term.loc = loc_;
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
  Diagnostics& diags_;
  const std::function<int(int)>& vjp_of_;
  bool vg_ = true, ok_ = true, dry_ = false;
  Function src_;
  int nb_ = 0, exit_ = -1;
  Pos pos_;
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
  std::map<int, PreLoop> pre_;    // by header
  std::vector<int> in_pre_loop_;  // per block: the header of its preaccumulated loop, or -1
  std::set<VarId> not_remat_;
  std::map<int, int> last_of_;  // a preaccumulated loop's last body block -> its header
  std::vector<int> local_defs_;
  bool local_mode_ = false;
};

// Random draws and emits anywhere f can reach make its value something else than a function of
// its arguments: reported at their lines. Code without lines of its own (the random draws'
// library, lang/distributions.h) is reported once, at the call that reached it.
bool check_pure(const Program& p, int f, int first, Diagnostics& diags) {
  struct Reached {
    int function;
    SourceLoc site;  // the last call with a line on the way from f
    int site_function;
  };
  std::set<int> seen{f};
  std::vector<Reached> work{{f, SourceLoc{}, f}};
  std::set<std::pair<int, int>> reported;
  bool ok = true;
  while (!work.empty()) {
    const Reached at = work.back();
    const Function& fn = p.functions[at.function];
    work.pop_back();
    auto report = [&](const Op& op, const std::string& what) {
      const bool has_line = op.loc.line != 0;
      const SourceLoc loc = has_line ? op.loc : at.site;
      const int in = has_line ? at.function : at.site_function;
      if (reported.insert({loc.line, loc.col}).second)
        diags.error(loc, fmt::format("cannot differentiate '{}': {} in '{}'", p.functions[f].name,
                                     what, p.functions[in].name));
      ok = false;
    };
    for (const Block& b : fn.blocks)
      for (const Op& op : b.ops) {
        if (is_random(op)) {
          report(op, "a random draw");
        } else if (is_emit(op)) {
          report(op, "an emit");
        } else if (is_call(op) && op.index >= first) {
          // The derived function's reverse sweep restores values with pops, which a second
          // reverse sweep would not undo: second derivatives are refused, not wrong.
          diags.error(op.loc, fmt::format("cannot differentiate '{}': '{}' takes a gradient, and "
                                          "second derivatives are not supported",
                                          p.functions[f].name, fn.name));
          ok = false;
        } else if (is_call(op) && seen.insert(op.index).second) {
          const bool has_line = op.loc.line != 0;
          work.push_back(
              {op.index, has_line ? op.loc : at.site, has_line ? at.function : at.site_function});
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
