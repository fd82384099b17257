#include "tools/program_loader.h"

namespace ab::cli {

Expected<std::shared_ptr<const Module>> load_program(const std::string& path,
                                                     const std::string& entry) {
  CompileOptions options;
  options.file = path;
  options.entry = entry;
  return Module::load(path, std::move(options));
}

}  // namespace ab::cli
