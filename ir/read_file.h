// Reading a file the user named (a program, a data file, a trace, a debugger script) whole:
// read_regular_file() of the public autobatch/user_input.h, so that every such read, the
// library's and the tools', refuses the same things the same way.
#pragma once

#include "autobatch/user_input.h"
