#include "tools/file_io.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "autobatch/user_input.h"

namespace ab::cli {

Expected<std::string> read_file(const std::string& path) {
  FileContents file = read_regular_file(path);
  if (!file.ok()) return Error{fmt::format("cannot read '{}': {}", path, file.error)};
  return std::move(file.bytes);
}

Status write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error{fmt::format("cannot write '{}': {}", path, std::strerror(errno))};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Error{fmt::format("cannot write '{}': {}", path, std::strerror(errno))};
  return Ok{};
}

}  // namespace ab::cli
