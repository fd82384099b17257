// The inside of a Module: the checked program, its entry function and its lowered form. The
// lowered program points into `program`, so an Impl never moves (it lives behind a unique_ptr).
#pragma once

#include "autobatch/module.h"
#include "ir/ir.h"

namespace ab {

struct Module::Impl {
  // A Module around a checked program (Module::compile; the white-box tests). `source_text` is
  // what it was compiled from; `entry` -1: a checked-only module (CompileOptions::entry empty).
  static std::shared_ptr<const Module> make(Program program, int entry, std::string source_text);

  Program program;
  int entry = -1;
  LoweredProgram lowered;
  std::string entry_name;
  std::string source_text;  // what was compiled: a trace (autobatch/trace.h) holds its hash
  std::vector<ValueInfo> inputs, uniforms;
  ValueInfo output, emit_record;
  std::vector<FunctionInfo> functions;
  std::vector<LoopInfo> loops;
  std::vector<CallInfo> calls;  // inline_calls' verdicts, for --explain
  std::vector<BlockInfo> blocks;
  std::vector<VariableInfo> variables;
  uint32_t register_words = 0;

  // Whether `batch` and `options` can run on the CPU `backend`: the batch's shape, the options
  // every backend refuses and the host memory the run needs to start (one message each).
  Status check_cpu_run(const Batch& batch, const RunOptions& options, CpuBackend backend) const;
  // The per-lane memory check_cpu_run counted, for the message when an allocation fails anyway.
  uint64_t cpu_bytes_per_lane(const RunOptions& options, CpuBackend backend) const;
};

}  // namespace ab
