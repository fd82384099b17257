// Whole-file reads and writes with the tool's error wording (reads refuse directories and
// anything but regular files, see ir/read_file.h):
// "cannot read 'x.ab': No such file or directory". A write that fails (a full disk, a quota)
// says why and leaves no partial file behind.
#pragma once

#include <string>
#include <string_view>

#include "autobatch/expected.h"

namespace ab::cli {

Expected<std::string> read_file(const std::string& path);
Status write_file(const std::string& path, std::string_view bytes);

}  // namespace ab::cli
