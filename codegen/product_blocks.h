// The product blocks of a lowered program, as the product kernel runs them
// (shaders/ab_product.glsl; docs/engine.md, "Matrix products"). split_at_products (passes/) gives
// each `a @ b` a block of its own: whole-uniform reads, then the product, then a jump. Such a block
// whose lane operands and result live in the lane state (not Temp) is a product block here: a
// kernel of its own runs it for every lane waiting at it, reading a uniform operand in place and
// the lanes' operands from their state slots (lanes innermost, slot s of lane l at s * lanes + l),
// and writing the result there, so the lanes' own kernels hold no product loop.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/glsl_codegen.h"
#include "codegen/state_layout.h"
#include "ir/ir.h"
#include "ir/ops.h"

namespace ab {

struct ProductOperand {
  bool uniform = false;  // a uniform's words, read in place; else a lane's variable
  uint32_t base = 0;     // uniform: first word in the uniform buffer; else: first state slot
};

struct ProductBlock {
  int32_t block = -1;
  int32_t next = -1;  // the block the product's jump goes to
  MatrixShape shape;  // a is m x k, b is k x p (ops.h)
  ProductOperand a, b;
  uint32_t dst_slot = 0;
};

std::vector<ProductBlock> product_blocks(const LoweredProgram& program, const StateLayout& layout);

// `parts` less the product blocks: the parts of the kernels that leave products to the product
// kernel (a lane reaching a product block leaves them as if it were another part's block).
BlockSet without_blocks(const BlockSet& part, const std::vector<ProductBlock>& products);

// The product kernel's source (shaders/ab_product.glsl, `body`) for `target`: the header a
// generated kernel gets (the float controls), ab_layout.h, ab_common.glsl and the uniform buffer.
// It depends on the device's features only, not on the program: one kernel serves every program.
std::string product_kernel_glsl(const GlslTarget& target, std::string_view body);

// Pairs of (output tile, summation block) the product kernel walks for `p` (the unit a dispatch
// takes a range of: AB_PRODUCT_FIRST and AB_PRODUCT_END), and the loop iterations one pair costs
// a SIMD row at most (for a device that caps a dispatch's loop iterations).
uint64_t product_pairs(const ProductBlock& p);
constexpr uint32_t kProductPairLoops = 1200;

}  // namespace ab
