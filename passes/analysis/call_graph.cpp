#include "passes/analysis/call_graph.h"

#include <algorithm>

namespace ab {

CallGraph compute_call_graph(const Program& program, int entry) {
  const size_t n = program.functions.size();
  CallGraph g;
  g.callees.resize(n);
  for (size_t f = 0; f < n; ++f) {
    for (const Block& b : program.functions[f].blocks)
      for (const Op& op : b.ops)
        // A call of a function not yet in the program (a derived function differentiate will
        // append) has no edge yet.
        if (is_call(op) && op.index >= 0 && static_cast<size_t>(op.index) < n)
          g.callees[f].push_back(op.index);
    auto& c = g.callees[f];
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  // reaches[f][g]: a path of one or more calls from f to g (depth-first from each function).
  g.reaches.assign(n, std::vector<bool>(n, false));
  for (size_t f = 0; f < n; ++f) {
    std::vector<int> work(g.callees[f].begin(), g.callees[f].end());
    while (!work.empty()) {
      const int h = work.back();
      work.pop_back();
      if (g.reaches[f][h]) continue;
      g.reaches[f][h] = true;
      for (int k : g.callees[h])
        work.push_back(k);
    }
  }
  // Components of mutual reachability, numbered by their smallest member.
  g.scc.resize(n);
  g.recursive.resize(n);
  for (size_t f = 0; f < n; ++f) {
    g.recursive[f] = g.reaches[f][f];
    g.scc[f] = static_cast<int>(f);
    for (size_t h = 0; h < f; ++h)
      if (g.reaches[f][h] && g.reaches[h][f]) {
        g.scc[f] = g.scc[h];
        break;
      }
  }
  g.reachable_from_entry.assign(n, entry < 0);
  if (entry >= 0) {
    g.reachable_from_entry[entry] = true;
    for (size_t h = 0; h < n; ++h)
      if (g.reaches[entry][h]) g.reachable_from_entry[h] = true;
  }
  return g;
}

}  // namespace ab
