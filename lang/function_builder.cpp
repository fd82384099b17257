#include "lang/function_builder.h"

#include <fmt/format.h>

#include <algorithm>

#include "lang/builder_state.h"
#include "lang/operators.h"

namespace ab::frontend {

void build_function(Globals& globals, const ast::FnDecl& decl, int index, Program& program,
                    Diagnostics& diags) {
  FunctionBuilder(globals, decl, index, program, diags).build();
}

FunctionBuilder::FunctionBuilder(Globals& globals, const ast::FnDecl& decl, int index,
                                 Program& program, Diagnostics& diags)
    : globals_(globals),
      decl_(decl),
      program_(program),
      fn_(program.functions.at(index)),
      diags_(diags),
      sig_(globals.signature(index)) {}

// ---- emission helpers ---------------------------------------------------------------------------

std::string FunctionBuilder::unique_name(const std::string& name) {
  std::string candidate = name;
  for (int n = 1; used_names_.count(candidate); ++n)
    candidate = fmt::format("{}.{}", name, n);
  used_names_.insert(candidate);
  return candidate;
}

VarId FunctionBuilder::new_var(std::string name, TypeId type, bool temp) {
  // A variable whose type failed to resolve still needs some type; the program is discarded.
  fn_.vars.push_back(Var{temp ? std::string() : unique_name(name),
                         type == kPoison || type == Types::kVoid ? Types::kInt : type});
  is_temp_.push_back(temp);
  return static_cast<VarId>(fn_.vars.size() - 1);
}

void FunctionBuilder::rename_to_local(VarId v, const std::string& name) {
  fn_.vars[v].name = unique_name(name);
  is_temp_[v] = false;
}

void FunctionBuilder::ensure_open() {
  // Code after return/break/continue lands in a fresh block nothing jumps to; it is still
  // checked, then removed with the other unreachable blocks.
  if (!open_) switch_to(new_block(SourceLoc{}));
}

Op& FunctionBuilder::emit(OpCode code, VarId dst, std::vector<VarId> args, SourceLoc loc) {
  ensure_open();
  Op op;
  op.code = code;
  op.dst = dst;
  op.args = std::move(args);
  op.loc = loc;
  Block& b = fn_.blocks[current_];
  b.ops.push_back(std::move(op));
  return b.ops.back();
}

Value FunctionBuilder::op_value(OpCode code, TypeId type, std::vector<VarId> args, SourceLoc loc) {
  const VarId t = temp(type);
  emit(code, t, std::move(args), loc);
  return Value{t, type, true, true};
}

Value FunctionBuilder::constant(TypeId type, std::vector<uint32_t> words, SourceLoc loc) {
  const VarId t = temp(type);
  emit(OpCode::Const, t, {}, loc).imm = std::move(words);
  return Value{t, type, true, true};
}

void FunctionBuilder::copy(VarId target, VarId source, SourceLoc loc) {
  emit(OpCode::Copy, target, {source}, loc);
}

Value FunctionBuilder::make(TypeId type, std::vector<VarId> parts, SourceLoc loc) {
  return op_value(OpCode::Make, type, std::move(parts), loc);
}

Value FunctionBuilder::get(TypeId type, VarId base, const std::vector<VarId>& indices,
                           std::vector<PathStep> path, SourceLoc loc) {
  std::vector<VarId> args = {base};
  args.insert(args.end(), indices.begin(), indices.end());
  Value v = op_value(OpCode::Get, type, std::move(args), loc);
  fn_.blocks[current_].ops.back().path = std::move(path);
  return v;
}

Value FunctionBuilder::uniform_get(int u, TypeId type, std::vector<VarId> indices,
                                   std::vector<PathStep> path, SourceLoc loc) {
  Value v = op_value(OpCode::UniformGet, type, std::move(indices), loc);
  Op& op = fn_.blocks[current_].ops.back();
  op.index = u;
  op.path = std::move(path);
  return v;
}

void FunctionBuilder::store(const Value& v, VarId target, SourceLoc loc) {
  if (v.var == target) return;
  if (open_ && v.fresh && v.single) {
    Block& b = fn_.blocks[current_];
    if (!b.ops.empty() && b.ops.back().dst == v.var) {
      b.ops.back().dst = target;  // the temporary is now unused and dropped in finish()
      return;
    }
  }
  copy(target, v.var, loc);
}

int FunctionBuilder::new_block(SourceLoc loc, bool provisional) {
  Block b;
  b.loc = loc;
  fn_.blocks.push_back(std::move(b));
  provisional_loc_.push_back(provisional);
  return static_cast<int>(fn_.blocks.size() - 1);
}

void FunctionBuilder::switch_to(int block) {
  current_ = block;
  open_ = true;
}

void FunctionBuilder::terminate(Terminator term) {
  ensure_open();
  fn_.blocks[current_].term = term;
  open_ = false;
}

void FunctionBuilder::jump(int target, SourceLoc loc) {
  Terminator t;
  t.kind = Terminator::Kind::Jump;
  t.target = target;
  t.loc = loc;
  terminate(t);
}

ConstLookup FunctionBuilder::const_lookup() {
  return [this](const ast::Expr& n, Diagnostics* d) -> std::optional<ConstScalar> {
    if (find_local(n.name)) {
      if (d) d->error(n.loc, fmt::format("'{}' is a variable, not a constant", n.name));
      return std::nullopt;
    }
    return globals_.lookup_const(n, d);
  };
}

const FunctionBuilder::Local* FunctionBuilder::find_local(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return &found->second;
  }
  return nullptr;
}

