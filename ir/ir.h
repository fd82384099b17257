// The typed control-flow-graph IR (Radul et al. 2020, Figure 2) and, sharing its ops, the
// program-counter form (Figure 4).
//
// Figure 2 form (`Program`): functions of basic blocks; each block is a list of ops and one
// terminator (Jump, Branch, Return). A `Call` op calls a function with ordinary semantics.
// Every function has a fixed set of typed variables; params are its first inputs, `result` its
// output variable (the value a Return hands back). Block 0 is the entry block.
//
// Figure 4 form (`LoweredProgram`, built by passes/lower.h): all functions' blocks merged into one
// CFG over one merged set of variables; Calls are replaced by Push/Pop/Update ops and the
// PushJump terminator; Return pops the program-counter stack. A tail call
// (passes/analysis/tail_calls.h) becomes TailJump: it reuses the caller's frame, so nothing is
// pushed. Ops keep their source locations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/types.h"

namespace ab {

using VarId = int32_t;

struct SourceLoc {
  int line = 0;  // 1-based; 0 = unknown
  int col = 0;   // 1-based
};

// One step of an access path into an aggregate (Get, Set, UniformGet). A static step adds
// `offset` words; a dynamic step consumes the next index operand i, faults unless 0 <= i < count
// (i read as a signed int, or as uint when the index var is uint), and adds i * stride words.
struct PathStep {
  bool dynamic = false;
  uint32_t offset = 0;
  uint32_t stride = 0;
  uint32_t count = 0;
};

struct Op {
  OpCode code = OpCode::Copy;
  VarId dst = -1;              // -1 when the op defines nothing (Assert, Push, Pop, Update)
  std::vector<VarId> args;     // operands; layout per opcode in ops.h
  std::vector<uint32_t> imm;   // Const: the value's words
  std::vector<PathStep> path;  // Get, Set, UniformGet
  int32_t index = -1;          // Call: callee function; UniformGet: uniform index
  // Assert: what its fault says (LaneError::detail), e.g. "normal_lpdf: sigma must be > 0" for
  // a builtin's check of its arguments; empty for the language's own `assert(c)`.
  std::string message;
  SourceLoc loc;
};

// What passes and backends ask of an op, so that OpCode is spelled only where every op is
// handled (the op table, the VM's kernels, the interpreter's and GLSL's structural ops, the
// derivative rules) and where an op is built.
inline bool is_call(const Op& op) {
  return op.code == OpCode::Call;
}
inline bool is_push(const Op& op) {
  return op.code == OpCode::Push;
}
inline bool is_pop(const Op& op) {
  return op.code == OpCode::Pop;
}
// Pop and Update write their variable from the top of its stack.
inline bool restores(const Op& op) {
  return op.code == OpCode::Pop || op.code == OpCode::Update;
}
inline bool is_stack_op(const Op& op) {
  return op_info(op.code).cls == OpClass::Stack;
}
inline bool is_emit(const Op& op) {
  return op.code == OpCode::Emit;
}
inline bool is_assert(const Op& op) {
  return op.code == OpCode::Assert;
}
inline bool is_const(const Op& op) {
  return op.code == OpCode::Const;
}
inline bool is_random(const Op& op) {
  return op_info(op.code).cls == OpClass::Random;
}
inline bool is_set(const Op& op) {
  return op.code == OpCode::Set;
}
inline bool is_uniform_get(const Op& op) {
  return op.code == OpCode::UniformGet;
}
// A matrix product `a @ b` (not outer or transpose, which sum nothing).
inline bool is_matmul(const Op& op) {
  return op.code == OpCode::MatMul;
}
// A UniformGet whose path has no dynamic index: it reads the same words for every lane.
inline bool is_static_uniform_get(const Op& op) {
  return op.code == OpCode::UniformGet && op.args.empty();
}
// Div and Rem, which fault on an integer zero divisor.
inline bool is_division(const Op& op) {
  return op.code == OpCode::Div || op.code == OpCode::Rem;
}
// Get, Set and UniformGet: an access path, with dynamic index operands (exec.h's first_index_arg).
inline bool has_path(OpCode code) {
  return code == OpCode::Get || code == OpCode::Set || code == OpCode::UniformGet;
}
// A code the table has a row for (the text parser and verifier read codes from outside).
inline bool is_valid(OpCode code) {
  return static_cast<size_t>(code) < static_cast<size_t>(OpCode::Count_);
}

// Ops the lowering builds: `dst = src`, and the stack ops saving or restoring `var`.
inline Op copy_op(VarId dst, VarId src, SourceLoc loc) {
  Op op;
  op.code = OpCode::Copy;
  op.dst = dst;
  op.args = {src};
  op.loc = loc;
  return op;
}
inline Op stack_op(bool push, VarId var, SourceLoc loc) {
  Op op;
  op.code = push ? OpCode::Push : OpCode::Pop;
  op.args = {var};
  op.loc = loc;
  return op;
}
// A Pop whose value is pushed again at once: restore the value and keep the stack as it is.
inline void pop_to_update(Op& pop) {
  pop.code = OpCode::Update;
}

struct Terminator {
  // PushJump and TailJump belong to the lowered form only. TailJump is a Jump into a callee's
  // entry that counts as a call but pushes nothing: the callee returns to the caller's caller.
  enum class Kind : uint8_t { Jump, Branch, Return, PushJump, TailJump };
  Kind kind = Kind::Return;
  VarId cond = -1;           // Branch: bool variable
  int32_t target = -1;       // Jump; Branch if true; PushJump, TailJump: callee entry
  int32_t target_else = -1;  // Branch if false; PushJump: block to return to
  SourceLoc loc;
};

struct Block {
  std::vector<Op> ops;
  Terminator term;
  SourceLoc loc;  // where the block starts in the source (a loop header, a branch arm, ...)
};

struct Var {
  std::string name;
  TypeId type = Types::kVoid;
  // The front end's variable for an expression's value: its name ("t3") is not the source's.
  bool temporary = false;
};

struct Function {
  std::string name;
  std::vector<Var> vars;
  std::vector<VarId> params;  // inputs, in order
  VarId result = -1;          // output variable; -1 for a function returning nothing
  std::vector<Block> blocks;  // blocks[0] is the entry
  SourceLoc loc;

