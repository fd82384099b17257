// The IR verifier. One `OpChecker` holds what an op may refer to (variables and their types,
// functions, uniforms, blocks, which figure it is in) so the Figure 2 and Figure 4 forms share
// every per-op and per-terminator rule; each form then adds its own structural checks.
#include "ir/verify.h"

#include <fmt/format.h>

#include <set>

namespace ab {
namespace {

// The array dimensions (outermost first) and the leaf type of a type.
struct Shape {
  std::vector<uint32_t> dims;
  TypeId leaf = Types::kVoid;
};

Shape shape_of(const Types& types, TypeId t) {
  Shape s;
  while (types.is_array(t)) {
    s.dims.push_back(types[t].count);
    t = types[t].elem;
  }
  s.leaf = t;
  return s;
}

std::string shape_spelling(Scalar leaf, const std::vector<uint32_t>& dims) {
  std::string out = scalar_name(leaf);
  for (uint32_t d : dims)
    out += fmt::format("[{}]", d);
  return out;
}

bool is_path_op(OpCode c) {
  return c == OpCode::Get || c == OpCode::Set || c == OpCode::UniformGet;
}

class OpChecker {
 public:
  const Types* types = nullptr;
  std::vector<const std::string*> var_names;
  std::vector<TypeId> var_types;
  std::vector<Storage> storage;  // Figure 4 only
  const Program* program = nullptr;
  bool lowered = false;
  size_t block_count = 0;
  std::vector<std::string>* problems = nullptr;

  bool valid_type(TypeId t) const { return t >= 0 && static_cast<size_t>(t) < types->size(); }
  bool valid_var(VarId v) const {
    return v >= 0 && static_cast<size_t>(v) < var_types.size() && valid_type(var_types[v]);
  }
  bool valid_block(int32_t b) const { return b >= 0 && static_cast<size_t>(b) < block_count; }

  // "'x' (int)": how messages name a variable.
  std::string var(VarId v) const {
    return fmt::format("'{}' ({})", *var_names[v], types->to_string(var_types[v]));
  }
  TypeId type(VarId v) const { return var_types[v]; }

  void check_op(const Op& op, const std::string& where) {
    where_ = &where;
    if (static_cast<size_t>(op.code) >= static_cast<size_t>(OpCode::Count_)) {
      report(fmt::format("invalid opcode {}", static_cast<int>(op.code)));
      return;
    }
    const OpInfo& info = op_info(op.code);
    name_ = info.name;
    if (!check_indices(op)) return;

    // Fields that belong to other ops must be left empty.
    if (op.code != OpCode::Const && !op.imm.empty()) report("only 'const' has immediate words");
    if (!is_path_op(op.code) && !op.path.empty())
      report("only get, set and uniform_get have a path");
    if (op.code != OpCode::Assert && !op.message.empty()) report("only 'assert' has a message");
    if (op.code != OpCode::Call && op.code != OpCode::UniformGet && op.index != -1)
      report(fmt::format("only call and uniform_get have an index (found {})", op.index));

    if (op.code == OpCode::Call) {
      check_call(op);
      return;
    }
    if (info.has_dst && op.dst < 0) {
      report("has no destination");
      return;
    }
    if (!info.has_dst && op.dst >= 0)
      report(fmt::format("defines nothing but has destination {}", var(op.dst)));
    if (info.arity >= 0 && op.args.size() != static_cast<size_t>(info.arity)) {
      report(fmt::format("takes {} operand{}, has {}", info.arity, info.arity == 1 ? "" : "s",
                         op.args.size()));
      return;
    }

    switch (info.cls) {
      case OpClass::Structural:
        check_structural(op);
        break;
      case OpClass::Unary:
      case OpClass::Binary:
      case OpClass::Ternary:
        check_elementwise(op);
        break;
      case OpClass::Reduction:
        check_reduction(op);
        break;
      case OpClass::Matrix:
        check_matrix(op);
        break;
      case OpClass::Random:
        if (type(op.dst) != Types::kFloat)
          report(fmt::format("destination {} must be float", var(op.dst)));
        break;
      case OpClass::Check:
        if (type(op.args[0]) != Types::kBool)
          report(fmt::format("condition {} must be a bool scalar", var(op.args[0])));
        break;
      case OpClass::Output:
        break;  // the value's type is checked against the program's emit type by the caller
      case OpClass::Stack:
        check_stack(op);
        break;
      case OpClass::Control:
        break;  // Call, handled above
    }
  }