void FunctionBuilder::declare_local(const std::string& name, SourceLoc loc, Local local) {
  auto [it, inserted] = scopes_.back().emplace(name, local);
  if (!inserted) {
    error(loc, fmt::format("'{}' is already declared in this scope", name));
    it->second = local;
  }
}

// ---- the function ---------------------------------------------------------------------------

void FunctionBuilder::build() {
  fn_.name = decl_.name;
  fn_.loc = decl_.loc;
  used_names_.insert("result");  // reserved for the output variable
  scopes_.emplace_back();
  for (size_t i = 0; i < decl_.params.size(); ++i) {
    const ast::Param& p = decl_.params[i];
    const VarId v = local(p.name, sig_.params[i]);
    fn_.params.push_back(v);
    declare_local(p.name, p.loc, Local{v, sig_.params[i], LocalKind::Param});
  }
  if (sig_.result != Types::kVoid) {
    fn_.vars.push_back(Var{"result", sig_.result == kPoison ? Types::kInt : sig_.result});
    is_temp_.push_back(false);
    fn_.result = static_cast<VarId>(fn_.vars.size() - 1);
  }
  switch_to(new_block(decl_.loc, false));
  block(decl_.body);
  if (open_) {
    end_block_ = current_;
    Terminator t;
    t.kind = Terminator::Kind::Return;
    t.loc = decl_.body.end_loc;
    terminate(t);
  }
  finish();
}

void FunctionBuilder::finish() {
  // Reachable blocks, in their original order.
  std::vector<Block>& blocks = fn_.blocks;
  std::vector<int> new_index(blocks.size(), -1);
  std::vector<int> work = {0};
  std::vector<bool> seen(blocks.size(), false);
  seen[0] = true;
  while (!work.empty()) {
    const int b = work.back();
    work.pop_back();
    const Terminator& t = blocks[b].term;
    for (int next : {t.target, t.target_else}) {
      if (t.kind == Terminator::Kind::Return) break;
      if (next >= 0 && !seen[next]) {
        seen[next] = true;
        work.push_back(next);
      }
    }
  }
  if (end_block_ >= 0 && seen[end_block_] && fn_.result >= 0)
    error(decl_.body.end_loc,
          fmt::format("function '{}' can reach its end without returning a value", fn_.name));

  std::vector<Block> kept;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (!seen[b]) continue;
    new_index[b] = static_cast<int>(kept.size());
    kept.push_back(std::move(blocks[b]));
  }
  for (Block& b : kept) {
    if (b.term.target >= 0) b.term.target = new_index[b.term.target];
    if (b.term.target_else >= 0) b.term.target_else = new_index[b.term.target_else];
  }
  blocks = std::move(kept);

  // Drop variables nothing refers to (temporaries bypassed by store(), locals only used in
  // removed blocks), then name the temporaries t0, t1, ... in order.
  std::vector<bool> used(fn_.vars.size(), false);
  for (VarId p : fn_.params)
    used[p] = true;
  if (fn_.result >= 0) used[fn_.result] = true;
  for (const Block& b : blocks) {
    for (const Op& op : b.ops) {
      if (op.dst >= 0) used[op.dst] = true;
      for (VarId a : op.args)
        used[a] = true;
    }
    if (b.term.cond >= 0) used[b.term.cond] = true;
  }
  std::vector<VarId> remap(fn_.vars.size(), -1);
  std::vector<Var> vars;
  std::vector<bool> temps;
  for (size_t v = 0; v < fn_.vars.size(); ++v) {
    if (!used[v]) continue;
    remap[v] = static_cast<VarId>(vars.size());
    vars.push_back(std::move(fn_.vars[v]));
    temps.push_back(is_temp_[v]);
  }
  for (VarId& p : fn_.params)
    p = remap[p];
  if (fn_.result >= 0) fn_.result = remap[fn_.result];
  for (Block& b : blocks) {
    for (Op& op : b.ops) {
      if (op.dst >= 0) op.dst = remap[op.dst];
      for (VarId& a : op.args)
        a = remap[a];
    }
    if (b.term.cond >= 0) b.term.cond = remap[b.term.cond];
  }
  std::set<std::string> names;
  for (size_t v = 0; v < vars.size(); ++v)
    if (!temps[v]) names.insert(vars[v].name);
  int next_temp = 0;
  for (size_t v = 0; v < vars.size(); ++v) {
    if (!temps[v]) continue;
    std::string name;
    do
      name = fmt::format("t{}", next_temp++);
    while (names.count(name));
    vars[v].name = name;
    vars[v].temporary = true;
  }
  fn_.vars = std::move(vars);
}

