#include "passes/analysis/sweep_order.h"

#include "passes/analysis/call_graph.h"

#include <algorithm>
#include <climits>
#include <map>
#include <utility>

namespace ab {
namespace {

// calls[f][g]: f calls g, transitively, through PushJump or TailJump. tail[f][g]: f reaches g
// through tail calls alone (reflexive): a Return in g may end a call into f.
struct FunctionGraph {
  std::vector<std::vector<bool>> calls, tail;
  std::vector<int> call_sites;  // PushJumps and TailJumps into each function
};

// One search per function, O(n·(n+e)): Warshall's n³ took seconds at a thousand functions.
void close_transitively(std::vector<std::vector<bool>>& r) {
  const size_t n = r.size();
  std::vector<std::vector<size_t>> direct(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (r[i][j]) direct[i].push_back(j);
  std::vector<size_t> todo;
  std::vector<bool> seen;
  for (size_t f = 0; f < n; ++f) {
    seen.assign(n, false);
    todo = direct[f];
    while (!todo.empty()) {
      const size_t g = todo.back();
      todo.pop_back();
      if (seen[g]) continue;
      seen[g] = true;
      r[f][g] = true;
      for (size_t h : direct[g])
        if (!seen[h]) todo.push_back(h);
    }
  }
}

FunctionGraph function_graph(const LoweredProgram& p) {
  const size_t functions = p.source ? p.source->functions.size() : 0;
  FunctionGraph g;
  g.calls.assign(functions, std::vector<bool>(functions, false));
  g.tail = g.calls;
  g.call_sites.assign(functions, 0);
  for (size_t f = 0; f < functions; ++f)
    g.tail[f][f] = true;
  for (const LoweredBlock& b : p.blocks) {
    const bool push = b.term.kind == Terminator::Kind::PushJump;
    if (!push && b.term.kind != Terminator::Kind::TailJump) continue;
    const int32_t caller = b.function, callee = p.blocks[b.term.target].function;
    if (caller < 0 || callee < 0) continue;
    g.calls[caller][callee] = true;
    ++g.call_sites[callee];
    if (!push) g.tail[caller][callee] = true;
  }
  close_transitively(g.calls);
  close_transitively(g.tail);
  return g;
}

// Functions that get a copy per call site: not recursive, called from more than one block.
std::vector<bool> copied_functions(const FunctionGraph& g) {
  std::vector<bool> copied(g.calls.size(), false);
  for (size_t f = 0; f < copied.size(); ++f)
    copied[f] = !g.calls[f][f] && g.call_sites[f] > 1;
  return copied;
}

// Builds the sweep graph: nodes are (block, context) pairs, the context being the call node that
// made a copy of a copied function, or -1.
class GraphBuilder {
 public:
  GraphBuilder(const LoweredProgram& p, const FunctionGraph& functions, std::vector<bool> copied)
      : p_(p), functions_(functions), copied_(std::move(copied)) {}

  // False when the copies exceeded the node limit.
  bool build(SweepGraph& g) {
    const size_t limit = kMaxSweepNodesPerBlock * p_.blocks.size();
    node(p_.entry_block, -1);
    for (size_t n = 0; n < keys_.size(); ++n) {  // keys_ grows as nodes are found
      if (keys_.size() > limit) return false;
      const auto [b, context] = keys_[n];
      const Terminator& t = p_.blocks[b].term;
      switch (t.kind) {
        case Terminator::Kind::Jump:
          edge(n, node(t.target, context));
          break;
        case Terminator::Kind::TailJump: {  // a copied callee gets its own copy for this site
          const int32_t callee = p_.blocks[t.target].function;
          const bool copy = callee >= 0 && copied_[callee];
          edge(n, node(t.target, copy ? static_cast<int32_t>(n) : context));
          break;
        }
        case Terminator::Kind::Branch:
          edge(n, node(t.target, context));
          edge(n, node(t.target_else, context));
          break;
        case Terminator::Kind::PushJump: {
          const int32_t callee = p_.blocks[t.target].function;
          const bool copy = callee >= 0 && copied_[callee];
          edge(n, node(t.target, copy ? static_cast<int32_t>(n) : -1));
          node(t.target_else, context);  // reached through the callee's Return
          calls_.push_back(static_cast<int32_t>(n));
          break;
        }
        case Terminator::Kind::Return:
          break;
      }
    }
    // Returns: a copy to its own call's continuation; a shared function to every continuation
    // of a call that is not copied into it or into a function that tail-calls it. A copy made
    // for a tail call returns where the function that made the tail call would have.
    for (size_t n = 0; n < keys_.size(); ++n) {
      auto [b, context] = keys_[n];
      if (p_.blocks[b].term.kind != Terminator::Kind::Return) continue;
      int32_t returning = p_.blocks[b].function;
      while (context >= 0 &&
             p_.blocks[keys_[context].first].term.kind == Terminator::Kind::TailJump) {
        returning = p_.blocks[keys_[context].first].function;
        context = keys_[context].second;
      }
      if (context >= 0) {
        edge(n, continuation(context));
        continue;
      }
      for (int32_t call : calls_) {
        const int32_t callee = p_.blocks[p_.blocks[keys_[call].first].term.target].function;
        if (ends_call_into(returning, callee) && (callee < 0 || !copied_[callee]))
          edge(n, continuation(call));
      }
    }
    // Keep the nodes reachable from the entry: a continuation whose callee never returns was
    // made above but no lane can get there.
    std::vector<int32_t> renumber(keys_.size(), -1), work = {0};
    renumber[0] = 0;
    g.block = {keys_[0].first};
    while (!work.empty()) {
      const int32_t n = work.back();
      work.pop_back();
      for (int32_t m : succ_[n])
        if (renumber[m] < 0) {
          renumber[m] = static_cast<int32_t>(g.block.size());
          g.block.push_back(keys_[m].first);
          work.push_back(m);
        }
    }
    g.succ.assign(g.block.size(), {});
    for (size_t n = 0; n < keys_.size(); ++n)
      if (renumber[n] >= 0)
        for (int32_t m : succ_[n])
          g.succ[renumber[n]].push_back(renumber[m]);
    return true;
  }

 private:
  int32_t node(int32_t block, int32_t context) {
    const auto key = std::make_pair(block, context);
    if (auto it = index_.find(key); it != index_.end()) return it->second;
    const auto n = static_cast<int32_t>(keys_.size());
    index_[key] = n;
    keys_.push_back(key);
    succ_.emplace_back();
    return n;
  }
  int32_t continuation(int32_t call) {
    const auto [b, context] = keys_[call];
    return index_.at(std::make_pair(p_.blocks[b].term.target_else, context));
  }
  void edge(size_t from, int32_t to) { succ_[from].push_back(to); }
  // A Return in `returning` can end a call into `callee`: the same function, or one it tail-calls.
  bool ends_call_into(int32_t returning, int32_t callee) const {
    if (returning == callee) return true;
    const auto n = static_cast<int32_t>(functions_.tail.size());
    return returning >= 0 && callee >= 0 && returning < n && callee < n &&
           functions_.tail[callee][returning];
  }

  const LoweredProgram& p_;
  const FunctionGraph& functions_;
  std::vector<bool> copied_;
  std::map<std::pair<int32_t, int32_t>, int32_t> index_;
  std::vector<std::pair<int32_t, int32_t>> keys_;
  std::vector<std::vector<int32_t>> succ_;
  std::vector<int32_t> calls_;
};

// Bourdoncle's recursive construction of a weak topological order.
class OrderBuilder {
 public:
  explicit OrderBuilder(const SweepGraph& g) : g_(g), number_(g.succ.size(), 0) {}

  std::vector<SweepItem> from(int32_t root) {
    std::vector<SweepItem> out;
    visit(root, out);
    return out;
  }

 private:
  SweepItem leaf(int32_t v) const { return SweepItem{v, g_.block[v], {}}; }

  int visit(int32_t v, std::vector<SweepItem>& out) {
    stack_.push_back(v);
    number_[v] = ++count_;
    int head = number_[v];
    bool loop = false;
    for (int32_t w : g_.succ[v]) {
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
        out.insert(out.begin(), leaf(v));
      }
    }
    return head;
  }

  SweepItem component(int32_t v) {
    std::vector<SweepItem> inner;
    for (int32_t w : g_.succ[v])
      if (number_[w] == 0) visit(w, inner);
    SweepItem c;
    c.children.push_back(leaf(v));
    for (SweepItem& i : inner)
      c.children.push_back(std::move(i));
    return c;
  }

  const SweepGraph& g_;
  std::vector<int> number_;
  std::vector<int32_t> stack_;
  int count_ = 0;
};

void mark(const SweepItem& item, std::vector<bool>& in) {
  if (item.block >= 0 && static_cast<size_t>(item.block) < in.size()) in[item.block] = true;
  for (const SweepItem& c : item.children)
    mark(c, in);
}

}  // namespace

SweepGraph sweep_graph(const LoweredProgram& program, bool copy_callees) {
  SweepGraph g;
  if (program.blocks.empty()) return g;
  const FunctionGraph functions = function_graph(program);
  const std::vector<bool> copied = copied_functions(functions);
  if (copy_callees && GraphBuilder(program, functions, copied).build(g)) return g;
  GraphBuilder(program, functions, std::vector<bool>(copied.size(), false)).build(g);
  return g;
}

std::vector<SweepItem> sweep_order(const LoweredProgram& program, bool copy_callees) {
  const SweepGraph g = sweep_graph(program, copy_callees);
  std::vector<SweepItem> order;
  if (g.block.empty()) return order;
  return OrderBuilder(g).from(0);
}

std::vector<bool> blocks_inside(const SweepItem& item, size_t blocks) {
  std::vector<bool> in(blocks, false);
  mark(item, in);
  return in;
}

}  // namespace ab
