// A fresh directory under the system temp directory for one test, removed at scope exit. Named
// by process and instance, so test cases that ctest runs side by side never share one.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ab::testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix) {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           fmt::format("{}_{}_{}", prefix, ::getpid(), counter++);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // The path of `name` in the directory.
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Writes `bytes` to `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
    return file(name);
  }
};

}  // namespace ab::testing