// ---- statements -----------------------------------------------------------------------------

void FunctionBuilder::block(const ast::Block& b) {
  scopes_.emplace_back();
  for (const ast::StmtPtr& s : b.stmts)
    statement(*s);
  scopes_.pop_back();
}

void FunctionBuilder::statement(const ast::Stmt& s) {
  // A block made without knowing what comes first takes the location of its first statement.
  if (open_ && provisional_loc_[current_] && fn_.blocks[current_].ops.empty()) {
    fn_.blocks[current_].loc = s.loc;
    provisional_loc_[current_] = false;
  }
  switch (s.kind) {
    case ast::StmtKind::Let:
    case ast::StmtKind::Var:
      return declaration(s);
    case ast::StmtKind::Assign:
      return assignment(s);
    case ast::StmtKind::If:
      return if_statement(s);
    case ast::StmtKind::While:
      return while_statement(s);
    case ast::StmtKind::For:
      return for_statement(s);
    case ast::StmtKind::Return:
      return return_statement(s);
    case ast::StmtKind::Break:
    case ast::StmtKind::Continue: {
      const bool is_break = s.kind == ast::StmtKind::Break;
      if (loops_.empty()) {
        error(s.loc, fmt::format("'{}' outside of a loop", is_break ? "break" : "continue"));
        return;
      }
      jump(is_break ? loops_.back().break_block : loops_.back().continue_block, s.loc);
      return;
    }
    case ast::StmtKind::Assert: {
      const VarId c = condition(*s.expr, "assert");
      emit(OpCode::Assert, -1, {c}, s.loc);
      return;
    }
    case ast::StmtKind::Expr:
      if (s.expr->kind != ast::ExprKind::Call) {
        error(s.expr->loc, "only calls can be used as statements");
        return;
      }
      expr(*s.expr, kPoison, /*allow_void=*/true);
      return;
    case ast::StmtKind::Block:
      return block(*s.body);
  }
}

void FunctionBuilder::declaration(const ast::Stmt& s) {
  TypeId declared = kPoison;
  bool type_ok = true;
  if (s.type) {
    auto t = globals_.resolve_type(*s.type);
    type_ok = t.has_value();
    if (t) declared = *t;
  }
  Value v;
  if (s.expr) {
    v = expr(*s.expr, declared);
    if (v.ok() && declared != kPoison && v.type != declared) {
      error(s.expr->loc,
            fmt::format("expected '{}', found '{}'", type_name(declared), type_name(v.type)));
      v = Value{};
    }
  } else if (declared != kPoison) {
    v = constant(declared, std::vector<uint32_t>(types().words(declared), 0u), s.loc);
  }
  const TypeId type = !type_ok ? kPoison : declared != kPoison ? declared : v.type;
  VarId var;
  if (v.ok() && v.fresh) {
    var = v.var;
    rename_to_local(var, s.name);
  } else {
    var = local(s.name, type);
    if (v.ok()) emit(OpCode::Copy, var, {v.var}, s.loc);
  }
  declare_local(s.name, s.name_loc,
                Local{var, v.ok() ? type : kPoison,
                      s.kind == ast::StmtKind::Let ? LocalKind::Let : LocalKind::Var});
}

