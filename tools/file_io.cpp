#include "tools/file_io.h"

#include <fmt/format.h>

#include "autobatch/user_input.h"

namespace ab::cli {

Expected<std::string> read_file(const std::string& path) {
  FileContents file = read_regular_file(path);
  if (!file.ok()) return Error{fmt::format("cannot read '{}': {}", path, file.error)};
  return std::move(file.bytes);
}

Status write_file(const std::string& path, std::string_view bytes) {
  const std::string error = write_whole_file(path, {bytes});
  if (!error.empty()) return Error{fmt::format("cannot write '{}': {}", path, error)};
  return Ok{};
}

}  // namespace ab::cli
