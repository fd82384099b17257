#include "ir/ir.h"

namespace ab {

int Program::find_function(const std::string& name) const {
  for (size_t i = 0; i < functions.size(); ++i)
    if (functions[i].name == name) return static_cast<int>(i);
  return -1;
}

int Program::find_uniform(const std::string& name) const {
  for (size_t i = 0; i < uniforms.size(); ++i)
    if (uniforms[i].name == name) return static_cast<int>(i);
  return -1;
}

const char* storage_name(Storage s) {
  switch (s) {
    case Storage::Temp:
      return "temp";
    case Storage::Register:
      return "register";
    case Storage::Stacked:
      return "stacked";
  }
  return "?";
}

int LoweredProgram::count(Storage s) const {
  int n = 0;
  for (const LoweredVar& v : vars)
    n += v.storage == s;
  return n;
}

}  // namespace ab
