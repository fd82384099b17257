// Diagnostics: `file:line:col: error: message`, then the source line and a caret under the column.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace ab {

struct Diagnostic {
  SourceLoc loc;
  std::string message;
};

class Diagnostics {
 public:
  Diagnostics(std::string file, std::string source)
      : file_(std::move(file)), source_(std::move(source)) {}
  void error(SourceLoc loc, std::string message);
  bool has_errors() const { return !errors_.empty(); }
  const std::vector<Diagnostic>& errors() const { return errors_; }
  const std::string& file() const { return file_; }
  // Every error, formatted with its source line and caret, one after another.
  std::string format() const;
  // One error: "fib.ab:3:7: error: unknown variable 'x'\n    let y = x + 1;\n            ^\n".
  std::string format(const Diagnostic& d) const;

 private:
  std::string file_;
  std::string source_;
  std::vector<Diagnostic> errors_;
};

}  // namespace ab