  void check_terminator(const Terminator& t, const std::string& where) {
    where_ = &where;
    name_ = nullptr;
    auto check_target = [&](int32_t b, const char* what) {
      if (!valid_block(b))
        report(fmt::format("{} block {} is out of range ({} blocks)", what, b, block_count));
    };
    switch (t.kind) {
      case Terminator::Kind::Jump:
        check_target(t.target, "jump target");
        break;
      case Terminator::Kind::Branch:
        if (!valid_var(t.cond))
          report(fmt::format("branch condition variable {} is out of range", t.cond));
        else if (type(t.cond) != Types::kBool)
          report(fmt::format("branch condition {} must be a bool scalar", var(t.cond)));
        check_target(t.target, "branch true");
        check_target(t.target_else, "branch false");
        break;
      case Terminator::Kind::Return:
        break;
      case Terminator::Kind::PushJump:
        if (!lowered) {
          report("pushjump belongs to the lowered (Figure 4) form");
          break;
        }
        check_target(t.target, "pushjump callee");
        check_target(t.target_else, "pushjump return");
        break;
      case Terminator::Kind::TailJump:
        if (!lowered) {
          report("tailjump belongs to the lowered (Figure 4) form");
          break;
        }
        check_target(t.target, "tailjump callee");
        break;
      default:
        report(fmt::format("invalid terminator kind {}", static_cast<int>(t.kind)));
    }
  }

 private:
  const std::string* where_ = nullptr;
  const char* name_ = nullptr;  // the op being checked, for messages

  void report(const std::string& message) {
    problems->push_back(name_ ? fmt::format("{}{}: {}", *where_, name_, message)
                              : *where_ + message);
  }

  bool check_indices(const Op& op) {
    bool ok = true;
    for (size_t i = 0; i < op.args.size(); ++i) {
      if (valid_var(op.args[i])) continue;
      report(fmt::format("operand {} refers to variable {}, out of range ({} variables)", i,
                         op.args[i], var_types.size()));
      ok = false;
    }
    if (op.dst != -1 && !valid_var(op.dst)) {
      report(fmt::format("destination refers to variable {}, out of range ({} variables)", op.dst,
                         var_types.size()));
      ok = false;
    }
    return ok;
  }

  void check_call(const Op& op) {
    if (lowered || !program) {
      report("not allowed in the lowered form (it uses push, pop and pushjump)");
      return;
    }
    if (op.index < 0 || static_cast<size_t>(op.index) >= program->functions.size()) {
      report(fmt::format("callee function {} is out of range ({} functions)", op.index,
                         program->functions.size()));
      return;
    }
    const Function& callee = program->functions[op.index];
    const TypeId result =
        callee.result >= 0 && static_cast<size_t>(callee.result) < callee.vars.size()
            ? callee.vars[callee.result].type
            : Types::kVoid;
    if (op.dst < 0 && result != Types::kVoid)
      report(fmt::format("'{}' returns {}; the call needs a destination", callee.name,
                         types->to_string(result)));
    if (op.dst >= 0 && result == Types::kVoid)
      report(fmt::format("'{}' returns nothing but the call has destination {}", callee.name,
                         var(op.dst)));
    if (op.dst >= 0 && result != Types::kVoid && type(op.dst) != result)
      report(fmt::format("destination {} does not match the result type {} of '{}'", var(op.dst),
                         types->to_string(result), callee.name));
    if (op.args.size() != callee.params.size()) {
      report(fmt::format("'{}' takes {} argument{}, the call passes {}", callee.name,
                         callee.params.size(), callee.params.size() == 1 ? "" : "s",
                         op.args.size()));
      return;
    }
    for (size_t i = 0; i < op.args.size(); ++i) {
      const VarId p = callee.params[i];
      if (p < 0 || static_cast<size_t>(p) >= callee.vars.size()) continue;  // reported for callee
      if (type(op.args[i]) != callee.vars[p].type)
        report(fmt::format("argument {} {} does not match parameter '{}' of type {}", i,
                           var(op.args[i]), callee.vars[p].name,
                           types->to_string(callee.vars[p].type)));
    }
  }

