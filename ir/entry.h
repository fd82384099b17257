// Finding the function every lane runs. Shared by the command-line tool and Module (the library's
// compile) so both refuse a missing entry with the same message.
#pragma once

#include <string>

#include "ir/ir.h"

namespace ab {

// "no function 'NAME' in 'FILE' to use as the entry; its functions are: f, g" (`shown` is how
// the message quotes the name: callers may shorten a long one).
std::string missing_entry_message(const Program& program, const std::string& shown);

}  // namespace ab
