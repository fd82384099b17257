// A compiled autobatch program: .ab source text checked, lowered to the program-counter form and
// kept, immutable, behind a shared_ptr. A Module owns everything it refers to, so it can be kept
// as long as any program or run built from it needs it, and used from any thread.
//
// A Module also describes itself: its interface (inputs(), output(), uniforms(), emit_record(),
// each with its type as a ValueType), its functions, and the lowered program's blocks with their
// IR text, which is what `autobatch ir`, the step trace and the debugger's views show.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/value_type.h"

namespace ab {

struct CompileOptions {
  std::string file = "<source>";  // the file name diagnostics carry
  // The function every lane runs. Empty: none, the source is only checked; such a module
  // describes its functions() and ir_text() but has no interface, no blocks, and does not run.
  std::string entry = "main";
  // Functions whose blocks come first in the lowered program, in this order: names, or prefixes
  // ending in '*' (each takes the functions it matches that are not placed yet, in source order);
  // the rest follow in source order. Blocks are numbered in function order, and the min-pc
  // heuristic runs the waiting block with the smallest number, so this order is a scheduling
  // choice: `autobatch sample` puts the sampler ahead of the model so that every chain reaches
  // the next gradient before any evaluates it (docs/nuts.md).
  std::vector<std::string> functions_first = {};
  // Loops over data rows run as array code (docs/language.md, "Loops that run as array code"):
  // the same bits either way; off, every loop runs as written, one block per iteration (for
  // comparisons: tests, and the bench's `vm-loops` system).
  bool vectorize_loops = true;
  // Calls of small non-recursive functions run as the callee's blocks, with no step of their own
  // (docs/language.md, "Calls"): the same bits either way, fewer steps; off, every call stays a
  // call.
  bool inline_calls = true;
  // Stan's rejection: a log density's argument out of its domain (`normal_lpdf: sigma must be >
  // 0`) makes that density NaN instead of faulting the lane. The sampler compiles its models so
  // (a NaN density is a divergence, docs/nuts.md); off, the lane faults naming the argument.
  bool reject_domain_errors = false;
  // The values of the constants a program declares `const N: int = data;` (Stan's sizes read
  // from the data, docs/language.md "Declarations"): the program is compiled for them. Names no
  // such declaration has are ignored (a data file's other entries); a declaration whose value
  // is missing is a compile error at its line.
  std::map<std::string, double> data_constants = {};
};

// A call of the source and whether it was inlined (`autobatch check --explain`).
struct CallInfo {
  std::string caller, callee;
  int line = 0, col = 0;  // the call
  bool inlined = false;
  std::string reason;  // why not, when not
};

// A loop of the source and whether it runs as array code (`autobatch check --explain`).
struct LoopInfo {
  std::string function;
  int line = 0, col = 0;  // the `for` or `while` statement
  bool vectorised = false;
  std::string reason;  // why not, when not
};

// One compile error, as a value: where it is and what is wrong.
struct SourceDiagnostic {
  std::string file;
  int line = 0;  // 1-based; 0 when the error has no place
  int col = 0;
  std::string message;
};

// A value crossing the API (an input, the output, a uniform, an emitted record).
struct ValueInfo {
  std::string name;
  std::string type;      // source spelling: "int", "float[3]", "Agent"
  uint32_t words = 0;    // 32-bit words one lane's value takes; 0 for none (a void output)
  ValueType value_type;  // the type itself: its scalars, dimensions and fields
};

// A function of the checked program, in source order.
struct FunctionInfo {
  std::string name;
  std::vector<ValueInfo> params;
  ValueInfo result;       // named "result"; void (words 0) for a function that returns nothing
  int line = 0, col = 0;  // where it is declared (1-based)
};

// A block of the lowered (program-counter) program: its index is the PC value that names it
// (RunStats::block_executions, TraceStep::block, BatchSnapshot::pc); one past the last block is
// the exit PC of a lane that has finished.
struct BlockInfo {
  std::string name;       // "fib.b2"; "fib.b0.ret1" for a call's continuation
  std::string function;   // the source function it came from
  int line = 0, col = 0;  // where the block starts in the source; 0 when unknown
  // The source lines its code comes from (its ops' and its terminator's), sorted, each once;
  // just `line` for a block with none.
  std::vector<int> lines;
  // A block that ends in a call: the callee's entry block, and the block the call returns to
  // (a lane's PC stack holds the latter while the callee runs); -1 otherwise. A tail call
  // returns to the caller's own return block, so it shows as a jump, not a call.
  int32_t call_entry = -1, call_return = -1;
};

// A variable of the lowered program: what a lane keeps between blocks (and, for Temp, within
// one). Every lane's registers hold every variable, packed in this order (VmSession::registers(),
// BatchSnapshot::registers).
struct VariableInfo {
  // Where it lives at run time (Radul et al. 2020, section 3.2): Temp only while one block runs;
  // Register one value per lane; Stacked also a per-lane stack, being live across a call that
  // may re-enter its function (BatchSnapshot::stacks).
  enum class Storage : uint8_t { Temp, Register, Stacked };
  static const char* storage_name(Storage s);  // "temp", "register", "stacked"
  std::string name;                            // "function.variable"
  std::string function;                        // the source function it belongs to
  ValueType value_type;
  Storage storage = Storage::Register;
  bool from_source = false;  // declared by the program (a parameter, a `var`), not the lowering's
  uint32_t offset = 0;       // its first word in a lane's registers
};

enum class CpuBackend : uint8_t {
  Interpreter,  // one lane at a time, the Figure 2 IR: the oracle every backend is tested against
  Vm,           // the batched program-counter VM (Radul et al. 2020, Algorithm 2) on the CPU
};

class Module {
 public:
  struct Impl;
  // Compiles `source`. On failure the error holds every diagnostic, formatted
  // "file:line:col: error: message" with the source line and a caret, and `diagnostics` (when
  // given) receives them one by one.
  static Expected<std::shared_ptr<const Module>> compile(
      const std::string& source, const CompileOptions& options = {},
      std::vector<SourceDiagnostic>* diagnostics = nullptr);
  // Reads `path` and compiles it (options.file defaults to the path).
  static Expected<std::shared_ptr<const Module>> load(
      const std::string& path, CompileOptions options = {},
      std::vector<SourceDiagnostic>* diagnostics = nullptr);
  ~Module();

