// Loading a program for a command: read the .ab file, compile it, and find the entry function.
// A file that cannot be read gives "cannot read 'x.ab': <reason>"; compile errors give the
// front end's formatted diagnostics (marked `formatted`, printed as they are).
#pragma once

#include <string>

#include "autobatch/expected.h"
#include "ir/ir.h"

namespace ab::cli {

Expected<Program> load_program(const std::string& path);

// The index of function `name`, or an error naming it and listing the program's functions.
Expected<int> find_entry(const Program& program, const std::string& name);

}  // namespace ab::cli
