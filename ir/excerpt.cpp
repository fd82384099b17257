// excerpt() of autobatch/user_input.h.
#include "ir/excerpt.h"

#include <fmt/format.h>

namespace ab {

std::string excerpt(std::string_view text, size_t max_chars) {
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
