// Lane predicates: the filter typed in the lane grid's header or given to the script's `filter`
// command, e.g. `n > 15 && depth < 4`, evaluated over every lane of the current state.
//
//   expr    := or
//   or      := and ('||' and)*
//   and     := not ('&&' not)*
//   not     := '!' not | compare
//   compare := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum)?
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '/' | '%') unary)*
//   unary   := '-' unary | '(' expr ')' | NUMBER | true | false | NAME
//
// Names: `depth` (call depth; 0 once finished), `block` and `pc` (the block the lane waits at, as
// its index; compare it with a block name: `block == fib.b3.ret0`), `lane` (its index), `fault`
// (1 if faulted), `finished` (1 if finished without a fault), `live` (neither), a block name
// (its index), or a variable. A source variable name (`n`) reads the variable of that name in the
// function the lane is in now (its current frame); a lane whose function has none, or that has
// finished or faulted, has no value, and every comparison with it is false. So has a lane waiting
// at a call's return block for a stacked variable (one live across a recursive call): its
// register still holds the callee's value, and the caller's is on the stack until the block pops
// it. A lowered name (`fib.n`) reads that variable's register in every lane. Values are numbers (a
// variable's first scalar, as the colouring reads it); a condition holds when it is non-zero.
//
// A bad expression is an error that names the column of the bad token; nothing is evaluated.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab::debugger {

class ExecutionSource;

// The per-lane state the views read: the source's current vectors.
struct LaneState {
  const Module* module = nullptr;
  uint32_t lanes = 0;
  int32_t exit_pc = 0;  // a finished lane's PC
  const int32_t* pcs = nullptr;
  const uint32_t* depths = nullptr;
  const uint8_t* faulted = nullptr;
  const uint32_t* registers = nullptr;  // [lane * stride + word]
  size_t stride = 0;
  // Set when `registers` holds only some variables (a compact copy): [variable] its first word
  // there. Unset: the module's VariableInfo::offset.
  const uint32_t* offsets = nullptr;
  uint32_t offset_of(int32_t variable) const {
    return offsets ? offsets[variable] : module->variables()[variable].offset;
  }

  bool is_faulted(uint32_t lane) const { return faulted[lane] != 0; }
  bool is_finished(uint32_t lane) const { return !faulted[lane] && pcs[lane] == exit_pc; }
  bool is_live(uint32_t lane) const { return !faulted[lane] && pcs[lane] != exit_pc; }
};
LaneState lane_state(const ExecutionSource& source);

// A variable as the filter, the grouping and the colouring read it (see above): a lowered name
// reads one register in every lane, a source name the variable of the lane's current function.
class VariableReader {
 public:
  // Fails, naming the variables that can be read, for a name that is neither.
  static Expected<VariableReader> resolve(const Module& module, const std::string& name);
  const std::string& name() const { return name_; }
  // NaN when the lane has no such variable now.
  double read(const LaneState& state, uint32_t lane) const;
  // Adds the variables it may read (indices into the module's variables).
  void used(std::vector<int32_t>& variables) const;

 private:
  std::string name_;
  int32_t fixed_ = -1;              // a lowered variable's index, or
  std::vector<int32_t> per_block_;  // [pc] the variable of that block's function, -1 none
};

class LaneFilter {
 public:
  // Parses `text` against the module's names. Errors read "column C: ...", counting from the
  // first character that is not a blank.
  static Expected<LaneFilter> parse(std::string_view text, const Module& module);
  const std::string& text() const { return text_; }
  bool reads_variables() const { return variables_ && !variables_->empty(); }
  void used(std::vector<int32_t>& variables) const;  // the variables it reads

  // match[lane] = 1 for each lane it holds for, else 0; returns how many hold.
  uint32_t evaluate(const LaneState& state, std::vector<uint8_t>& match) const;
  // Whether it holds for any of `lanes`.
  bool any(const LaneState& state, const std::vector<uint32_t>& lanes) const;

  struct Node;

 private:
  // Evaluates the lanes lanes[0..count) into `out` (1 or 0 each).
  void evaluate_chunk(const LaneState& state, const uint32_t* lanes, uint32_t count,
                      std::vector<std::vector<double>>& scratch, uint8_t* out) const;

  std::string text_;
  std::shared_ptr<const std::vector<Node>> nodes_;  // children before parents; the root last
  std::shared_ptr<const std::vector<VariableReader>> variables_;
};

}  // namespace ab::debugger
