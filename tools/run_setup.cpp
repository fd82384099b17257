#include "tools/run_setup.h"

#include "tools/inputs.h"
#include "tools/program_loader.h"
#include "tools/uniforms.h"

namespace ab::cli {

Expected<RunSetup> set_up_run(const RunCommand& command) {
  RunSetup setup;
  auto sizes = data_constants(command.data_files);
  if (!sizes) return sizes.failure();
  auto module = load_program(command.file, command.entry, *sizes);
  if (!module) return module.failure();
  setup.module = std::move(*module);
  const Module& checked = *setup.module;

  auto inputs = build_inputs(checked.entry(), checked.inputs(),
                             {command.inputs, command.batch, command.options.seed});
  if (!inputs) return inputs.failure();
  auto uniforms = bind_uniforms(checked, command.uniforms, command.data_files);
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
