// Top-level declarations: checks and records structs, constants, uniforms and function
// signatures before any function body is built, so declarations may appear in any order.
//
// Constants are folded here (on demand, so one constant may use another declared later; a cycle
// is an error). Struct layouts are added to Program::types with their dependencies first.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/ir.h"
#include "lang/ast.h"
#include "lang/const_eval.h"
#include "passes/differentiate.h"

namespace ab::frontend {

// The largest value the language allows, in 32-bit words (64 MiB).
constexpr uint64_t kMaxTypeWords = uint64_t{1} << 24;

// Names of the builtin functions; user functions may not reuse them.
bool is_builtin_function(const std::string& name);

struct Signature {
  std::vector<TypeId> params;  // -1 where a parameter's type did not resolve
  TypeId result = Types::kVoid;
  bool ok = true;  // every type resolved
};

class Globals {
 public:
  Globals(const ast::Module& module, Program& program, Diagnostics& diags);

  // Declares everything in the module, reporting bad declarations. Fills program.uniforms and
  // program.types; function signatures are available afterwards.
  void declare();

  // Resolves a type written in the source; reports and returns nullopt if it is invalid.
  // `allow_bounds`: a struct field's type, where `float<lower=.., upper=..>` may appear.
  std::optional<TypeId> resolve_type(const ast::TypeExpr& type, bool allow_bounds = false);
  // The type of struct `name`: nullopt after reporting "unknown struct" (or silently, when the
  // struct exists but its declaration was invalid).
  std::optional<TypeId> struct_type(const std::string& name, SourceLoc loc);

  // Value of the constant named by a Name expression (the ConstLookup contract).
  std::optional<ConstScalar> lookup_const(const ast::Expr& name, Diagnostics* diags);
  bool is_const(const std::string& name) const { return consts_.count(name) != 0; }
  int uniform_index(const std::string& name) const;
  int function_index(const std::string& name) const;  // -1 if none
  const Signature& signature(int function) const { return signatures_.at(function); }
  const ast::Module& module() const { return module_; }
  // FrontendOptions::reject_domain_errors: a density's argument check makes its value NaN.
  bool reject_domain_errors() const { return reject_domain_errors_; }
  void set_reject_domain_errors(bool on) { reject_domain_errors_ = on; }
  // FrontendOptions::data_constants; set before declare().
  void set_data_constants(const std::map<std::string, double>* values) { data_values_ = values; }

  // The index of f's derived value_and_grad function (passes/differentiate.h), asked for at
  // `loc`: one per f, numbered after the module's functions.
  int derivative(int function, SourceLoc loc);
  const std::vector<DerivativeRequest>& derivatives() const { return derivatives_; }

 private:
  enum class State : uint8_t { Pending, InProgress, Done, Failed };
  struct ConstEntry {
    const ast::ConstDecl* decl = nullptr;
    State state = State::Pending;
    ConstScalar value;
  };
  struct StructEntry {
    const ast::StructDecl* decl = nullptr;
    State state = State::Pending;
    TypeId type = -1;
  };

  void declare_name(const std::string& name, SourceLoc loc, const char* what);
  void evaluate_const(ConstEntry& entry);
  // `const N: T = data;`: N's value from data_values_, converted to T.
  std::optional<ConstScalar> data_const(const ast::ConstDecl& c, TypeId type);
  void resolve_struct(StructEntry& entry);
  std::optional<uint32_t> array_length(const ast::Expr& dim);
  // A field type's `<lower=.., upper=..>` evaluated (empty bounds when it has none).
  std::optional<FloatBounds> field_bounds(const ast::TypeExpr& type, TypeId resolved);
  // `simplex[K]`, `ordered[K]`, `positive_ordered[K]` where they are written: the error says why
  // not.
  Status check_vector_type(const ast::TypeExpr& type, bool allow_bounds);

  const ast::Module& module_;
  Program& program_;
  Diagnostics& diags_;
  struct Declared {
    SourceLoc loc;
    const char* what;  // "struct", "constant", "uniform", "function"
  };
  std::map<std::string, Declared> top_level_;  // first declaration of each name
  std::map<std::string, ConstEntry> consts_;
  std::map<std::string, StructEntry> structs_;
  std::map<std::string, int> uniforms_;
  std::map<std::string, int> functions_;
  std::vector<Signature> signatures_;
  int resolve_depth_ = 0;  // guards chains of constants and structs
  std::vector<DerivativeRequest> derivatives_;
  bool reject_domain_errors_ = false;
  const std::map<std::string, double>* data_values_ = nullptr;
};

}  // namespace ab::frontend