void FunctionBuilder::assignment(const ast::Stmt& s) {
  std::optional<Place> p = place(*s.expr2);
  const Tok op = compound_operator(s.assign_op);
  if (!p) {
    expr(*s.expr, kPoison);  // still check the value
    return;
  }
  Value v = expr(*s.expr, p->type);
  if (!v.ok() || p->type == kPoison) return;
  if (op != Tok::End) {
    // x op= e  ==  x = x op e, with the place's indices evaluated once.
    Value current{p->root, p->type};
    if (!p->path.empty()) {
      std::vector<VarId> args = {p->root};
      args.insert(args.end(), p->indices.begin(), p->indices.end());
      current = op_value(OpCode::Get, p->type, args, s.op_loc);
      fn_.blocks[current_].ops.back().path = p->path;
    }
    const Expected<TypeId> result = binary_result_type(types(), op, p->type, v.type);
    if (!result) {
      error(s.op_loc, result.error());
      return;
    }
    if (*result != p->type) {
      error(s.op_loc,
            fmt::format("cannot assign '{}' to '{}'", type_name(*result), type_name(p->type)));
      return;
    }
    v = op_value(*binary_opcode(op), *result, {current.var, v.var}, s.op_loc);
  } else if (v.type != p->type) {
    error(s.expr->loc,
          fmt::format("cannot assign '{}' to '{}'", type_name(v.type), type_name(p->type)));
    return;
  }
  if (p->path.empty()) {
    store(v, p->root, s.op_loc);
    return;
  }
  std::vector<VarId> args = {p->root, v.var};
  args.insert(args.end(), p->indices.begin(), p->indices.end());
  emit(OpCode::Set, p->root, std::move(args), s.op_loc).path = p->path;
}

VarId FunctionBuilder::condition(const ast::Expr& e, const char* what) {
  Value c = expr(e, Types::kBool);
  if (c.ok() && c.type != Types::kBool) {
    error(e.loc, fmt::format("{} must be 'bool', found '{}'", what, type_name(c.type)));
    c = Value{};
  }
  if (!c.ok()) c = constant(Types::kBool, {0u}, e.loc);  // keeps the CFG well formed
  return c.var;
}

// An if statement with its `else if` arms. The chain is walked in a loop, not by recursion, so
// that a long one cannot exhaust the stack; the blocks come out as the nested form
// `if a {} else { if b {} else {} }` would give them: each arm branches to the next arm's test,
// and each arm's join block jumps on to the join of the arm before it.
void FunctionBuilder::if_statement(const ast::Stmt& s) {
  struct Arm {
    SourceLoc loc;  // the arm's `if`
    const ast::Expr* condition;
    const ast::Block* body;
  };
  std::vector<Arm> arms{{s.loc, s.expr.get(), s.body.get()}};
  for (const ast::ElseIf& arm : s.else_ifs)
    arms.push_back({arm.loc, arm.condition.get(), arm.body.get()});

  // What an arm still has to do once the arms after it are built.
  struct Pending {
    int join;
    SourceLoc loc;
    std::optional<SourceLoc> else_loc;  // where its else part starts, if it has one
  };
  std::vector<Pending> pending;
  for (size_t k = 0; k < arms.size(); ++k) {
    const Arm& arm = arms[k];
    const bool last = k + 1 == arms.size();
    std::optional<SourceLoc> else_loc;
    if (!last)
      else_loc = arms[k + 1].loc;
    else if (s.else_body)
      else_loc = s.else_body->loc;

    const VarId c = condition(*arm.condition, "condition");
    const int then_block = new_block(arm.body->loc);
    const int else_block = else_loc ? new_block(*else_loc) : -1;
    int join = else_block < 0 ? new_block(arm.loc) : -1;
    Terminator branch;
    branch.kind = Terminator::Kind::Branch;
    branch.cond = c;
    branch.target = then_block;
    branch.target_else = else_block >= 0 ? else_block : join;
    branch.loc = arm.condition->loc;
    terminate(branch);

    switch_to(then_block);
    block(*arm.body);
    if (open_) {
      if (join < 0) join = new_block(arm.loc);
      jump(join, arm.body->end_loc);
    }
    pending.push_back({join, arm.loc, else_loc});
    if (else_block < 0) break;
    switch_to(else_block);
    provisional_loc_[else_block] = false;  // its location is the else part's own
    if (last) block(*s.else_body);
  }
  // Innermost first, as the nested form's arms would finish.
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
    if (it->else_loc && open_) {
      if (it->join < 0) it->join = new_block(it->loc);
      jump(it->join, *it->else_loc);
    }
    if (it->join >= 0) switch_to(it->join);  // else both parts left: what follows is unreachable
  }
}

