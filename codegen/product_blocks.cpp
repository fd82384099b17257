#include "codegen/product_blocks.h"

#include <algorithm>

#include "codegen/glsl_codegen_parts.h"
#include "passes/split_at_products.h"
#include "shaders/ab_layout.h"

namespace ab {

static_assert(kProductBlock == AB_PRODUCT_BLOCK, "the product kernel sums ops.h's blocks");

namespace {

// Where operand `v` of the product at the end of `block` is: a whole-uniform read of the block
// (its uniform's words from the read's static offset), or a variable with state slots.
std::optional<ProductOperand> operand(const LoweredBlock& block, const StateLayout& layout,
                                      VarId v) {
  for (size_t i = 0; i + 1 < block.ops.size(); ++i) {
    const Op& read = block.ops[i];
    if (read.dst != v) continue;
    uint32_t offset = 0;
    for (const PathStep& s : read.path)
      offset += s.offset;
    return ProductOperand{true, layout.uniform_base.at(read.index) + offset};
  }
  if (layout.var_slot[v] < 0) return std::nullopt;
  return ProductOperand{false, static_cast<uint32_t>(layout.var_slot[v])};
}

}  // namespace

std::vector<ProductBlock> product_blocks(const LoweredProgram& program, const StateLayout& layout) {
  std::vector<ProductBlock> out;
  for (size_t b = 0; b < program.blocks.size(); ++b) {
    const LoweredBlock& block = program.blocks[b];
    Block as_block{block.ops, block.term, block.loc};
    if (!is_product_block(as_block)) continue;
    const Op& product = block.ops.back();
    const auto a = operand(block, layout, product.args[0]);
    const auto c = operand(block, layout, product.args[1]);
    if (!a || !c || layout.var_slot[product.dst] < 0) continue;
    ProductBlock p;
    p.block = static_cast<int32_t>(b);
    p.next = block.term.target;
    p.shape = matrix_shape(program.types(), product.code, program.vars[product.args[0]].type,
                           program.vars[product.args[1]].type);
    p.a = *a;
    p.b = *c;
    p.dst_slot = static_cast<uint32_t>(layout.var_slot[product.dst]);
    out.push_back(p);
  }
  return out;
}

BlockSet without_blocks(const BlockSet& part, const std::vector<ProductBlock>& products) {
  BlockSet out;
  part.each([&](int32_t b) {
    if (std::any_of(products.begin(), products.end(),
                    [&](const ProductBlock& p) { return p.block == b; }))
      return;
    if (!out.ranges.empty() && out.ranges.back().end == b)
      ++out.ranges.back().end;
    else
      out.ranges.push_back(BlockRange{b, b + 1});
  });
  return out;
}

std::string product_kernel_glsl(const GlslTarget& target, std::string_view body) {
  return float_controls_header(target) + "#define AB_PRODUCT_KERNEL 1\n" + common_declarations() +
         std::string(body);
}

uint64_t product_pairs(const ProductBlock& p) {
  const MatrixShape& s = p.shape;
  // The tiled index is the uniform operand's own (a's rows, or b's columns when only b is
  // uniform); the other runs one output at a time.
  const bool tile_b = p.b.uniform && !p.a.uniform;
  const uint64_t tiled = tile_b ? s.p : s.m, other = tile_b ? s.m : s.p;
  const uint64_t tiles = (tiled + AB_PRODUCT_TILE - 1) / AB_PRODUCT_TILE;
  const uint64_t blocks = (s.k + AB_PRODUCT_BLOCK - 1) / AB_PRODUCT_BLOCK;
  return tiles * other * std::max<uint64_t>(blocks, 1);
}

}  // namespace ab