  void check_structural(const Op& op) {
    switch (op.code) {
      case OpCode::Const:
        if (op.imm.size() != types->words(type(op.dst)))
          report(fmt::format("has {} immediate word{} but destination {} takes {}", op.imm.size(),
                             op.imm.size() == 1 ? "" : "s", var(op.dst),
                             types->words(type(op.dst))));
        break;
      case OpCode::Copy:
        if (type(op.args[0]) != type(op.dst))
          report(fmt::format("copies {} into {}: types differ", var(op.args[0]), var(op.dst)));
        break;
      case OpCode::Make: {
        uint64_t words = 0;
        for (VarId a : op.args)
          words += types->words(type(a));
        if (words != types->words(type(op.dst)))
          report(fmt::format("operands hold {} words but destination {} takes {}", words,
                             var(op.dst), types->words(type(op.dst))));
        break;
      }
      case OpCode::Get:
        if (op.args.empty()) {
          report("needs the aggregate as its first operand");
          break;
        }
        if (check_path(op, 1)) {
          check_path_bounds(op, types->words(type(op.args[0])), type(op.dst), var(op.args[0]));
        }
        break;
      case OpCode::Set:
        if (op.args.size() < 2) {
          report("needs the aggregate and the value as its first two operands");
          break;
        }
        if (type(op.args[0]) != type(op.dst))
          report(fmt::format("destination {} must have the aggregate's type, {}", var(op.dst),
                             types->to_string(type(op.args[0]))));
        if (check_path(op, 2))
          check_path_bounds(op, types->words(type(op.args[0])), type(op.args[1]), var(op.args[0]));
        break;
      case OpCode::UniformGet: {
        const size_t uniforms = program ? program->uniforms.size() : 0;
        if (op.index < 0 || static_cast<size_t>(op.index) >= uniforms) {
          report(fmt::format("uniform {} is out of range ({} uniforms)", op.index, uniforms));
          break;
        }
        const Uniform& u = program->uniforms[op.index];
        if (!valid_type(u.type)) break;  // reported with the uniform
        if (check_path(op, 0))
          check_path_bounds(op, types->words(u.type), type(op.dst), "uniform '" + u.name + "'");
        break;
      }
      case OpCode::Select: {
        // A bool array picks element by element (a vectorised loop's `if`).
        const TypeId c = type(op.args[0]);
        if (c != Types::kBool && (types->leaf(c) != Types::kBool || types->is_scalar(c) ||
                                  types->words(c) != types->words(type(op.dst))))
          report(fmt::format("condition {} must be a bool scalar, or a bool array of {}'s shape",
                             var(op.args[0]), var(op.dst)));
        if (type(op.args[1]) != type(op.dst) || type(op.args[2]) != type(op.dst))
          report(fmt::format("operands {} and {} and destination {} must have one type",
                             var(op.args[1]), var(op.args[2]), var(op.dst)));
        break;
      }
      default:
        break;
    }
  }

