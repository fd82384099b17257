#include "support/samples.h"

#include <doctest/doctest.h>

#include "lang/frontend.h"
#include "passes/lower.h"

namespace ab::testing {

const SampleCase& sample_case(const std::string& file) {
  const SampleCase* found = samples::find_sample(file);
  if (!found) FAIL("no sample case for ", file);
  return *found;
}

std::string read_sample(const std::string& file) {
  const std::string* text = samples::sample_source(file);
  if (!text) {
    FAIL_CHECK("no sample ", file, " under samples/");
    return {};
  }
  return *text;
}

Program load_sample(const std::string& file) {
  const std::string source = read_sample(file);
  Diagnostics diags(file, source);
  std::optional<Program> program = compile_source(source, file, diags);
  if (!program) FAIL("sample ", file, " does not compile:\n", diags.format());
  return std::move(*program);
}

CompiledProgram compile_program(const std::string& source, const std::string& file,
                                const std::string& entry, const FrontendOptions& options) {
  Diagnostics diags(file, source);
  std::optional<Program> program = compile_source(source, file, diags, options);
  REQUIRE_MESSAGE(program.has_value(), diags.format());
  CompiledProgram c;
  c.program = std::move(*program);
  c.entry = c.program.find_function(entry);
  REQUIRE_MESSAGE(c.entry >= 0, file, " has no function ", entry);
  c.lowered = lower(c.program, c.entry);
  return c;
}

int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos) return 0;
  int line = 1;
  for (size_t i = 0; i < at; ++i)
    line += text[i] == '\n';
  return line;
}

}  // namespace ab::testing
