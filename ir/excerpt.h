// Quoting the user's own input in an error message: a short excerpt, never the whole of it, so
// that a 200 KB .npy dtype or a 1 MB CSV cell still gives a one-line message, and with control
// bytes escaped so that a message cannot garble the terminal.
//
// In ir/, the lowest layer, because every layer above quotes input: the tool's readers, the
// debugger's script runner, the bench's option checks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ab {

constexpr size_t kExcerptChars = 60;

// `text` as it may appear between quotes in a message: at most `max_chars` characters (UTF-8
// sequences are kept whole), then "…" if anything was cut; control bytes and bytes that are not
// valid UTF-8 appear as \xNN.
inline std::string excerpt(std::string_view text, size_t max_chars = kExcerptChars) {
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++chars) {
    if (chars == max_chars) {
      out += "…";
      break;
    }
    const auto byte = static_cast<unsigned char>(text[i]);
    size_t length = 1;
    if (byte >= 0xC2 && byte <= 0xF4) length = byte < 0xE0 ? 2 : byte < 0xF0 ? 3 : 4;
    bool whole = length > 1 && i + length <= text.size();
    for (size_t k = 1; whole && k < length; ++k)
      whole = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (byte < 0x20 || byte == 0x7F || (byte >= 0x80 && !whole)) {
      out += fmt::format("\\x{:02x}", byte);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace ab
