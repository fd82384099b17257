#include "tools/file_io.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace ab::cli {

Expected<std::string> read_file(const std::string& path) {
  std::error_code ec;
  // An ifstream opens a directory without complaint on Linux, then reads nothing.
  if (std::filesystem::is_directory(path, ec))
    return fail(fmt::format("cannot read '{}': Is a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return fail(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  return contents.str();
}

Status write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return fail(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return fail(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  return ok_status();
}

}  // namespace ab::cli