  // The index operands of a path: one int or uint scalar per dynamic step, from args[first].
  bool check_path(const Op& op, size_t first) {
    size_t dynamic = 0;
    for (const PathStep& s : op.path)
      dynamic += s.dynamic;
    if (op.args.size() != first + dynamic) {
      report(fmt::format("path has {} dynamic step{} but the op has {} index operand{}", dynamic,
                         dynamic == 1 ? "" : "s", op.args.size() - std::min(first, op.args.size()),
                         op.args.size() - first == 1 ? "" : "s"));
      return false;
    }
    bool ok = true;
    for (size_t i = first; i < op.args.size(); ++i) {
      const TypeId t = type(op.args[i]);
      if (t != Types::kInt && t != Types::kUInt) {
        report(fmt::format("index {} must be an int or uint scalar", var(op.args[i])));
        ok = false;
      }
    }
    return ok;
  }

  // Every index a path can reach, plus the accessed part's size, must fit in the aggregate.
  void check_path_bounds(const Op& op, uint32_t aggregate_words, TypeId part,
                         const std::string& aggregate) {
    uint64_t reach = 0;
    for (size_t i = 0; i < op.path.size(); ++i) {
      const PathStep& s = op.path[i];
      if (s.dynamic && s.count == 0) {
        report(fmt::format("dynamic path step {} has count 0", i));
        return;
      }
      reach += s.offset;
      if (s.dynamic) reach += static_cast<uint64_t>(s.count - 1) * s.stride;
    }
    const uint64_t end = reach + types->words(part);
    if (end > aggregate_words)
      report(fmt::format("path reaches word {} of {} ({} words) with a {}-word part ({})", end,
                         aggregate, aggregate_words, types->words(part), types->to_string(part)));
  }

  // A scalar or array of scalars, as an elementwise operand; false (reported) otherwise.
  bool elementwise_operand(VarId v, Shape& shape) {
    shape = shape_of(*types, type(v));
    if (types->is_scalar(shape.leaf)) return true;
    report(fmt::format("operand {} must be a scalar or an array of scalars", var(v)));
    return false;
  }

  void check_elementwise(const Op& op) {
    std::vector<Shape> shapes(op.args.size());
    for (size_t i = 0; i < op.args.size(); ++i)
      if (!elementwise_operand(op.args[i], shapes[i])) return;
    const Scalar in = (*types)[shapes[0].leaf].scalar;
    const bool is_shift = op.code == OpCode::Shl || op.code == OpCode::Shr;
    for (size_t i = 1; i < op.args.size(); ++i) {
      const Scalar other = (*types)[shapes[i].leaf].scalar;
      // A shift amount is any integer kind (only its low 5 bits count).
      if (is_shift && (other == Scalar::Int || other == Scalar::UInt)) continue;
      if (other != in) {
        report(fmt::format("operands {} and {} differ in scalar kind", var(op.args[0]),
                           var(op.args[i])));
        return;
      }
    }
    // Scalars broadcast; every array operand has the one shape of the result.
    const std::vector<uint32_t>* dims = nullptr;
    for (size_t i = 0; i < op.args.size(); ++i) {
      if (shapes[i].dims.empty()) continue;
      if (dims && *dims != shapes[i].dims) {
        report(fmt::format("array operands {} and {} differ in shape", var(op.args[0]),
                           var(op.args[i])));
        return;
      }
      dims = &shapes[i].dims;
    }
    const auto out = elementwise_result(op.code, in);
    if (!out) {
      report(fmt::format("does not accept {} operands", scalar_name(in)));
      return;
    }
    const Shape dst = shape_of(*types, type(op.dst));
    const std::vector<uint32_t> no_dims;
    const std::vector<uint32_t>& want_dims = dims ? *dims : no_dims;
    if (!types->is_scalar(dst.leaf) || (*types)[dst.leaf].scalar != *out || dst.dims != want_dims)
      report(
          fmt::format("destination {} must be {}", var(op.dst), shape_spelling(*out, want_dims)));
  }

