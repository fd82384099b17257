// The reverse sweep's emission and each op's derivative rule (passes/differentiate.cpp builds
// the derived functions around them). A rule reads the adjoint g of its op's result and adds
// each active operand's contribution to that operand's adjoint, with ordinary ops.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace ab {

// Emits ops into block cur_ of the derived function D_ (into scratch_ when cur_ < 0: the dry
// pass that only records what the adjoints read). The differentiation pass supplies what the
// rules ask of the source function through the hooks.
class AdjointEmitter {
 public:
  explicit AdjointEmitter(Types& types) : T_(types) {}
  virtual ~AdjointEmitter() = default;
  AdjointEmitter(const AdjointEmitter&) = delete;
  AdjointEmitter& operator=(const AdjointEmitter&) = delete;

  // The adjoint of `o` (OpInfo::derivative is Rule): g is its result's adjoint, r its result.
  void rule(const Op& o, VarId g, VarId r);
  // x += e, x -= e, a[i] = e (the destination is the first operand and not the second): adds
  // the other operand's adjoint, leaving g0, the destination's, as it is. False for other ops.
  bool in_place_rule(const Op& o, VarId g0);

  // ---- hooks ----
  // A primal value the reverse sweep reads (recomputed, restored or as it is).
  virtual VarId val(VarId v) = 0;
  // The op's result value `r`, noted as read.
  virtual VarId result_value(const Op& o, VarId r) = 0;
  virtual bool active(VarId v) const = 0;
  virtual VarId adjoint_of(VarId v) const = 0;  // an active variable's adjoint
  virtual TypeId source_type(VarId v) const = 0;
  // A call's callee: its vjp function and the struct that returns (one field per float input).
  virtual const Function& callee(int f) const = 0;
  virtual int vjp_of(int f) = 0;
  virtual TypeId vjp_result_type(int f) = 0;

  // ---- emission ----
  VarId new_var(std::string name, TypeId type);
  TypeId type(VarId v) const { return D_.vars[v].type; }
  Op& emit(OpCode code, VarId dst, std::vector<VarId> args);
  VarId op(OpCode code, TypeId t, std::vector<VarId> args);
  VarId fconst(float f);
  VarId zeros(TypeId t);
  VarId iconst(int32_t k);
  VarId copy_of(VarId v);
  // `a` (any shape) times the float scalar or same-shaped `b`.
  VarId mul(VarId a, VarId b);
  // code(a, more...) typed as the array among its operands, if any.
  VarId same(OpCode code, VarId a, std::vector<VarId> more = {});
  // adjoint[target] += contribution, for an active target.
  void acc(VarId target, VarId contribution);
  // into += c, reducing a broadcast (an array c into a scalar) and going field by field through
  // structs.
  void add_into(VarId into, VarId c);
  // into += x * s for a float scalar s; a struct field by field.
  void add_scaled_into(VarId into, VarId x, VarId s);
  VarId field(VarId s, const Field& f);
  void zero(VarId v);
  VarId transposed(VarId m);  // of a float matrix
  TypeId with_leaf(TypeId t, TypeId scalar);
  const Types& types() const { return T_; }

 protected:
  std::vector<Op>& current_ops() { return cur_ < 0 ? scratch_ : D_.blocks[cur_].ops; }

  Types& T_;
  Function D_;
  int cur_ = -1;
  SourceLoc loc_;
  std::vector<Op> scratch_;
};

// Whether `code` has a rule here (its row's derivative is Rule exactly then: ir tests check).
bool has_derivative_rule(OpCode code);

}  // namespace ab
