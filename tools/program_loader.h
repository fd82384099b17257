// Loading a program for a command: read the .ab file and compile it into a Module, checking its
// entry function. A file that cannot be read gives "cannot read 'x.ab': <reason>"; compile errors
// give the front end's formatted diagnostics (marked `formatted`, printed as they are); a missing
// entry names it and lists the program's functions.
#pragma once

#include <memory>
#include <string>

#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab::cli {

// `entry` empty: the program is only checked (Module::has_entry() is false).
Expected<std::shared_ptr<const Module>> load_program(const std::string& path,
                                                     const std::string& entry);

}  // namespace ab::cli
