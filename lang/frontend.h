// The front end: .ab source text -> typed Figure 2 IR (ir/ir.h).
//
// Lexes, parses, type-checks and lowers structured control flow (if/while/for/break/continue,
// short-circuit && and ||) to basic blocks. Reports every syntax and type error it can find as
// a Diagnostic with a precise line:col; never throws or crashes on any input.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "ir/diagnostics.h"
#include "ir/ir.h"
#include "passes/inline_calls.h"
#include "passes/vectorize_loops.h"

namespace ab {

struct FrontendOptions {
  // Runs inline_calls first. Off: every call stays a call (tests compare the two bit for bit).
  bool inline_calls = true;
  // When set, receives the pass's verdict on each call of the source (`--explain`).
  std::vector<CallVerdict>* calls = nullptr;
  // Runs vectorize_loops before the gradients are derived. Off: every loop stays a loop (tests
  // compare the two forms bit for bit; the bench measures what the pass buys).
  bool vectorize_loops = true;
  // A log density's argument out of its domain (`normal_lpdf: sigma must be > 0`) makes the
  // density NaN instead of faulting the lane: Stan's rejection, which the sampler counts as a
  // divergence (docs/nuts.md, "A density's domain error"). Random draws keep faulting.
  bool reject_domain_errors = false;
  // The values of the constants declared `const N: int = data;` (Stan's sizes read from the
  // data): the program is compiled for them. A name no such declaration has is ignored; a
  // declaration without its value here is an error at its line.
  std::map<std::string, double> data_constants;
  // When set, receives the pass's verdict on each loop of the source (`--explain`).
  std::vector<LoopVerdict>* loops = nullptr;
};

// Compiles `source` (named `file` in messages). Returns the program, or nullopt with the errors
// in `diags`. The returned program passes verify().
std::optional<Program> compile_source(const std::string& source, const std::string& file,
                                      Diagnostics& diags, const FrontendOptions& options = {});

}  // namespace ab
