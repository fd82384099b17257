// Loading a program for a command: read the .ab file and compile it into a Module, checking its
// entry function. A file that cannot be read gives "cannot read 'x.ab': <reason>"; compile errors
// give the front end's formatted diagnostics (marked `formatted`, printed as they are); a missing
// entry names it and lists the program's functions.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab::cli {

// `entry` empty: the program is only checked (Module::has_entry() is false). `data_constants`:
// the values of its `const N: int = data;` (CompileOptions::data_constants, from --data).
Expected<std::shared_ptr<const Module>> load_program(
    const std::string& path, const std::string& entry,
    const std::map<std::string, double>& data_constants = {});

}  // namespace ab::cli
