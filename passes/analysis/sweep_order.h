// The order in which the lane schedule's sweep visits a lowered program's blocks: a weak
// topological order (Bourdoncle 1993) of the sweep graph.
//
// The sweep graph is the merged control-flow graph, in which a call goes to the callee's entry
// block and a Return to the continuation of a call into its function, with one refinement: a
// non-recursive function called from several places is copied per call site, so its Return goes
// back to its own caller only. Without the copies a callee shared by two callers would join their
// cycles into one (its Return reaching both continuations). A tail call (TailJump) is a call site
// too; a function reached by tail calls returns to the continuations of calls into the function
// that made them. A node is a block in such a calling
// context; a block may so appear more than once. Copies stop at kMaxSweepNodesPerBlock times the
// blocks, past which every function is shared; copy_callees = false shares every function (the
// engine does so for a program it splits into several kernels, docs/engine.md).
//
// A weak topological order lists every node once, grouping the nodes of each cycle into a
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

inline constexpr size_t kMaxSweepNodesPerBlock = 4;

struct SweepGraph {
  std::vector<int32_t> block;              // node -> the block it is a copy of
  std::vector<std::vector<int32_t>> succ;  // node -> successor nodes
};

// The sweep graph of the blocks reachable from the entry block (node 0 is the entry block).
SweepGraph sweep_graph(const LoweredProgram& program, bool copy_callees = true);

struct SweepItem {
  int32_t node = -1;                // a node of the sweep graph, or -1 for a component
  int32_t block = -1;               // the node's block (-1 for a component)
  std::vector<SweepItem> children;  // a component's items, its head first
};

// The nodes of sweep_graph(program) in sweep order, nested. Blocks unreachable from the entry
// block are not in it: no lane can wait there.
std::vector<SweepItem> sweep_order(const LoweredProgram& program, bool copy_callees = true);

// in[b]: block b is (a copy of a block) inside `item`.
std::vector<bool> blocks_inside(const SweepItem& item, size_t blocks);

}  // namespace ab
