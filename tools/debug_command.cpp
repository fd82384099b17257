// `autobatch debug`: opens the visual debugger (debugger/debugger.h) on a live run of a program,
// on the CPU VM or the Vulkan engine, or on a recorded .abtrace trace.
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "debugger/debugger.h"
#include "tools/commands.h"
#include "tools/run_setup.h"

namespace ab::cli {
namespace {

// A trace by its name or, whatever its name, by the magic its header starts with.
bool is_trace_file(const std::string& path) {
  if (path.ends_with(".abtrace")) return true;
  // Only a regular file is opened to look: opening a FIFO would block. Anything else is then
  // refused, with its reason, by the program reader.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == sizeof magic &&
         std::string(magic, sizeof magic) == std::string("ABTRACE\0", 8);
}

}  // namespace

int debug_command(const DebugCommand& command) {
  debugger::DebuggerOptions options;
  options.script_path = command.script;
  options.force_window = command.window;
  options.checkpoint_interval = command.checkpoint_interval;
  if (is_trace_file(command.run.file)) {
    if (command.run_options_given)
      return report_error(Error{fmt::format(
          "'{}' is a trace: it holds its own batch and run options (give only --source, "
          "--script, --window, --checkpoint-interval)",
          command.run.file)});
    options.trace_path = command.run.file;
    options.source_path = command.source;
    return debugger::run_debugger(options);
  }
  if (!command.source.empty())
    return report_error(Error{"--source is for traces; a program is its own source"});
  const Backend* backend = find_backend(command.run.backend);
  if (!backend || (backend->name != "vm" && backend->name != "vulkan"))
    return report_error(
        Error{fmt::format("the debugger runs on vm or vulkan, not '{}'", command.run.backend)});

  auto setup = set_up_run(command.run);
  if (!setup) return report_error(setup.failure());
  std::optional<VulkanOptions> vulkan;
  if (backend->name == "vulkan") {
    // A debugger step is clearest as one batch-wide scheduler step: global unless asked.
    DeviceOptions device = command.run.device;
    if (!device.schedule) device.schedule = Schedule::Global;
    // and a local step is clearest as one min-PC choice per subgroup, the group view's subject.
    if (!device.local_scope) device.local_scope = LocalScope::Subgroup;
    vulkan = vulkan_options(device);
  }
  options.target =
      debugger::DebugTarget{command.run.file, setup->module, &setup->batch, setup->options, vulkan};
  return debugger::run_debugger(options);
}

}  // namespace ab::cli
