#include "tools/program_loader.h"

namespace ab::cli {

Expected<std::shared_ptr<const Module>> load_program(
    const std::string& path, const std::string& entry,
    const std::map<std::string, double>& data_constants) {
  CompileOptions options;
  options.file = path;
  options.entry = entry;
  options.data_constants = data_constants;
  return Module::load(path, std::move(options));
}

}  // namespace ab::cli
