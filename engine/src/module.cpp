#include "autobatch/module.h"

#include <fmt/format.h>

#include "engine/module_impl.h"
#include "ir/backends/interp.h"
#include "ir/backends/vm.h"
#include "ir/diagnostics.h"
#include "ir/entry.h"
#include "ir/frontend/frontend.h"
#include "ir/passes/lower.h"
#include "ir/read_file.h"

namespace ab {

Module::Module(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Module::~Module() = default;

Expected<std::shared_ptr<const Module>> Module::compile(
    const std::string& source, const CompileOptions& options,
    std::vector<SourceDiagnostic>* diagnostics) {
  Diagnostics diags(options.file, source);
  std::optional<Program> program = compile_source(source, options.file, diags);
  if (diagnostics)
    for (const Diagnostic& d : diags.errors())
      diagnostics->push_back({options.file, d.loc.line, d.loc.col, d.message});
  if (!program || diags.has_errors()) {
    std::string message = diags.format();
    if (message.empty())
      message = fmt::format("{}: error: the program did not compile\n", options.file);
    return Error{std::move(message)};
  }
  const int entry = program->find_function(options.entry);
  if (entry < 0) return Error{missing_entry_message(*program, options.entry)};
  return Impl::make(std::move(*program), entry, source);
}

std::shared_ptr<const Module> Module::Impl::make(Program program, int entry,
                                                 std::string source_text) {
  auto impl = std::make_unique<Impl>();
  impl->program = std::move(program);
  impl->entry = entry;
  impl->entry_name = impl->program.functions.at(entry).name;
  impl->source_text = std::move(source_text);
  impl->lowered = lower(impl->program, impl->entry);
  const Program& p = impl->program;
  const Function& fn = p.functions[impl->entry];
  auto info = [&](std::string name, TypeId type) {
    return ValueInfo{std::move(name), p.types.to_string(type), p.types.words(type)};
  };
  for (VarId v : fn.params)
    impl->inputs.push_back(info(fn.vars[v].name, fn.vars[v].type));
  impl->output = info("result", fn.result_type());
  for (const Uniform& u : p.uniforms)
    impl->uniforms.push_back(info(u.name, u.type));
  impl->emit_record = info("emit", p.emit_type);
  return std::shared_ptr<const Module>(new Module(std::move(impl)));
}

Expected<std::shared_ptr<const Module>> Module::load(const std::string& path,
                                                     CompileOptions options,
                                                     std::vector<SourceDiagnostic>* diagnostics) {
  FileContents file = read_regular_file(path);
  if (!file.ok()) return Error{fmt::format("cannot read '{}': {}", path, file.error)};
  if (options.file == CompileOptions{}.file) options.file = path;
  return compile(file.bytes, options, diagnostics);
}

const std::string& Module::file() const {
  return impl_->program.file;
}
const std::string& Module::entry() const {
  return impl_->entry_name;
}
const std::vector<ValueInfo>& Module::inputs() const {
  return impl_->inputs;
}
const ValueInfo& Module::output() const {
  return impl_->output;
}
const std::vector<ValueInfo>& Module::uniforms() const {
  return impl_->uniforms;
}
const ValueInfo& Module::emit_record() const {
  return impl_->emit_record;
}

Status Module::check(const Batch& batch) const {
  std::string problem = check_batch(impl_->program, impl_->entry, batch);
  if (!problem.empty()) return Error{std::move(problem)};
  return Ok{};
}

Expected<RunResult> Module::run_cpu(const Batch& batch, const RunOptions& options,
                                    CpuBackend backend) const {
  if (auto fits = check(batch); !fits) return Error{fits.error()};
  if (backend == CpuBackend::Interpreter)
    return run_interp(impl_->program, impl_->entry, batch, options);
  return run_vm(impl_->lowered, batch, options);
}

}  // namespace ab