  void check_reduction(const Op& op) {
    const TypeId a = type(op.args[0]);
    const Shape s = shape_of(*types, a);
    if (s.dims.empty() || !types->is_scalar(s.leaf)) {
      report(fmt::format("operand {} must be an array of scalars", var(op.args[0])));
      return;
    }
    const Scalar in = (*types)[s.leaf].scalar;
    if (!elementwise_result(op.code, in)) {
      report(fmt::format("does not accept {} arrays", scalar_name(in)));
      return;
    }
    if (op.code == OpCode::Dot && type(op.args[1]) != a) {
      report(
          fmt::format("operands {} and {} must have one type", var(op.args[0]), var(op.args[1])));
      return;
    }
    if (type(op.dst) != s.leaf)
      report(fmt::format("destination {} must be {}", var(op.dst), scalar_name(in)));
  }

  void check_matrix(const Op& op) {
    const TypeId b = op.args.size() > 1 ? type(op.args[1]) : Types::kVoid;
    if (const Expected<MatrixShape> shape =
            checked_matrix_shape(*types, op.code, type(op.args[0]), b);
        !shape) {
      report(shape.error());
      return;
    }
    const std::vector<uint32_t> dims = matrix_result_dims(*types, op.code, type(op.args[0]), b);
    const Shape dst = shape_of(*types, type(op.dst));
    if (dst.leaf != Types::kFloat || dst.dims != dims)
      report(fmt::format("destination {} must be {}", var(op.dst),
                         shape_spelling(Scalar::Float, dims)));
  }

