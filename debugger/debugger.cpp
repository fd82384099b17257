#include "debugger/debugger.h"

#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sstream>

#include "autobatch/user_input.h"
#include "debugger/script.h"
#include "debugger/ui_window.h"
#include "debugger/vulkan_source.h"

namespace ab::debugger {

Expected<std::unique_ptr<Session>> Session::open(const DebuggerOptions& o,
                                                 std::shared_ptr<VulkanContext> context) {
  std::unique_ptr<Session> s(new Session());
  TimelineOptions timeline;
  timeline.interval = o.checkpoint_interval;
  if (o.target) {
    const DebugTarget& t = *o.target;
    if (!t.module || !t.batch) return Error{"no program to debug"};
    s->module_ = t.module;
    s->batch_ = *t.batch;
    s->options_ = t.options;
    if (Status fits = t.module->check(s->batch_); !fits) return Error{fits.error()};
    ProgramInfo info{t.path, t.module->source_text(), t.module};
    std::unique_ptr<ExecutionSource> source;
    if (t.vulkan) {
      auto opened = VulkanSource::open(t.module, s->batch_, s->options_, *t.vulkan, context);
      if (!opened) return Error{opened.error()};
      source = std::move(*opened);
    } else {
      auto created = VmSource::create(info, s->batch_, s->options_);
      if (!created) return Error{created.error()};
      source = std::move(*created);
    }
    s->title_ = fmt::format("{} - {} lanes - {}", t.path, s->batch_.lanes, source->describe());
    s->model_ = std::make_unique<DebuggerModel>(std::move(source), timeline);
    return s;
  }
  if (o.trace_path.empty()) return Error{"nothing to debug: give a program or a trace"};
  auto header = read_trace_header(o.trace_path);
  if (!header) return Error{header.error()};
  const TraceHeader& h = *header;
  const std::string source_path = o.source_path.empty() ? h.source_path : o.source_path;
  FileContents source_file = read_regular_file(source_path);
  if (!source_file.ok())
    return Error{fmt::format("cannot read '{}', the program of trace '{}': {}{}", source_path,
                             o.trace_path, source_file.error,
                             o.source_path.empty() ? " (give it with --source)" : "")};
  const std::string* text = &source_file.bytes;
  if (Status fits = check_trace_source(h, o.trace_path, source_path, *text); !fits)
    return Error{fits.error()};
  auto read = TraceFile::read(o.trace_path);
  if (!read) return Error{read.error()};
  s->trace_ = std::move(*read);
  std::vector<SourceDiagnostic> diagnostics;
  CompileOptions compile;
  compile.file = source_path;
  compile.entry = s->trace_->entry();
  auto module = Module::compile(*text, compile, &diagnostics);
  if (!module)  // without diagnostics the program compiled but lacks the entry
    return Error{diagnostics.empty() ? fmt::format("the trace's entry function '{}' is not in '{}'",
                                                   s->trace_->entry(), source_path)
                                     : module.error()};
  s->module_ = *module;
  s->batch_ = s->trace_->batch();
  s->options_ = s->trace_->options();
  auto source = TraceSource::open(s->trace_, ProgramInfo{source_path, *text, s->module_});
  if (!source) return Error{source.error()};
  s->model_ = std::make_unique<DebuggerModel>(std::move(*source), timeline);
  s->title_ = fmt::format("{} - trace {} - {} lanes", source_path, o.trace_path, s->batch_.lanes);
  return s;
}

Status Session::save_trace(const std::string& path, uint64_t first, uint64_t last) {
  Timeline& timeline = model_->timeline();
  const uint64_t here = timeline.position();
  // A sharded trace's replay steps its shards apart: a saved range of it does too.
  TraceRange range{first, last, 1024, trace_ ? trace_->shard_lanes() : std::vector<uint32_t>{}};
  const Status recorded = record_trace(timeline, batch_, options_, range, path);
  timeline.seek(here);
  return recorded;
}

int run_debugger(const DebuggerOptions& options) {
  // Read before the session opens, which may run a large batch: a bad script fails at once.
  std::string script;
  if (!options.script_path.empty()) {
    FileContents file = read_regular_file(options.script_path);
    if (!file.ok()) {
      std::cerr << fmt::format("error: cannot read script '{}': {}\n", options.script_path,
                               file.error);
      return 1;
    }
    script = std::move(file.bytes);
  }
  const bool window =
      options.script_path.empty() || options.force_window || script_needs_window(script);
  auto report = [](const std::string& e) {
    std::cerr << "error: " << e << (e.ends_with('\n') ? "" : "\n");
    return 1;
  };
  if (!window) {
    // No window, no device of its own: a Vulkan session creates the engine's.
    auto opened = Session::open(options);
    if (!opened) return report(opened.error());
    Session& session = **opened;
    ScriptHooks hooks;
    hooks.save_trace = [&](const std::string& path, uint64_t first, uint64_t last) {
      return session.save_trace(path, first, last);
    };
    return run_script(session.model(), script, options.script_path, hooks, std::cout, std::cerr);
  }
  WindowOptions w;
  w.width = options.width;
  w.height = options.height;
  w.script = script;
  w.script_name = options.script_path;
  if (options.target && options.target->vulkan) {
    w.validation = options.target->vulkan->context.validation;
    w.device_index = options.target->vulkan->context.device_index;
    w.engine = true;
  }
  // The session opens on the window's device, once the window has one.
  return run_window(
      [&](std::shared_ptr<VulkanContext> context) {
        return Session::open(options, std::move(context));
      },
      w);
}

}  // namespace ab::debugger
