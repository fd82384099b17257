// The shape of a function's CFG that reverse-mode differentiation (passes/differentiate.cpp)
// walks: predecessors, reachability, dominators and the loop headers it can count.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace ab {

struct CfgShape {
  std::vector<std::vector<int>> preds;   // per block; a counted header's are [outside, back edge]
  std::vector<std::vector<bool>> reach;  // reach[a][b]: b is reachable from a in one or more edges
  std::vector<std::vector<bool>> dom;    // dom[b][a]: a dominates b
  // Loop headers counted by iterations: two predecessors, a back edge (from a block the header
  // dominates) and an entry from outside.
  std::vector<bool> counted;
};

CfgShape cfg_shape(const Function& fn);

// The header of the innermost loop around block b (a back edge's target whose loop holds b), or
// -1 when b is in no loop.
int innermost_loop(const std::vector<std::vector<int>>& preds,
                   const std::vector<std::vector<bool>>& dom, int b);

}  // namespace ab
