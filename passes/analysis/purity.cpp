#include "passes/analysis/purity.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ab {

bool check_pure(const Program& p, int f, int first, Diagnostics& diags) {
  struct Reached {
    int function;
    SourceLoc site;  // the last call with a line on the way from f
    int site_function;
  };
  std::set<int> seen{f};
  std::vector<Reached> work{{f, SourceLoc{}, f}};
  std::set<std::pair<int, int>> reported;
  bool ok = true;
  while (!work.empty()) {
    const Reached at = work.back();
    const Function& fn = p.functions[at.function];
    work.pop_back();
    auto report = [&](const Op& op, const std::string& what) {
      const bool has_line = op.loc.line != 0;
      const SourceLoc loc = has_line ? op.loc : at.site;
      const int in = has_line ? at.function : at.site_function;
      if (reported.insert({loc.line, loc.col}).second)
        diags.error(loc, fmt::format("cannot differentiate '{}': {} in '{}'", p.functions[f].name,
                                     what, p.functions[in].name));
      ok = false;
    };
    for (const Block& b : fn.blocks)
      for (const Op& op : b.ops) {
        if (is_random(op)) {
          report(op, "a random draw");
        } else if (is_emit(op)) {
          report(op, "an emit");
        } else if (is_call(op) && op.index >= first) {
          // The derived function's reverse sweep restores values with pops, which a second
          // reverse sweep would not undo: second derivatives are refused, not wrong.
          diags.error(op.loc, fmt::format("cannot differentiate '{}': '{}' takes a gradient, and "
                                          "second derivatives are not supported",
                                          p.functions[f].name, fn.name));
          ok = false;
        } else if (is_call(op) && seen.insert(op.index).second) {
          const bool has_line = op.loc.line != 0;
          work.push_back(
              {op.index, has_line ? op.loc : at.site, has_line ? at.function : at.site_function});
        }
      }
  }
  return ok;
}

}  // namespace ab