  const std::string& file() const;
  const std::string& source_text() const;  // what was compiled
  const std::string& entry() const;
  const std::vector<ValueInfo>& inputs() const;    // the entry function's parameters
  const ValueInfo& output() const;                 // its result
  const std::vector<ValueInfo>& uniforms() const;  // in declaration order
  const ValueInfo& emit_record() const;            // words 0 when the program never emits
  bool has_entry() const;  // false when compiled with an empty CompileOptions::entry
  const std::vector<FunctionInfo>& functions() const;
  // Every loop of the source's functions, in source order, with whether it runs as array code;
  // empty when compiled with CompileOptions::vectorize_loops off.
  const std::vector<LoopInfo>& loops() const;
  // Every call of the source (as Figure 2 has it before lowering) and whether it was inlined;
  // empty when compiled with CompileOptions::inline_calls off.
  const std::vector<CallInfo>& calls() const;

  // The program as `autobatch ir` prints it: every function in the control-flow-graph form
  // (Radul et al. 2020, Figure 2), in a text that the IR parser reads back.
  std::string ir_text() const;
  // The lowered, program-counter form (Figure 4) as `autobatch ir --lowered` prints it; empty
  // without an entry.
  std::string lowered_ir_text() const;
  // The lowered program's blocks, in PC order (empty without an entry).
  const std::vector<BlockInfo>& blocks() const;
  // One block of lowered_ir_text(): its header line, ops and terminator; "" if out of range.
  std::string block_ir_text(int32_t block) const;
  // The lowered program's variables (empty without an entry), and the words of a lane's
  // registers, which hold them all.
  const std::vector<VariableInfo>& variables() const;
  uint32_t register_words() const;

  // Whether `batch` fits the entry function and the uniforms; the error names the first that
  // does not.
  Status check(const Batch& batch) const;
  // Runs the batch on the CPU.
  Expected<RunResult> run_cpu(const Batch& batch, const RunOptions& options = {},
                              CpuBackend backend = CpuBackend::Vm) const;

  // The engine's own view (ir/ types); not for host applications.
  const Impl& impl() const { return *impl_; }

 private:
  explicit Module(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ab