void FunctionBuilder::while_statement(const ast::Stmt& s) {
  const int header = new_block(s.expr->loc, false);
  jump(header, s.loc);
  switch_to(header);
  const int body = new_block(s.body->loc);
  const int exit = new_block(s.loc);
  // `while true` jumps straight into its body, so the code after it is reachable only by break.
  auto folded = fold(*s.expr, Types::kBool);
  if (folded && folded->type == Types::kBool && folded->bits == 1) {
    jump(body, s.expr->loc);
  } else {
    Terminator branch;
    branch.kind = Terminator::Kind::Branch;
    branch.cond = condition(*s.expr, "condition");
    branch.target = body;
    branch.target_else = exit;
    branch.loc = s.expr->loc;
    terminate(branch);
  }
  loops_.push_back(Loop{header, exit});
  switch_to(body);
  block(*s.body);
  if (open_) jump(header, s.body->end_loc);
  loops_.pop_back();
  switch_to(exit);
}

void FunctionBuilder::for_statement(const ast::Stmt& s) {
  Value lo, hi;
  if (is_flexible_literal(*s.expr) && !is_flexible_literal(*s.expr2)) {
    hi = expr(*s.expr2, kPoison);
    lo = expr(*s.expr, hi.type);
  } else {
    lo = expr(*s.expr, kPoison);
    hi = expr(*s.expr2, lo.type);
  }
  TypeId type = kPoison;
  if (lo.ok() && hi.ok()) {
    if (lo.type != Types::kInt && lo.type != Types::kUInt) {
      error(s.expr->loc,
            fmt::format("range bounds must be 'int' or 'uint', found '{}'", type_name(lo.type)));
    } else if (hi.type != lo.type) {
      error(s.expr2->loc, fmt::format("range bounds must have the same type, found '{}' and '{}'",
                                      type_name(lo.type), type_name(hi.type)));
    } else {
      type = lo.type;
    }
  }
  const SourceLoc loc = s.loc;
  VarId index = -1, bound = -1;
  if (type != kPoison) {
    // The bound is evaluated once: keep it in a hidden temporary the body cannot change.
    bound = hi.fresh ? hi.var : temp(type);
    if (!hi.fresh) emit(OpCode::Copy, bound, {hi.var}, loc);
    index = local(s.name, type);
    emit(OpCode::Copy, index, {lo.var}, loc);
  }
  const int header = new_block(loc, false);
  const int body = new_block(s.body->loc);
  const int latch = new_block(loc, false);
  const int exit = new_block(loc);
  jump(header, loc);
  switch_to(header);
  if (type != kPoison) {
    Terminator branch;
    branch.kind = Terminator::Kind::Branch;
    branch.cond = op_value(OpCode::Lt, Types::kBool, {index, bound}, loc).var;
    branch.target = body;
    branch.target_else = exit;
    branch.loc = loc;
    terminate(branch);
  } else {
    jump(body, loc);
  }
  loops_.push_back(Loop{latch, exit});
  scopes_.emplace_back();
  declare_local(s.name, s.name_loc, Local{index, type, LocalKind::LoopIndex});
  switch_to(body);
  block(*s.body);
  if (open_) jump(latch, s.body->end_loc);
  scopes_.pop_back();
  loops_.pop_back();
  switch_to(latch);
  if (type != kPoison) {
    const Value one = constant(type, {1u}, loc);
    emit(OpCode::Add, index, {index, one.var}, loc);
  }
  jump(header, loc);
  switch_to(exit);
}

void FunctionBuilder::return_statement(const ast::Stmt& s) {
  if (s.expr) {
    if (fn_.result < 0) {
      error(s.expr->loc,
            fmt::format("function '{}' returns nothing, but 'return' has a value", fn_.name));
    } else {
      const Value v = expr(*s.expr, sig_.result);
      if (v.ok() && sig_.result != kPoison && v.type != sig_.result &&
          !decl_.transformed_data.empty())
        error(s.expr->loc,
              fmt::format("uniform '{}' is '{}', but its initializer is '{}'",
                          decl_.transformed_data, type_name(sig_.result), type_name(v.type)));
      else if (v.ok() && sig_.result != kPoison && v.type != sig_.result)
        error(s.expr->loc, decl_.bound_of.empty()
                               ? fmt::format("function '{}' returns '{}', found '{}'", fn_.name,
                                             type_name(sig_.result), type_name(v.type))
                               : fmt::format("{} must be a float, found '{}'", decl_.bound_of,
                                             type_name(v.type)));
      else if (v.ok())
        store(v, fn_.result, s.loc);
    }
  } else if (fn_.result >= 0) {
    error(s.loc, fmt::format("'return' needs a value: function '{}' returns '{}'", fn_.name,
                             type_name(sig_.result)));
  }
  Terminator t;
  t.kind = Terminator::Kind::Return;
  t.loc = s.loc;
  terminate(t);
}

}  // namespace ab::frontend
