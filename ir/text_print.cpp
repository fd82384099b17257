// The printers of the textual IR (ir/text.h): the Figure 2 form, which text_parse.cpp reads
// back, and the Figure 4 form.
#include "ir/text.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include "ir/text_syntax.h"

namespace ab {
namespace {

// ---- shared spelling helpers --------------------------------------------------------------------

using text_syntax::is_ident_char;
using text_syntax::is_ident_start;

bool is_identifier(const std::string& s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string name_or_quoted(const std::string& s) {
  return is_identifier(s) ? s : quote(s);
}

std::string loc_suffix(SourceLoc loc) {
  if (loc.line == 0 && loc.col == 0) return "";
  return fmt::format("  @{}:{}", loc.line, loc.col);
}

// Shortest decimal spelling of a finite float that reads back to the same bits, always with a
// '.' or exponent so it reads as a float; nullopt for infinities and NaNs.
std::optional<std::string> float_spelling(uint32_t bits) {
  const float f = bits_float(bits);
  if (!std::isfinite(f)) return std::nullopt;
  for (int precision = 1; precision <= 9; ++precision) {
    std::string s = fmt::format("{:.{}g}", f, precision);
    if (float_bits(std::strtof(s.c_str(), nullptr)) != bits) continue;
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s;
  }
  return fmt::format("0x{:08x}", bits);  // unreachable: 9 digits always round-trip a float
}

std::string word_spelling(Scalar kind, uint32_t w) {
  switch (kind) {
    case Scalar::Bool:
      if (w <= 1) return w ? "true" : "false";
      break;
    case Scalar::Int:
      return std::to_string(static_cast<int32_t>(w));
    case Scalar::UInt:
      return std::to_string(w);
    case Scalar::Float:
      if (auto s = float_spelling(w)) return *s;
      break;
  }
  return fmt::format("0x{:08x}", w);
}

// How to name the entities of one scope: by name when unique and an identifier, else `%N`.
template <typename Item, typename NameOf>
std::vector<std::string> reference_names(const std::vector<Item>& items, NameOf name_of) {
  std::map<std::string, int> uses;
  for (const Item& item : items)
    ++uses[name_of(item)];
  std::vector<std::string> refs;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& name = name_of(items[i]);
    refs.push_back(is_identifier(name) && uses[name] == 1 ? name : fmt::format("%{}", i));
  }
  return refs;
}

std::string ref(const std::vector<std::string>& refs, int32_t index) {
  if (index >= 0 && static_cast<size_t>(index) < refs.size()) return refs[index];
  return fmt::format("%{}", index);
}

std::string type_name(const Types& types, TypeId id) {
  if (id < 0 || static_cast<size_t>(id) >= types.size()) return fmt::format("<bad type {}>", id);
  return types.to_string(id);
}

// ---- printing ops (shared by the Figure 2 and Figure 4 printers) --------------------------------

struct PrintScope {
  const Types* types = nullptr;
  std::vector<std::string> vars;       // reference spelling of each variable
  std::vector<TypeId> var_types;       // type of each variable
  std::vector<std::string> functions;  // reference spelling of each function
  std::vector<std::string> uniforms;   // reference spelling of each uniform
  std::vector<std::string> blocks;     // spelling of each block target
};

std::string block_ref(const PrintScope& s, int32_t b) {
  if (b >= 0 && static_cast<size_t>(b) < s.blocks.size()) return s.blocks[b];
  return fmt::format("b{}", b);
}

std::string print_path_step(const PathStep& step, const std::string* index_var) {
  std::string out;
  if (step.dynamic) {
    out = fmt::format("{}*{}<{}", index_var ? *index_var : "?", step.stride, step.count);
    if (step.offset != 0) out += fmt::format("+{}", step.offset);
  } else {
    out = std::to_string(step.offset);
    if (step.stride != 0 || step.count != 0) out += fmt::format("*{}<{}", step.stride, step.count);
  }
  return out;
}

// `base [path], extra...` with the dynamic steps' index vars taken from args[first_index..].
std::string print_path_operands(const PrintScope& s, const Op& op, size_t first_index) {
  std::string out = "[";
  size_t next = first_index;
  for (size_t i = 0; i < op.path.size(); ++i) {
    if (i) out += ", ";
    const PathStep& step = op.path[i];
    std::string index_name;
    const std::string* index = nullptr;
    if (step.dynamic && next < op.args.size()) {
      index_name = ref(s.vars, op.args[next++]);
      index = &index_name;
    }
    out += print_path_step(step, index);
  }
  out += "]";
  for (; next < op.args.size(); ++next)
    out += ", " + ref(s.vars, op.args[next]);
  return out;
}

std::string print_const(const PrintScope& s, const Op& op) {
  const Types& types = *s.types;
  const bool dst_known = op.dst >= 0 && static_cast<size_t>(op.dst) < s.var_types.size();
  const TypeId t = dst_known ? s.var_types[op.dst] : Types::kVoid;
  const bool typed = dst_known && t >= 0 && static_cast<size_t>(t) < types.size() &&
                     types.is_scalar(types.leaf(t)) && op.imm.size() == types.words(t);
  if (!typed) {
    std::string out = "words [";
    for (size_t i = 0; i < op.imm.size(); ++i)
      out += fmt::format("{}0x{:08x}", i ? ", " : "", op.imm[i]);
    return out + "]";
  }
  const Scalar kind = types[types.leaf(t)].scalar;
  if (types.is_scalar(t)) return word_spelling(kind, op.imm[0]);
  std::string out = "[";
  for (size_t i = 0; i < op.imm.size(); ++i)
    out += (i ? ", " : "") + word_spelling(kind, op.imm[i]);
  return out + "]";
}

std::string print_op(const PrintScope& s, const Op& op) {
  if (!is_valid(op.code))
    return fmt::format("<invalid opcode {}>", static_cast<int>(op.code)) + loc_suffix(op.loc);
  std::string out;
  // dst = -1 prints nothing, whatever the op: a missing dst is the verifier's to report.
  if (op.dst >= 0) out = ref(s.vars, op.dst) + " = ";
  out += op_info(op.code).name;
  auto args_from = [&](size_t first) {
    std::string list;
    for (size_t i = first; i < op.args.size(); ++i)
      list += (i > first ? ", " : "") + ref(s.vars, op.args[i]);
    return list;
  };
  auto arg_or_missing = [&](size_t i) {
    return i < op.args.size() ? ref(s.vars, op.args[i]) : "?";
  };
  if (is_const(op)) {
    out += " " + print_const(s, op);
  } else if (is_uniform_get(op)) {
    out += " " + ref(s.uniforms, op.index) + " " + print_path_operands(s, op, 0);
  } else if (has_path(op.code)) {  // get base [path], indices / set ... = value
    out += " " + arg_or_missing(0) + " " + print_path_operands(s, op, is_set(op) ? 2 : 1);
    if (is_set(op)) out += " = " + arg_or_missing(1);
  } else if (is_call(op)) {
    out += " " + ref(s.functions, op.index) + "(" + args_from(0) + ")";
  } else if (!op.args.empty()) {
    out += " " + args_from(0);
  }
  if (!op.message.empty()) out += ", " + quote(op.message);  // an assert's fault text
  return out + loc_suffix(op.loc);
}

std::string print_terminator(const PrintScope& s, const Terminator& t) {
  std::string out;
  switch (t.kind) {
    case Terminator::Kind::Jump:
      out = "jump " + block_ref(s, t.target);
      break;
    case Terminator::Kind::Branch:
      out = fmt::format("branch {}, {}, {}", ref(s.vars, t.cond), block_ref(s, t.target),
                        block_ref(s, t.target_else));
      break;
    case Terminator::Kind::Return:
      out = "return";
      break;
    case Terminator::Kind::PushJump:
      out = fmt::format("pushjump {}, {}", block_ref(s, t.target), block_ref(s, t.target_else));
      break;
    case Terminator::Kind::TailJump:
      out = "tailjump " + block_ref(s, t.target);
      break;
  }
  return out + loc_suffix(t.loc);
}

std::string print_var_decl(const std::string& name, const Types& types, TypeId type) {
  return fmt::format("{}: {}", name_or_quoted(name), type_name(types, type));
}

}  // namespace

std::string print_ir(const Program& program) {
  const Types& types = program.types;
  std::string out = "program " + quote(program.file) + "\n";
  if (types.size() > 5) out += "\n";
  for (size_t id = 5; id < types.size(); ++id) {
    const TypeId tid = static_cast<TypeId>(id);
    if (types.is_struct(tid)) {
      const StructDef& def = types.struct_def(tid);
      out += "struct " + name_or_quoted(def.name) + " {";
      for (size_t i = 0; i < def.fields.size(); ++i)
        out += (i ? ", " : " ") + print_var_decl(def.fields[i].name, types, def.fields[i].type);
      out += def.fields.empty() ? "}\n" : " }\n";
    } else {
      out += "type " + types.to_string(tid) + "\n";
    }
  }
  if (!program.uniforms.empty()) out += "\n";
  for (const Uniform& u : program.uniforms)
    out += "uniform " + print_var_decl(u.name, types, u.type) + loc_suffix(u.loc) + "\n";

  PrintScope scope;
  scope.types = &types;
  scope.functions = reference_names(program.functions,
                                    [](const Function& f) -> const std::string& { return f.name; });
  scope.uniforms = reference_names(program.uniforms,
                                   [](const Uniform& u) -> const std::string& { return u.name; });
  for (const Function& fn : program.functions) {
    scope.vars =
        reference_names(fn.vars, [](const Var& v) -> const std::string& { return v.name; });
    scope.var_types.clear();
    for (const Var& v : fn.vars)
      scope.var_types.push_back(v.type);
    scope.blocks.clear();
    for (size_t b = 0; b < fn.blocks.size(); ++b)
      scope.blocks.push_back(fmt::format("b{}", b));
    auto var_type = [&](VarId v) {
      return v >= 0 && static_cast<size_t>(v) < fn.vars.size() ? type_name(types, fn.vars[v].type)
                                                               : std::string("?");
    };

    out += "\nfn " + name_or_quoted(fn.name) + "(";
    for (size_t i = 0; i < fn.params.size(); ++i)
      out += fmt::format("{}{}: {}", i ? ", " : "", ref(scope.vars, fn.params[i]),
                         var_type(fn.params[i]));
    out += ")";
    if (fn.result >= 0)
      out += fmt::format(" -> {}: {}", ref(scope.vars, fn.result), var_type(fn.result));
    out += loc_suffix(fn.loc) + "\n";
    for (const Var& v : fn.vars)
      out += "  var " + print_var_decl(v.name, types, v.type) + "\n";
    for (size_t b = 0; b < fn.blocks.size(); ++b) {
      const Block& block = fn.blocks[b];
      out += fmt::format("  b{}:{}\n", b, loc_suffix(block.loc));
      for (const Op& op : block.ops)
        out += "    " + print_op(scope, op) + "\n";
      out += "    " + print_terminator(scope, block.term) + "\n";
    }
  }
  return out;
}

namespace {

std::string function_name(const Program& program, int32_t f) {
  return f >= 0 && static_cast<size_t>(f) < program.functions.size() ? program.functions[f].name
                                                                     : fmt::format("%{}", f);
}

// The reference spellings of a lowered program's variables, functions, uniforms and blocks.
PrintScope lowered_scope(const LoweredProgram& lowered) {
  const Program& program = *lowered.source;
  PrintScope scope;
  scope.types = &program.types;
  scope.vars = reference_names(lowered.vars,
                               [](const LoweredVar& v) -> const std::string& { return v.name; });
  for (const LoweredVar& v : lowered.vars)
    scope.var_types.push_back(v.type);
  scope.functions = reference_names(program.functions,
                                    [](const Function& f) -> const std::string& { return f.name; });
  scope.uniforms = reference_names(program.uniforms,
                                   [](const Uniform& u) -> const std::string& { return u.name; });
  scope.blocks = reference_names(
      lowered.blocks, [](const LoweredBlock& b) -> const std::string& { return b.name; });
  return scope;
}

std::string print_block(const PrintScope& scope, const LoweredProgram& lowered, int32_t b) {
  const LoweredBlock& block = lowered.blocks[b];
  std::string out =
      fmt::format("{} (pc {}, fn {}):{}\n", block_ref(scope, b), b,
                  function_name(*lowered.source, block.function), loc_suffix(block.loc));
  for (const Op& op : block.ops)
    out += "  " + print_op(scope, op) + "\n";
  return out + "  " + print_terminator(scope, block.term) + "\n";
}

}  // namespace

std::string print_lowered(const LoweredProgram& lowered) {
  if (!lowered.source) return "lowered program without a source program\n";
  const Program& program = *lowered.source;
  const Types& types = program.types;
  const PrintScope scope = lowered_scope(lowered);
  std::string out = fmt::format(
      "lowered program {} (entry {}): {} blocks, {} vars ({} temp, {} register, {} stacked)\n",
      quote(program.file), function_name(program, lowered.entry_function), lowered.blocks.size(),
      lowered.vars.size(), lowered.count(Storage::Temp), lowered.count(Storage::Register),
      lowered.count(Storage::Stacked));
  std::string inputs;
  for (size_t i = 0; i < lowered.inputs.size(); ++i)
    inputs += (i ? ", " : "") + ref(scope.vars, lowered.inputs[i]);
  out += fmt::format(
      "entry {}, inputs ({}), output {}, exit pc {}\n", block_ref(scope, lowered.entry_block),
      inputs, lowered.output >= 0 ? ref(scope.vars, lowered.output) : "none", lowered.exit_pc());
  out += "\n";
  for (const LoweredVar& v : lowered.vars)
    out +=
        fmt::format("{:<8} {}\n", storage_name(v.storage), print_var_decl(v.name, types, v.type));
  for (size_t b = 0; b < lowered.blocks.size(); ++b)
    out += "\n" + print_block(scope, lowered, static_cast<int32_t>(b));
  return out;
}

std::string print_lowered_block(const LoweredProgram& lowered, int32_t block) {
  if (!lowered.source || block < 0 || static_cast<size_t>(block) >= lowered.blocks.size())
    return "";
  return print_block(lowered_scope(lowered), lowered, block);
}

}  // namespace ab