  TypeId result_type() const { return result < 0 ? Types::kVoid : vars[result].type; }
};

// Read-only data shared by every lane, bound at run time.
struct Uniform {
  std::string name;
  TypeId type = Types::kVoid;
  SourceLoc loc;
};

struct Program {
  std::string file;  // source file name, for messages
  Types types;
  std::vector<Uniform> uniforms;
  std::vector<Function> functions;
  // The type of the values `emit` appends to each lane's output stream; kVoid when the program
  // never emits. One type per program, so a stream is an array of records.
  TypeId emit_type = Types::kVoid;
  SourceLoc emit_loc;  // the first emit, which fixed emit_type

  int find_function(const std::string& name) const;  // -1 if none
  int find_uniform(const std::string& name) const;   // -1 if none
};

// ---- Figure 4: the program-counter form -------------------------------------------------------

// Where a lowered variable lives at run time (Radul et al. §3.2, optimizations 2 and 3).
enum class Storage : uint8_t {
  Temp,      // never live across a block boundary: exists only while one block runs
  Register,  // one value per lane, updated under the mask; no stack
  Stacked,   // live across a call that may re-enter its function: a per-lane stack too
};
const char* storage_name(Storage s);

struct LoweredVar {
  std::string name;  // "function.variable"
  TypeId type = Types::kVoid;
  Storage storage = Storage::Register;
  int32_t function = -1;  // source function
  VarId source_var = -1;  // variable in that function; -1 for variables the lowering made
};

struct LoweredBlock {
  std::string name;       // "fib.b2", "fib.b0.ret1" for a call's continuation
  int32_t function = -1;  // source function
  std::vector<Op> ops;    // Call never appears; Push/Pop/Update may
  Terminator term;        // Jump, Branch, PushJump or Return
  SourceLoc loc;
};

struct LoweredProgram {
  const Program* source = nullptr;  // types, uniforms and names; must outlive this
  int32_t entry_function = -1;
  std::vector<LoweredVar> vars;
  std::vector<LoweredBlock> blocks;
  int32_t entry_block = 0;
  std::vector<VarId> inputs;  // the entry function's params, as lowered vars
  VarId output = -1;          // the entry function's result, as a lowered var; -1 if void

  // The PC value meaning "this lane has finished": one past the last block.
  int32_t exit_pc() const { return static_cast<int32_t>(blocks.size()); }
  const Types& types() const { return source->types; }
  int count(Storage s) const;
};

}  // namespace ab
