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
  auto text = read_file(command.file);  // read again for the text traces hash
  if (!text) return text.failure();
  setup.source_text = *text;
  auto entry = find_entry(*program, command.entry);
  if (!entry) return entry.failure();
  setup.module = Module::Impl::make(std::move(*program), *entry, std::move(*text));
  const Program& checked = setup.program();

  auto inputs =
      build_inputs(checked, setup.entry(), {command.inputs, command.batch, command.options.seed});
  if (!inputs) return inputs.failure();
  auto uniforms = bind_uniforms(checked, command.uniforms);
  if (!uniforms) return uniforms.failure();
  setup.batch.lanes = inputs->lanes;
  setup.batch.inputs = std::move(inputs->columns);
  setup.batch.uniforms = std::move(*uniforms);
  if (ab::Status fits = setup.module->check(setup.batch); !fits) return Error{fits.error()};

  setup.options = command.options;
  setup.options.heuristic =
      command.heuristic == "most-lanes" ? Heuristic::MostLanes : Heuristic::MinPc;
  return setup;
}

}  // namespace ab::cli
