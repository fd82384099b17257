// What a host tool needs to treat its user's input the way autobatch's own tools do: reading a
// file the user named, writing one whole or not at all, and quoting the user's text in a
// message.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

namespace ab {

struct FileContents {
  std::string bytes;
  std::string error;  // why the file could not be read: "No such file or directory", ...
  bool ok() const { return error.empty(); }
};

// The whole of the regular file at `path`, or the reason it cannot be read: the system's
// ("No such file or directory", "Permission denied"), "it is a directory", or "it is not a
// regular file (a FIFO)". Refusing anything but a regular file (once symlinks are followed)
// means a FIFO or a device such as /dev/zero never blocks or never ends a read.
FileContents read_regular_file(const std::string& path);

// Writes `parts`, one after another, to the file at `path` (created, or truncated), checking
// every write and the close. Returns "" on success, else the system's reason ("No space left on
// device", "Permission denied"); a failed write leaves no partial file behind (it is removed
// when it is a regular file: a device such as /dev/full stays).
std::string write_whole_file(const std::string& path,
                             std::initializer_list<std::string_view> parts);

constexpr size_t kExcerptChars = 60;

// `text` as it may appear between quotes in a message: at most `max_chars` characters (UTF-8
// sequences are kept whole), then "…" if anything was cut; control bytes and bytes that are not
// valid UTF-8 appear as \xNN. So a 200 KB .npy dtype or a 1 MB CSV cell still gives a one-line
// message that cannot garble the terminal.
std::string excerpt(std::string_view text, size_t max_chars = kExcerptChars);

}  // namespace ab
