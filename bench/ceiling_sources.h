// The GLSL of the ceiling kernels (bench/ceiling/*.glsl), embedded at configure time so the
// benchmark does not depend on the working directory.
#pragma once

#include <string>
#include <vector>

namespace ab::bench {

struct CeilingSource {
  std::string name;  // file name without ".glsl": "common" or a program's name
  std::string text;
};

const std::vector<CeilingSource>& ceiling_sources();

}  // namespace ab::bench
