// Shared by the fuzz targets: how a target reports a broken contract. libFuzzer treats an abort
// as a crash and saves the input, so a contract failure is found and kept like a sanitizer report.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ab::fuzz {

[[noreturn]] inline void contract_failed(std::string_view what) {
  fmt::print(stderr, "fuzz: contract broken: {}\n", what);
  std::fflush(stderr);
  std::abort();
}

}  // namespace ab::fuzz
