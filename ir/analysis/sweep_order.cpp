#include "ir/analysis/sweep_order.h"

#include <algorithm>
#include <climits>
#include <functional>

namespace ab {
namespace {

// Successors of every block in the merged control-flow graph.
std::vector<std::vector<int32_t>> merged_successors(const LoweredProgram& p) {
  const size_t n = p.blocks.size();
  std::vector<std::vector<int32_t>> succ(n);
  std::vector<std::vector<int32_t>> continuations(p.source ? p.source->functions.size() : 0);
  for (const LoweredBlock& b : p.blocks)
    if (b.term.kind == Terminator::Kind::PushJump && b.term.target >= 0 &&
        static_cast<size_t>(b.term.target) < n) {
      const int32_t callee = p.blocks[b.term.target].function;
      if (callee >= 0 && static_cast<size_t>(callee) < continuations.size())
        continuations[callee].push_back(b.term.target_else);
    }
  auto add = [&](size_t from, int32_t to) {
    if (to >= 0 && static_cast<size_t>(to) < n) succ[from].push_back(to);
  };
  for (size_t i = 0; i < n; ++i) {
    const Terminator& t = p.blocks[i].term;
    switch (t.kind) {
      case Terminator::Kind::Jump:
      case Terminator::Kind::PushJump:  // the continuation is reached through the Return
        add(i, t.target);
        break;
      case Terminator::Kind::Branch:
        add(i, t.target);
        add(i, t.target_else);
        break;
      case Terminator::Kind::Return: {
        const int32_t f = p.blocks[i].function;
        if (f >= 0 && static_cast<size_t>(f) < continuations.size())
          for (int32_t c : continuations[f])
            add(i, c);
        break;
      }
    }
  }
  return succ;
}

// Bourdoncle's recursive construction of a weak topological order.
class Builder {
 public:
  explicit Builder(std::vector<std::vector<int32_t>> succ)
      : succ_(std::move(succ)), number_(succ_.size(), 0) {}

  std::vector<SweepItem> from(int32_t root) {
    std::vector<SweepItem> out;
    visit(root, out);
    return out;
  }
  bool seen(int32_t b) const { return number_[b] != 0; }

 private:
  int visit(int32_t v, std::vector<SweepItem>& out) {
    stack_.push_back(v);
    number_[v] = ++count_;
    int head = number_[v];
    bool loop = false;
    for (int32_t w : succ_[v]) {
      const int low = number_[w] == 0 ? visit(w, out) : number_[w];
      if (low <= head) {
        head = low;
        loop = true;
      }
    }
    if (head == number_[v]) {
      number_[v] = INT_MAX;
      int32_t element = stack_.back();
      stack_.pop_back();
      if (loop) {
        while (element != v) {
          number_[element] = 0;
          element = stack_.back();
          stack_.pop_back();
        }
        out.insert(out.begin(), component(v));
      } else {
        out.insert(out.begin(), SweepItem{v, {}});
      }
    }
    return head;
  }

  SweepItem component(int32_t v) {
    std::vector<SweepItem> inner;
    for (int32_t w : succ_[v])
      if (number_[w] == 0) visit(w, inner);
    SweepItem c;
    c.children.push_back(SweepItem{v, {}});
    for (SweepItem& i : inner)
      c.children.push_back(std::move(i));
    return c;
  }

  std::vector<std::vector<int32_t>> succ_;
  std::vector<int> number_;
  std::vector<int32_t> stack_;
  int count_ = 0;
};

void number(std::vector<SweepItem>& items, int32_t& next) {
  for (SweepItem& i : items) {
    i.first = next;
    if (i.block >= 0)
      ++next;
    else
      number(i.children, next);
    i.last = next - 1;
  }
}

}  // namespace

std::vector<SweepItem> sweep_order(const LoweredProgram& program) {
  const size_t n = program.blocks.size();
  std::vector<SweepItem> order;
  if (n == 0) return order;
  Builder builder(merged_successors(program));
  order = builder.from(std::clamp<int32_t>(program.entry_block, 0, static_cast<int32_t>(n) - 1));
  for (size_t b = 0; b < n; ++b)
    if (!builder.seen(static_cast<int32_t>(b)))
      order.push_back(SweepItem{static_cast<int32_t>(b), {}});
  int32_t next = 0;
  number(order, next);
  return order;
}

std::vector<int32_t> sweep_positions(const std::vector<SweepItem>& order, size_t blocks) {
  std::vector<int32_t> position(blocks, -1);
  std::function<void(const std::vector<SweepItem>&)> walk = [&](const auto& items) {
    for (const SweepItem& i : items) {
      if (i.block >= 0 && static_cast<size_t>(i.block) < blocks) position[i.block] = i.first;
      walk(i.children);
    }
  };
  walk(order);
  return position;
}

}  // namespace ab
