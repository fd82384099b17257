#include "tools/run_setup.h"

#include "tools/file_io.h"
#include "tools/inputs.h"
#include "tools/program_loader.h"
#include "tools/uniforms.h"

namespace ab::cli {

Expected<RunSetup> set_up_run(const RunCommand& command) {
  RunSetup setup;
  auto program = load_program(command.file);
  if (!program) return program.failure();
  setup.program = std::move(*program);
  auto text = read_file(command.file);  // read again for the text traces hash
  if (!text) return text.failure();
  setup.source_text = std::move(*text);
  auto entry = find_entry(setup.program, command.entry);
  if (!entry) return entry.failure();
  setup.entry = *entry;

  auto inputs = build_inputs(setup.program, setup.entry,
                             {command.inputs, command.batch, command.options.seed});
  if (!inputs) return inputs.failure();
  auto uniforms = bind_uniforms(setup.program, command.uniforms);
  if (!uniforms) return uniforms.failure();
  setup.batch.lanes = inputs->lanes;
  setup.batch.inputs = std::move(inputs->columns);
  setup.batch.uniforms = std::move(*uniforms);
  if (std::string problem = check_batch(setup.program, setup.entry, setup.batch); !problem.empty())
    return Error{problem};

  setup.options = command.options;
  setup.options.heuristic =
      command.heuristic == "most-lanes" ? Heuristic::MostLanes : Heuristic::MinPc;
  return setup;
}

}  // namespace ab::cli
