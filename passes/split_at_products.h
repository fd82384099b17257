// Pass: split_at_products (Figure 2 -> Figure 2).
// Requires: a verified program. Each matrix product `z = a @ b` (MatMul) becomes a block of its
// own: the ops before it stay in their block, which jumps to the product's block; the product's
// block holds the whole-uniform reads (UniformGet with a static path) that feed it, then the
// product, then jumps to a block holding the ops after it (or, with nothing after it and a jump
// ending the block, jumps there itself). A uniform read feeding the product moves into the
// product's block when nothing else reads its value, else a copy of it does, so a uniform
// operand never becomes a lane's variable (X in `X @ w` is 4 MB). A product writing one of its
// own operands (`v = m @ v`) writes a fresh variable that the next block copies.
// Why: Vulkan runs a product block as its own kernel (engine/schedules, docs/engine.md,
// "Matrix products"): the lanes' kernels then hold no product loop, and a lane that reaches a
// product waits for the product dispatch. Doing it in Figure 2 keeps every backend's blocks and
// so the lane step counts (the interpreter's too) equal.
// Preserves: every lane's ops and their order (the moved uniform reads read data no op writes),
// so values, draws and faults are unchanged; each product costs one more step per lane.
#pragma once

#include "ir/ir.h"

namespace ab {

// A product block as this pass leaves it: whole-uniform reads, then one MatMul, ending in a jump.
bool is_product_block(const Block& block);

// Returns the number of products given a block of their own.
int split_at_products(Program& program);

}  // namespace ab
