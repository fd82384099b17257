#include "passes/split_at_products.h"

#include <algorithm>

namespace ab {
namespace {

// Reads of `v` by any op or terminator of `fn`.
size_t reads_of(const Function& fn, VarId v) {
  size_t n = 0;
  for (const Block& b : fn.blocks) {
    for (const Op& op : b.ops)
      n += static_cast<size_t>(std::count(op.args.begin(), op.args.end(), v));
    if (b.term.cond == v) ++n;
  }
  if (fn.result == v) ++n;
  return n;
}

VarId new_var(Function& fn, TypeId type) {
  fn.vars.push_back(Var{"t" + std::to_string(fn.vars.size()), type, true});
  return static_cast<VarId>(fn.vars.size() - 1);
}

// Splits fn.blocks[b] around its product at `at`; returns the block holding the ops after it
// (-1 if none).
int32_t split_block(Function& fn, int32_t b, size_t at) {
  std::vector<Op> before(fn.blocks[b].ops.begin(), fn.blocks[b].ops.begin() + at);
  Op product = fn.blocks[b].ops[at];
  std::vector<Op> after(fn.blocks[b].ops.begin() + at + 1, fn.blocks[b].ops.end());
  const Terminator term = fn.blocks[b].term;
  const SourceLoc loc = product.loc;
  // The product block's ops: the uniform reads of its operands, then the product.
  std::vector<Op> ops;
  for (VarId& arg : product.args) {
    auto def =
        std::find_if(before.rbegin(), before.rend(), [&](const Op& op) { return op.dst == arg; });
    if (def == before.rend() || !is_static_uniform_get(*def)) continue;
    if (reads_of(fn, arg) == 1) {  // only this product reads it: move the read
      ops.push_back(*def);
      before.erase(std::next(def).base());
    } else {  // a copy of the read into a variable of the product's own
      Op read = *def;
      read.dst = new_var(fn, fn.vars[arg].type);
      arg = read.dst;
      ops.push_back(read);
    }
  }
  std::vector<Op> copy_back;
  if (std::find(product.args.begin(), product.args.end(), product.dst) != product.args.end()) {
    const VarId fresh = new_var(fn, fn.vars[product.dst].type);
    copy_back.push_back(copy_op(product.dst, fresh, loc));
    product.dst = fresh;
  }
  ops.push_back(product);
  after.insert(after.begin(), copy_back.begin(), copy_back.end());

  const bool own_block_before = !before.empty() || b == 0;
  const int32_t product_block = own_block_before ? static_cast<int32_t>(fn.blocks.size()) : b;
  if (own_block_before) fn.blocks.push_back(Block{{}, {}, loc});
  int32_t rest = -1;
  Terminator product_term{Terminator::Kind::Jump, -1, -1, -1, loc};
  if (after.empty() && term.kind == Terminator::Kind::Jump) {
    product_term.target = term.target;
  } else {
    rest = static_cast<int32_t>(fn.blocks.size());
    fn.blocks.push_back(Block{std::move(after), term, loc});
    product_term.target = rest;
  }
  if (own_block_before) {
    fn.blocks[b].ops = std::move(before);
    fn.blocks[b].term = Terminator{Terminator::Kind::Jump, -1, product_block, -1, loc};
  }
  fn.blocks[product_block].ops = std::move(ops);
  fn.blocks[product_block].term = product_term;
  return rest;
}

}  // namespace

bool is_product_block(const Block& block) {
  if (block.ops.empty() || !is_matmul(block.ops.back()) ||
      block.term.kind != Terminator::Kind::Jump)
    return false;
  return std::all_of(block.ops.begin(), block.ops.end() - 1,
                     [](const Op& op) { return is_static_uniform_get(op); });
}

int split_at_products(Program& program) {
  int split = 0;
  for (Function& fn : program.functions) {
    // Blocks appended by a split are visited too: the ops after a product may hold another.
    for (int32_t b = 0; b < static_cast<int32_t>(fn.blocks.size()); ++b) {
      if (is_product_block(fn.blocks[b])) continue;
      const auto& ops = fn.blocks[b].ops;
      const auto it =
          std::find_if(ops.begin(), ops.end(), [](const Op& op) { return is_matmul(op); });
      if (it == ops.end()) continue;
      split_block(fn, b, static_cast<size_t>(it - ops.begin()));
      ++split;
    }
  }
  return split;
}

}  // namespace ab
