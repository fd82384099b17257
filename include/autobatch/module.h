// A compiled autobatch program: .ab source text checked, lowered to the program-counter form and
// kept, immutable, behind a shared_ptr. A Module owns everything it refers to, so it can be kept
// as long as any program or run built from it needs it, and used from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"

namespace ab {

struct CompileOptions {
  std::string file = "<source>";  // the file name diagnostics carry
  std::string entry = "main";     // the function every lane runs
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
  std::string type;    // source spelling: "int", "float[3]", "Agent"
  uint32_t words = 0;  // 32-bit words one lane's value takes; 0 for none (a void output)
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
  const std::string& entry() const;
  const std::vector<ValueInfo>& inputs() const;    // the entry function's parameters
  const ValueInfo& output() const;                 // its result
  const std::vector<ValueInfo>& uniforms() const;  // in declaration order
  const ValueInfo& emit_record() const;            // words 0 when the program never emits
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
