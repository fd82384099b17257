// Reading a file the user named (a program, a data file, a trace, a debugger script) whole.
//
// Shared by the command-line tool and the debugger so that every such read refuses the same
// things the same way: a directory, and anything that is not a regular file once symlinks are
// followed (a FIFO or a device such as /dev/zero would block or never end).
#pragma once

#include <string>

namespace ab {

struct FileContents {
  std::string bytes;
  std::string error;  // why the file could not be read: "No such file or directory", ...
  bool ok() const { return error.empty(); }
};

// The whole of the regular file at `path`, or the reason it cannot be read: the system's
// ("No such file or directory", "Permission denied"), "it is a directory", or "it is not a
// regular file (a FIFO)".
FileContents read_regular_file(const std::string& path);

}  // namespace ab
