#include "tools/commands.h"

#include <cstdio>

#include <fmt/format.h>

#include "autobatch/expected.h"
#include "autobatch/trace.h"
#include "autobatch/transformed_data.h"
#include "tools/backends.h"
#include "tools/mpi_ranks.h"
#include "tools/output_files.h"
#include "tools/program_loader.h"
#include "tools/report.h"
#include "tools/run_setup.h"
#include "tools/uniforms.h"

namespace ab::cli {

int report_error(const Error& error) {
  if (error.formatted)
    fmt::print(stderr, "{}", error.message);
  else
    fmt::print(stderr, "error: {}\n", error.message);
  return 1;
}

int check_command(const std::string& file, bool explain,
                  const std::vector<std::string>& data_files) {
  auto sizes = data_constants(data_files);
  if (!sizes) return report_error(sizes.failure());
  auto module = load_program(file, "", *sizes);
  if (!module) return report_error(module.failure());
  // The data given: the transformed data must compute from them (a fault there is the error).
  const std::vector<TransformedUniform> transformed = transformed_uniforms(**module);
  if (!data_files.empty() && !transformed.empty())
    if (auto bound = bind_uniforms(**module, {}, data_files); !bound)
      return report_error(bound.failure());
  const size_t functions = (*module)->functions().size();
  fmt::print("{}: ok ({} function{})\n", file, functions, functions == 1 ? "" : "s");
  if (explain)
    for (const LoopInfo& loop : (*module)->loops())
      fmt::print("{}:{}:{}: loop in {}: {}\n", file, loop.line, loop.col, loop.function,
                 loop.vectorised ? "vectorised" : "not vectorised: " + loop.reason);
  if (explain)
    for (const TransformedUniform& t : transformed)
      fmt::print("{}:{}:{}: uniform {}: transformed data, computed once when the data are bound\n",
                 file, t.line, t.col, t.name);
  if (explain)
    for (const CallInfo& call : (*module)->calls())
      fmt::print("{}:{}:{}: call of {} in {}: {}\n", file, call.line, call.col, call.callee,
                 call.caller, call.inlined ? "inlined" : "not inlined: " + call.reason);
  return 0;
}

int ir_command(const IrCommand& command) {
  // The whole program's IR needs no entry, but an --entry that names nothing is still a mistake.
  const bool needs_entry = command.lowered || command.entry_given;
  auto module = load_program(command.file, needs_entry ? command.entry : "");
  if (!module) return report_error(module.failure());
  fmt::print("{}", command.lowered ? (*module)->lowered_ir_text() : (*module)->ir_text());
  return 0;
}

int run_command(const RunCommand& command) {
  const Backend* backend = find_backend(command.backend);
  if (!backend) return report_error(Error{fmt::format("unknown backend '{}'", command.backend)});
  if (command.options.record_trace && !backend->has_step_trace) {
    fmt::print(stderr, "error: --trace-steps needs a backend with a step trace (vm), not '{}'\n",
               backend->name);
    return 2;
  }

  auto setup = set_up_run(command);
  if (const Ready ready = agree_to_run(bool(setup)); ready != Ready::Go)
    return ready == Ready::Report ? report_error(setup.failure()) : 1;
  const Module& module = *setup->module;
  const Batch& batch = setup->batch;
  const RunOptions& options = setup->options;
  DeviceOptions device = command.device;
  device.progress = command.format != "json";
  auto ran = run_over_ranks(*backend, setup->module, batch, options, device);
  if (!root_rank()) return ran || ran.error() == kSentToRoot ? 0 : report_error(ran.failure());
  if (!ran) return report_error(ran.failure());
  const BackendRun& run = *ran;

  if (!command.out_dir.empty()) {
    auto written = write_output_files(command.out_dir, module, batch.lanes, run.result);
    if (!written) return report_error(written.failure());
  }
  const RunReport report{module, batch, std::string(backend->name), run, options.record_trace};
  if (command.format == "json")
    fmt::print("{}\n", report_json(report).dump());
  else
    fmt::print("{}", report_table(report));
  if (!command.trace_out.empty()) {
    // Recorded on the CPU VM whatever the backend: a trace's checkpoints are VM states, and the
    // VM's steps are the ones the global schedule reproduces exactly, shard by shard when the
    // run was cut over devices or ranks.
    auto shards = shard_lanes(batch.lanes, device);
    if (!shards) return report_error(shards.failure());
    TraceOptions range;
    range.shard_lanes = std::move(*shards);
    if (ab::Status recorded = write_trace(command.trace_out, *setup->module, batch, options, range);
        !recorded)
      return report_error(Error{fmt::format("cannot record the trace: {}", recorded.error())});
    fmt::print(stderr, "trace written to {}\n", command.trace_out);
  }
  return 0;
}

}  // namespace ab::cli