  void check_stack(const Op& op) {
    if (!lowered) {
      // A tape (passes/differentiate.h): push and pop of a function's own variable.
      if (op.code == OpCode::Update) report("update belongs to the lowered (Figure 4) form");
      return;
    }
    if (storage[op.args[0]] != Storage::Stacked)
      report(fmt::format("variable {} is {}, not stacked", var(op.args[0]),
                         storage_name(storage[op.args[0]])));
  }
};

void check_var_types(const Types& types, const std::string& where, const std::string& name,
                     TypeId t, std::vector<std::string>& problems) {
  if (t < 0 || static_cast<size_t>(t) >= types.size())
    problems.push_back(fmt::format("{}variable '{}' has invalid type id {}", where, name, t));
}

std::vector<std::string> program_problems(const Program& program) {
  std::vector<std::string> problems;
  const Types& types = program.types;
  for (const Uniform& u : program.uniforms) {
    if (u.type < 0 || static_cast<size_t>(u.type) >= types.size())
      problems.push_back(fmt::format("uniform '{}': invalid type id {}", u.name, u.type));
    else if (u.type == Types::kVoid)
      problems.push_back(fmt::format("uniform '{}': type is void", u.name));
  }

  for (const Function& fn : program.functions) {
    const std::string fn_where = fmt::format("function '{}': ", fn.name);
    OpChecker checker;
    checker.types = &types;
    checker.program = &program;
    checker.block_count = fn.blocks.size();
    checker.problems = &problems;
    for (const Var& v : fn.vars) {
      check_var_types(types, fn_where, v.name, v.type, problems);
      checker.var_names.push_back(&v.name);
      checker.var_types.push_back(v.type);
    }
    std::set<VarId> seen_params;
    for (VarId p : fn.params) {
      if (!checker.valid_var(p))
        problems.push_back(fmt::format("{}parameter variable {} is out of range ({} variables)",
                                       fn_where, p, fn.vars.size()));
      else if (!seen_params.insert(p).second)
        problems.push_back(
            fmt::format("{}variable '{}' is a parameter twice", fn_where, fn.vars[p].name));
    }
    if (fn.result != -1) {
      if (!checker.valid_var(fn.result))
        problems.push_back(fmt::format("{}result variable {} is out of range ({} variables)",
                                       fn_where, fn.result, fn.vars.size()));
      else if (fn.vars[fn.result].type == Types::kVoid)
        problems.push_back(
            fmt::format("{}result variable '{}' has type void", fn_where, fn.vars[fn.result].name));
    }
    if (fn.blocks.empty()) problems.push_back(fn_where + "has no blocks");
    for (size_t b = 0; b < fn.blocks.size(); ++b) {
      const Block& block = fn.blocks[b];
      for (size_t i = 0; i < block.ops.size(); ++i)
        checker.check_op(block.ops[i],
                         fmt::format("function '{}' block {} op {}: ", fn.name, b, i));
      checker.check_terminator(block.term,
                               fmt::format("function '{}' block {} terminator: ", fn.name, b));
    }
  }
  return problems;
}

std::vector<std::string> lowered_problems(const LoweredProgram& lowered) {
  std::vector<std::string> problems;
  if (!lowered.source) {
    problems.push_back("lowered program: no source program");
    return problems;
  }
  const Program& program = *lowered.source;
  const Types& types = program.types;
  OpChecker checker;
  checker.types = &types;
  checker.program = &program;
  checker.lowered = true;
  checker.block_count = lowered.blocks.size();
  checker.problems = &problems;
  for (const LoweredVar& v : lowered.vars) {
    check_var_types(types, "lowered program: ", v.name, v.type, problems);
    checker.var_names.push_back(&v.name);
    checker.var_types.push_back(v.type);
    checker.storage.push_back(v.storage);
  }

  const std::string where = "lowered program: ";
  if (lowered.entry_function < 0 ||
      static_cast<size_t>(lowered.entry_function) >= program.functions.size())
    problems.push_back(fmt::format("{}entry function {} is out of range ({} functions)", where,
                                   lowered.entry_function, program.functions.size()));
  if (!checker.valid_block(lowered.entry_block))
    problems.push_back(fmt::format("{}entry block {} is out of range ({} blocks)", where,
                                   lowered.entry_block, lowered.blocks.size()));
  for (VarId v : lowered.inputs)
    if (!checker.valid_var(v))
      problems.push_back(fmt::format("{}input variable {} is out of range ({} variables)", where, v,
                                     lowered.vars.size()));
  if (lowered.output != -1 && !checker.valid_var(lowered.output))
    problems.push_back(fmt::format("{}output variable {} is out of range ({} variables)", where,
                                   lowered.output, lowered.vars.size()));

  for (size_t b = 0; b < lowered.blocks.size(); ++b) {
    const LoweredBlock& block = lowered.blocks[b];
    const std::string block_where = fmt::format("block {} '{}'", b, block.name);
    if (block.function < 0 || static_cast<size_t>(block.function) >= program.functions.size())
      problems.push_back(
          fmt::format("{}: source function {} is out of range", block_where, block.function));
    // A Temp var lives only inside one block run, so every read must follow a write in it.
    std::vector<bool> written(lowered.vars.size(), false);
    auto check_read = [&](VarId v, const std::string& op_where) {
      if (checker.valid_var(v) && checker.storage[v] == Storage::Temp && !written[v])
        problems.push_back(
            fmt::format("{}temp variable '{}' is read before it is written in "
                        "this block",
                        op_where, lowered.vars[v].name));
    };
    for (size_t i = 0; i < block.ops.size(); ++i) {
      const Op& op = block.ops[i];
      const std::string op_where = fmt::format("{} op {}: ", block_where, i);
      checker.check_op(op, op_where);
      const bool restores = op.code == OpCode::Pop || op.code == OpCode::Update;
      for (VarId a : op.args) {
        if (restores) {
          if (checker.valid_var(a)) written[a] = true;
        } else {
          check_read(a, op_where);
        }
      }
      if (checker.valid_var(op.dst)) written[op.dst] = true;
    }
    const std::string term_where = block_where + " terminator: ";
    checker.check_terminator(block.term, term_where);
    if (block.term.kind == Terminator::Kind::Branch) check_read(block.term.cond, term_where);
  }
  return problems;
}

// One problem per line, or Ok.
Status as_status(const std::vector<std::string>& problems) {
  if (problems.empty()) return Ok{};
  std::string message;
  for (const std::string& problem : problems)
    message += (message.empty() ? "" : "\n") + problem;
  return Error{std::move(message)};
}

}  // namespace

Status verify(const Program& program) {
  return as_status(program_problems(program));
}

Status verify(const LoweredProgram& lowered) {
  return as_status(lowered_problems(lowered));
}

}  // namespace ab
