#include "support/read_bytes.h"

#include <fstream>
#include <sstream>

namespace ab::testing {

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace ab::testing
