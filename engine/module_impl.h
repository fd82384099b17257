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
  std::vector<BlockInfo> blocks;
  std::vector<VariableInfo> variables;
  uint32_t register_words = 0;
};

}  // namespace ab
