#include "ir/diagnostics.h"

#include <fmt/format.h>

namespace ab {

void Diagnostics::error(SourceLoc loc, std::string message) {
  errors_.push_back({loc, std::move(message)});
}

std::string Diagnostics::format(const Diagnostic& d) const {
  std::string out = fmt::format("{}:{}:{}: error: {}\n", file_, d.loc.line, d.loc.col, d.message);
  if (d.loc.line <= 0) return out;
  // Find the source line; tabs are kept so the caret lines up in a terminal.
  size_t start = 0;
  for (int line = 1; line < d.loc.line && start != std::string::npos; ++line) {
    start = source_.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos || start > source_.size()) return out;
  size_t end = source_.find('\n', start);
  std::string text = source_.substr(start, end == std::string::npos ? end : end - start);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  std::string pad;
  for (int i = 1; i < d.loc.col && i - 1 < static_cast<int>(text.size()); ++i)
    pad += text[i - 1] == '\t' ? '\t' : ' ';
  out += fmt::format("  {}\n  {}^\n", text, pad);
  return out;
}

std::string Diagnostics::format() const {
  std::string out;
  for (const Diagnostic& d : errors_)
    out += format(d);
  return out;
}

}  // namespace ab
