#include "tools/program_loader.h"

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "ir/entry.h"
#include "ir/excerpt.h"
#include "ir/frontend/frontend.h"
#include "tools/file_io.h"

namespace ab::cli {

Expected<Program> load_program(const std::string& path) {
  auto source = read_file(path);
  if (!source) return source.failure();
  Diagnostics diags(path, *source);
  std::optional<Program> program = compile_source(*source, path, diags);
  if (!program || diags.has_errors()) {
    std::string message = diags.format();
    if (message.empty()) message = fmt::format("{}: error: the program did not compile\n", path);
    return Error{std::move(message), true};
  }
  return std::move(*program);
}

Expected<int> find_entry(const Program& program, const std::string& name) {
  const int index = program.find_function(name);
  if (index >= 0) return index;
  return Error{missing_entry_message(program, excerpt(name))};
}

}  // namespace ab::cli
