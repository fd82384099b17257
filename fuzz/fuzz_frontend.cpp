// Fuzz target: .ab source text -> compile_source -> lower -> verify.
//
// Contract checked: the front end never crashes; it either returns a program and no errors, or no
// program and at least one error, never an "internal error"; whatever it accepts passes verify(),
// and lowers from every function (any function can be the entry, `--entry`) to a program that
// also passes verify().
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz/fuzz_support.h"
#include "ir/verify.h"
#include "lang/frontend.h"
#include "passes/lower.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ab::fuzz::contract_failed;
  const std::string source(reinterpret_cast<const char*>(data), size);
  ab::Diagnostics diags("fuzz.ab", source);
  const std::optional<ab::Program> program = ab::compile_source(source, "fuzz.ab", diags);
  // Formatting walks the source lines under each error's position, so it is part of the contract.
  (void)diags.format();
  for (const ab::Diagnostic& d : diags.errors())
    if (d.message.find("internal error") != std::string::npos) contract_failed(d.message);
  if (!program) {
    if (!diags.has_errors()) contract_failed("no program and no error");
    return 0;
  }
  if (diags.has_errors()) contract_failed("a program and errors");
  if (const ab::Status verified = ab::verify(*program); !verified)
    contract_failed("front end output fails verify: " + verified.error());
  for (size_t entry = 0; entry < program->functions.size(); ++entry) {
    const ab::LoweredProgram lowered = ab::lower(*program, static_cast<int>(entry));
    if (const ab::Status verified = ab::verify(lowered); !verified)
      contract_failed(fmt::format("lowered from '{}' fails verify: {}",
                                  program->functions[entry].name, verified.error()));
  }
  return 0;
}
