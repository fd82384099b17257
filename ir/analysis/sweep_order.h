// The order in which the lane schedule's sweep visits a lowered program's blocks: a weak
// topological order (Bourdoncle 1993) of the merged control-flow graph, in which a call goes to
// the callee's entry block and a Return to every continuation of a call into its function.
//
// A weak topological order lists every block once, grouping the blocks of each cycle into a
// component whose first element is its head; components nest like loops. Every edge goes forward
// in the order except the edges back to a component's head. The lane schedule emits each
// component as a loop, so that a lane running ahead follows its edges forward within one
// iteration and only a cycle costs a new one, and the code outside a loop is not re-run while
// lanes are inside it.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace ab {

struct SweepItem {
  int32_t block = -1;               // a block, or -1 for a component
  std::vector<SweepItem> children;  // a component's items, its head first
  int32_t first = 0, last = 0;      // the positions (in sweep_positions) this item spans
};

// The blocks of `program` in sweep order, nested. Blocks unreachable from the entry block come
// last, each on its own.
std::vector<SweepItem> sweep_order(const LoweredProgram& program);

// position[b]: the place of block b in the flattened sweep order.
std::vector<int32_t> sweep_positions(const std::vector<SweepItem>& order, size_t blocks);

}  // namespace ab
