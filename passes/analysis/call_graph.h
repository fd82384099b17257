// The call graph, transitive reachability and its strongly connected components. A function
// is recursive when it can reach itself; a call from G to F "may re-enter" G when G is
// reachable from F.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace ab {

struct CallGraph {
  std::vector<std::vector<int>> callees;  // direct callees, deduplicated
  std::vector<int> scc;                   // component id per function
  std::vector<bool> recursive;            // in a cycle (including self-calls)
  // reaches[f][g]: f calls g, transitively (f->f only via a cycle)
  std::vector<std::vector<bool>> reaches;
  std::vector<bool> reachable_from_entry;  // set by compute_call_graph(program, entry)
};

CallGraph compute_call_graph(const Program& program, int entry = -1);

}  // namespace ab
