// Internal to the front end: composing a builtin's ops at its call (Stan's distributions,
// lang/distributions.cpp; the linear algebra, lang/linear_algebra.cpp).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "lang/builder_state.h"

namespace ab::frontend {

// Emits elementwise ops at one call, a scalar operand broadcast against an array one; the
// operands of one call share one shape (checked before anything is composed).
class Composer {
 public:
  Composer(FunctionBuilder& fb, SourceLoc loc) : fb(fb), loc(loc) {}

  Value constant(float x) { return fb.constant(Types::kFloat, {float_bits(x)}, loc); }
  // A constant of any type, its words given.
  Value constant(TypeId type, std::vector<uint32_t> words) {
    return fb.constant(type, std::move(words), loc);
  }
  Value int_constant(int32_t x) {
    return fb.constant(Types::kInt, {static_cast<uint32_t>(x)}, loc);
  }
  // An elementwise op whose result's leaf is `leaf` and shape the array operand's, if any.
  Value op(OpCode code, const std::vector<Value>& args, TypeId leaf = Types::kFloat) {
    TypeId type = leaf;
    std::vector<VarId> vars;
    for (const Value& a : args) {
      if (fb.types().is_array(a.type)) type = fb.with_leaf(a.type, leaf);
      vars.push_back(a.var);
    }
    return fb.op_value(code, type, std::move(vars), loc);
  }
  Value to_float(const Value& v) {
    if (fb.types().leaf(v.type) == Types::kFloat) return v;
    return op(OpCode::ToFloat, {v});
  }
  // A scalar bool: every element of `b` (a bool or bool array) is true.
  Value all(const Value& b) {
    if (!fb.types().is_array(b.type)) return b;
    const Value ones = op(OpCode::ToInt, {b}, Types::kInt);
    const Value count = fb.op_value(OpCode::Sum, Types::kInt, {ones.var}, loc);
    const auto n = static_cast<int32_t>(fb.types().words(b.type));
    return fb.op_value(OpCode::Eq, Types::kBool, {count.var, int_constant(n).var}, loc);
  }
  // The sum of a float array's elements (the language's `sum`), or the scalar itself.
  Value total(const Value& v) {
    if (!fb.types().is_array(v.type)) return v;
    return reduce(OpCode::Sum, v);
  }
  // sum, max(a), log_sum_exp(a) of a float array.
  Value reduce(OpCode code, const Value& v) {
    return fb.op_value(code, Types::kFloat, {v.var}, loc);
  }
  // A log density compiled with FrontendOptions::reject_domain_errors gathers its argument
  // checks instead of asserting them, and `rejected` then makes its value NaN where one failed.
  void gather_checks() { gather_ = fb.globals_.reject_domain_errors(); }
  void check(const Value& ok, std::string message) {
    const Value every = all(ok);
    if (gather_) {
      const Value no = fb.constant(Types::kBool, {0}, loc);
      in_domain_ = in_domain_.ok() ? fb.op_value(OpCode::Select, Types::kBool,
                                                 {in_domain_.var, every.var, no.var}, loc)
                                   : every;
      return;
    }
    Op& a = fb.emit(OpCode::Assert, -1, {every.var}, loc);
    a.message = std::move(message);
  }
  // `lp`, or NaN where a gathered check failed (Stan's rejection: the sampler's divergence).
  Value rejected(const Value& lp) {
    if (!in_domain_.ok()) return lp;
    const Value nan = constant(std::numeric_limits<float>::quiet_NaN());
    return fb.op_value(OpCode::Select, Types::kFloat, {in_domain_.var, lp.var, nan.var}, loc);
  }
  // An int index `i`, or 0 where a gathered check failed, so that an argument out of its domain
  // reads in range and only the NaN of `rejected` tells.
  Value index_in_domain(const Value& i) {
    if (!in_domain_.ok()) return i;
    return fb.op_value(OpCode::Select, Types::kInt, {in_domain_.var, i.var, int_constant(0).var},
                       loc);
  }
  Value draw(OpCode code) { return fb.op_value(code, Types::kFloat, {}, loc); }
  Value call_library(const char* function, const std::vector<Value>& args, TypeId result) {
    std::vector<VarId> vars;
    for (const Value& a : args)
      vars.push_back(a.var);
    Value v = fb.op_value(OpCode::Call, result, std::move(vars), loc);
    fb.fn_.blocks[fb.current_].ops.back().index = fb.globals_.function_index(function);
    return v;
  }
  // a[i] of a float vector, i a dynamic int index.
  Value element(const Value& a, const Value& i) {
    PathStep step;
    step.dynamic = true;
    step.stride = 1;
    step.count = fb.types()[a.type].count;
    return fb.get(Types::kFloat, a.var, {i.var}, {step}, loc);
  }
  // The word at `offset` of an array (a static index).
  Value word(const Value& a, uint32_t offset) {
    return fb.get(fb.types().leaf(a.type), a.var, {}, {PathStep{false, offset, 0, 0}}, loc);
  }
  Value make_array(const std::vector<Value>& parts, TypeId elem) {
    std::vector<VarId> vars;
    for (const Value& p : parts)
      vars.push_back(p.var);
    return fb.make(fb.types().array(elem, static_cast<uint32_t>(parts.size())), std::move(vars),
                   loc);
  }
  Types& types() { return fb.types(); }

 private:
  FunctionBuilder& fb;
  SourceLoc loc;
  bool gather_ = false;
  Value in_domain_;  // the gathered checks' conjunction; none yet: not ok()
};

}  // namespace ab::frontend
