// The inside of a Module: the checked program, its entry function and its lowered form. The
// lowered program points into `program`, so an Impl never moves (it lives behind a unique_ptr).
#pragma once

#include "autobatch/module.h"
#include "ir/ir.h"

namespace ab {

struct Module::Impl {
  Program program;
  int entry = -1;
  LoweredProgram lowered;
  std::string entry_name;
  std::string source_text;  // what was compiled: a trace (autobatch/trace.h) holds its hash
  std::vector<ValueInfo> inputs, uniforms;
  ValueInfo output, emit_record;
};

}  // namespace ab
