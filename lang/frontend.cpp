// compile_source: lex, parse, make dependent bounds and transformed data functions, declare the top
// level, build every function, inline calls where that pays (inline_calls), turn reduction loops
// into array code (vectorize_loops), derive the gradients asked for, then join blocks
// (rotate_loops, merge_blocks).
#include "lang/frontend.h"

#include <exception>

#include "lang/dependent_bounds.h"
#include "lang/distributions.h"
#include "lang/function_builder.h"
#include "lang/globals.h"
#include "lang/lexer.h"
#include "lang/parser.h"
#include "lang/transformed_data.h"
#include "passes/differentiate.h"
#include "passes/inline_calls.h"
#include "passes/merge_blocks.h"
#include "passes/rotate_loops.h"
#include "passes/split_at_products.h"

namespace ab {

std::optional<Program> compile_source(const std::string& source, const std::string& file,
                                      Diagnostics& diags, const FrontendOptions& options) {
  const size_t errors_before = diags.errors().size();
  auto failed = [&] { return diags.errors().size() > errors_before; };
  try {
    const std::vector<frontend::Token> tokens = frontend::lex(source, diags);
    frontend::ast::Module module = frontend::parse(tokens, diags);
    // Type errors in a half-parsed file would mostly be echoes of the syntax errors.
    if (failed()) return std::nullopt;
    frontend::add_bound_functions(module, diags);  // before the library scans the calls
    frontend::add_transformed_data_functions(module, diags);
    if (failed()) return std::nullopt;
    frontend::add_library_functions(module);  // the loops of the random draws it calls

    Program program;
    program.file = file;
    frontend::Globals globals(module, program, diags);
    globals.set_reject_domain_errors(options.reject_domain_errors);
    globals.set_data_constants(&options.data_constants);
    globals.declare();
    program.functions.resize(module.functions.size());
    for (size_t i = 0; i < module.functions.size(); ++i)
      frontend::build_function(globals, module.functions[i], static_cast<int>(i), program, diags);
    if (failed()) return std::nullopt;
    transformed_data(program, &diags);  // its cycles and random draws, while calls are calls
    if (failed()) return std::nullopt;
    // Before vectorize_loops, so a loop calling a small function has a straight-line body.
    if (options.inline_calls) {
      std::vector<int> derived;
      for (const DerivativeRequest& r : globals.derivatives())
        derived.push_back(r.function);
      std::vector<CallVerdict> calls = inline_calls(program, derived, options.vectorize_loops);
      if (options.calls) *options.calls = std::move(calls);
    }
    // Before differentiate, so that a converted loop is derived as array code.
    if (options.vectorize_loops) {
      std::vector<LoopVerdict> loops = vectorize_loops(program);
      if (options.loops) *options.loops = std::move(loops);
    }
    if (!globals.derivatives().empty() &&
        !differentiate(program, static_cast<int>(module.functions.size()), globals.derivatives(),
                       diags))
      return std::nullopt;
    // Fewer, longer blocks for every backend: each block costs a scheduler step per lane.
    rotate_loops(program);
    merge_blocks(program);
    // A product in a block of its own, which Vulkan runs as a kernel of its own.
    split_at_products(program);
    return program;
  } catch (const std::exception& e) {
    // Never expected; reported rather than thrown so a caller's input can never crash it.
    diags.error(SourceLoc{}, std::string("internal error in the front end: ") + e.what());
    return std::nullopt;
  }
}

}  // namespace ab
