#include "autobatch/module.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/module_impl.h"
#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/diagnostics.h"
#include "ir/entry.h"
#include "ir/excerpt.h"
#include "ir/read_file.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "lang/frontend.h"
#include "passes/lower.h"

namespace ab {

static_assert(static_cast<int>(VariableInfo::Storage::Temp) == static_cast<int>(Storage::Temp) &&
                  static_cast<int>(VariableInfo::Storage::Register) ==
                      static_cast<int>(Storage::Register) &&
                  static_cast<int>(VariableInfo::Storage::Stacked) ==
                      static_cast<int>(Storage::Stacked),
              "autobatch/module.h's VariableInfo::Storage and ir/ir.h's Storage differ");

namespace {

bool matches(const std::string& pattern, const std::string& name) {
  if (!pattern.empty() && pattern.back() == '*')
    return name.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  return name == pattern;
}

// `program` with its functions in CompileOptions::functions_first's order and every Call
// renumbered to match.
Program order_functions(Program program, const std::vector<std::string>& first) {
  const size_t count = program.functions.size();
  std::vector<int> order;
  std::vector<bool> placed(count, false);
  const auto place = [&](const std::string* pattern) {
    for (size_t f = 0; f < count; ++f)
      if (!placed[f] && (!pattern || matches(*pattern, program.functions[f].name))) {
        placed[f] = true;
        order.push_back(static_cast<int>(f));
      }
  };
  for (const std::string& pattern : first)
    place(&pattern);
  place(nullptr);
  std::vector<int32_t> new_index(count);
  for (size_t i = 0; i < count; ++i)
    new_index[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
  std::vector<Function> functions;
  for (int f : order)
    functions.push_back(std::move(program.functions[static_cast<size_t>(f)]));
  // Calls and the locations inline_calls marked with the function they were written in.
  const auto renumber = [&](SourceLoc& loc) {
    if (loc.function >= 0) loc.function = new_index[static_cast<size_t>(loc.function)];
  };
  for (Function& fn : functions)
    for (Block& block : fn.blocks) {
      renumber(block.loc);
      renumber(block.term.loc);
      for (Op& op : block.ops) {
        renumber(op.loc);
        if (is_call(op)) op.index = new_index[static_cast<size_t>(op.index)];
      }
    }
  program.functions = std::move(functions);
  return program;
}

// The compiler checks its own output, always: a malformed program from a compiler bug is then one
// clear error at compile time instead of wrong numbers at run time (docs/architecture.md).
Status check_compiler_output(const std::string& file, const char* form, const Status& verified) {
  if (verified.ok()) return Ok{};
  const std::string& problems = verified.error();
  return Error{fmt::format(
      "{}: internal error: the compiler made an invalid {} program (a bug in autobatch; please "
      "report it with this file): {}",
      file, form, problems.substr(0, problems.find('\n')))};
}

}  // namespace

Module::Module(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Module::~Module() = default;

Expected<std::shared_ptr<const Module>> Module::compile(
    const std::string& source, const CompileOptions& options,
    std::vector<SourceDiagnostic>* diagnostics) {
  Diagnostics diags(options.file, source);
  std::vector<LoopVerdict> verdicts;
  FrontendOptions frontend;
  frontend.vectorize_loops = options.vectorize_loops;
  frontend.reject_domain_errors = options.reject_domain_errors;
  frontend.data_constants = options.data_constants;
  frontend.loops = &verdicts;
  std::vector<CallVerdict> call_verdicts;
  frontend.inline_calls = options.inline_calls;
  frontend.calls = &call_verdicts;
  std::optional<Program> program = compile_source(source, options.file, diags, frontend);
  if (diagnostics)
    for (const Diagnostic& d : diags.errors())
      diagnostics->push_back({options.file, d.loc.line, d.loc.col, d.message});
  if (!program || diags.has_errors()) {
    std::string message = diags.format();
    if (message.empty())
      message = fmt::format("{}: error: the program did not compile\n", options.file);
    return Error{std::move(message), true};
  }
  std::vector<LoopInfo> loops;
  for (const LoopVerdict& v : verdicts) {
    // A loop inline_calls copied is named by the function it was written in, once per verdict.
    LoopInfo loop{program->functions.at(static_cast<size_t>(written_in(v.loc, v.function))).name,
                  v.loc.line, v.loc.col, v.vectorised, v.reason};
    const bool seen = std::any_of(loops.begin(), loops.end(), [&](const LoopInfo& l) {
      return l.function == loop.function && l.line == loop.line && l.col == loop.col &&
             l.vectorised == loop.vectorised && l.reason == loop.reason;
    });
    if (!seen) loops.push_back(std::move(loop));
  }
  std::vector<CallInfo> calls;
  for (const CallVerdict& v : call_verdicts) {
    const auto name = [&](int f) {
      return f >= 0 && static_cast<size_t>(f) < program->functions.size()
                 ? program->functions[static_cast<size_t>(f)].name
                 : std::string("(derived)");
    };
    calls.push_back({name(v.caller), name(v.callee), v.loc.line, v.loc.col, v.inlined, v.reason});
  }
  if (!options.functions_first.empty())
    program = order_functions(std::move(*program), options.functions_first);
  if (Status ok = check_compiler_output(options.file, "typed", verify(*program)); !ok.ok())
    return Error{ok.error()};
  const int entry = options.entry.empty() ? -1 : program->find_function(options.entry);
  if (!options.entry.empty() && entry < 0)
    return Error{missing_entry_message(*program, excerpt(options.entry))};
  std::shared_ptr<const Module> module = Impl::make(std::move(*program), entry, source);
  module->impl_->loops = std::move(loops);
  module->impl_->calls = std::move(calls);
  if (entry < 0) return module;
  if (Status ok = check_compiler_output(options.file, "lowered", verify(module->impl_->lowered));
      !ok.ok())
    return Error{ok.error()};
  return module;
}

std::shared_ptr<const Module> Module::Impl::make(Program program, int entry,
                                                 std::string source_text) {
  auto impl = std::make_unique<Impl>();
  impl->program = std::move(program);
  impl->entry = entry;
  impl->source_text = std::move(source_text);
  const Program& p = impl->program;
  auto info = [&](std::string name, TypeId type) {
    return ValueInfo{std::move(name), p.types.to_string(type), p.types.words(type),
                     value_type(p.types, type)};
  };
  for (const Function& fn : p.functions) {
    FunctionInfo f{fn.name, {}, info("result", fn.result_type()), fn.loc.line, fn.loc.col};
    for (VarId v : fn.params)
      f.params.push_back(info(fn.vars[v].name, fn.vars[v].type));
    impl->functions.push_back(std::move(f));
  }
  impl->output = info("result", Types::kVoid);
  if (entry >= 0) {
    impl->entry_name = p.functions.at(entry).name;
    impl->lowered = lower(impl->program, impl->entry);
    impl->inputs = impl->functions[entry].params;
    impl->output = impl->functions[entry].result;
    for (const LoweredBlock& b : impl->lowered.blocks) {
      BlockInfo info{b.name, p.functions.at(b.function).name, b.loc.line, b.loc.col, {}};
      for (const Op& op : b.ops)
        if (op.loc.line > 0) info.lines.push_back(op.loc.line);
      if (b.term.loc.line > 0) info.lines.push_back(b.term.loc.line);
      if (info.lines.empty() && b.loc.line > 0) info.lines.push_back(b.loc.line);
      std::sort(info.lines.begin(), info.lines.end());
      info.lines.erase(std::unique(info.lines.begin(), info.lines.end()), info.lines.end());
      if (b.term.kind == Terminator::Kind::PushJump) {
        info.call_entry = b.term.target;
        info.call_return = b.term.target_else;
      }
      impl->blocks.push_back(std::move(info));
    }
    std::vector<TypeId> types;
    for (const LoweredVar& v : impl->lowered.vars)
      types.push_back(v.type);
    std::vector<uint32_t> offsets;
    impl->register_words = layout_words(p.types, types, offsets);
    for (size_t v = 0; v < impl->lowered.vars.size(); ++v) {
      const LoweredVar& var = impl->lowered.vars[v];
      impl->variables.push_back(
          {var.name, var.function >= 0 ? p.functions.at(var.function).name : "",
           value_type(p.types, var.type), static_cast<VariableInfo::Storage>(var.storage),
           var.source_var >= 0, offsets[v]});
    }
  }
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
const std::string& Module::source_text() const {
  return impl_->source_text;
}
const char* VariableInfo::storage_name(Storage s) {
  return ab::storage_name(static_cast<ab::Storage>(s));
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
bool Module::has_entry() const {
  return impl_->entry >= 0;
}
const std::vector<LoopInfo>& Module::loops() const {
  return impl_->loops;
}

const std::vector<CallInfo>& Module::calls() const {
  return impl_->calls;
}

const std::vector<FunctionInfo>& Module::functions() const {
  return impl_->functions;
}
std::string Module::ir_text() const {
  return print_ir(impl_->program);
}
std::string Module::lowered_ir_text() const {
  return has_entry() ? print_lowered(impl_->lowered) : std::string();
}
const std::vector<VariableInfo>& Module::variables() const {
  return impl_->variables;
}
uint32_t Module::register_words() const {
  return impl_->register_words;
}
const std::vector<BlockInfo>& Module::blocks() const {
  return impl_->blocks;
}
std::string Module::block_ir_text(int32_t block) const {
  if (!has_entry()) return {};
  return print_lowered_block(impl_->lowered, block);
}

Status Module::check(const Batch& batch) const {
  if (!has_entry())
    return Error{fmt::format("'{}' was compiled without an entry function: it cannot run",
                             impl_->program.file)};
  return check_batch(impl_->program, impl_->entry, batch);
}

uint64_t Module::Impl::cpu_bytes_per_lane(const RunOptions& options, CpuBackend backend) const {
  return backend == CpuBackend::Interpreter ? interp_bytes_per_lane(program, entry, options)
                                            : vm_bytes_per_lane(lowered, options);
}

Status Module::Impl::check_cpu_run(const Batch& batch, const RunOptions& options,
                                   CpuBackend backend) const {
  if (entry < 0)
    return Error{
        fmt::format("'{}' was compiled without an entry function: it cannot run", program.file)};
  if (Status fits = check_batch(program, entry, batch); !fits) return fits;
  if (Status valid = check_run_options(options); !valid) return valid;
  return check_host_memory(cpu_bytes_per_lane(options, backend), batch.lanes);
}

Expected<RunResult> Module::run_cpu(const Batch& batch, const RunOptions& options,
                                    CpuBackend backend) const {
  if (auto fits = impl_->check_cpu_run(batch, options, backend); !fits) return fits.failure();
  // The check above counted what a run needs to start; stacks grow as lanes recurse, and the
  // process's memory may run out anyway: nothing throws across the API.
  try {
    if (backend == CpuBackend::Interpreter)
      return run_interp(impl_->program, impl_->entry, batch, options);
    return run_vm(impl_->lowered, batch, options);
  } catch (const std::bad_alloc&) {
    return Error{out_of_host_memory(impl_->cpu_bytes_per_lane(options, backend), batch.lanes)};
  } catch (const std::length_error&) {
    return Error{out_of_host_memory(impl_->cpu_bytes_per_lane(options, backend), batch.lanes)};
  }
}

}  // namespace ab
