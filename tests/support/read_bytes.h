// A file's whole contents, for the tests that read back what a run wrote.
#pragma once

#include <filesystem>
#include <string>

namespace ab::testing {

// The bytes of `path` ("" when it cannot be read).
std::string read_bytes(const std::filesystem::path& path);

}  // namespace ab::testing
