// The lane schedule's sweep order (passes/analysis/sweep_order.h): a weak topological order of the
// sweep graph, the merged control-flow graph with a copy of each shared non-recursive callee per
// call site. Checked as properties on the samples and on random programs, against edges derived
// here from the terminators: the graph's nodes and edges stand for real blocks and edges and
// cover every edge a lane can take; the order lists every node once, and every edge goes forward
// unless it goes back to the head of a component that holds its source. On small programs: which
// blocks form loops, and which callees are copied.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "lang/frontend.h"
#include "passes/analysis/sweep_order.h"
#include "passes/lower.h"
#include "support/program_gen.h"
#include "support/samples.h"

namespace {

struct Lowered {
  ab::Program program;
  ab::LoweredProgram lowered;
};

std::unique_ptr<Lowered> lower_source(const std::string& source) {
  ab::Diagnostics diags("test.ab", source);
  // Calls stay calls: these cases are about how a call lowers (inline_calls has its own tests).
  ab::FrontendOptions options;
  options.inline_calls = false;
  auto program = ab::compile_source(source, "test.ab", diags, options);
  INFO(diags.format());
  REQUIRE(program.has_value());
  auto out = std::make_unique<Lowered>(Lowered{std::move(*program), {}});
  out->lowered = ab::lower(out->program, out->program.find_function("main"));
  return out;
}

// tail[f][g]: f reaches g through tail calls alone (reflexive), so a Return in g ends a call into
// f.
std::vector<std::vector<bool>> tail_reach(const ab::LoweredProgram& p) {
  const size_t nf = p.source->functions.size();
  std::vector<std::vector<bool>> tail(nf, std::vector<bool>(nf, false));
  for (size_t f = 0; f < nf; ++f)
    tail[f][f] = true;
  for (bool grew = true; grew;) {
    grew = false;
    for (const ab::LoweredBlock& b : p.blocks) {
      if (b.term.kind != ab::Terminator::Kind::TailJump) continue;
      const int32_t callee = p.blocks[b.term.target].function;
      for (size_t f = 0; f < nf; ++f)
        if (tail[f][b.function] && !tail[f][callee]) grew = tail[f][callee] = true;
    }
  }
  return tail;
}

// The block-level edges a lane can take: Jump/Branch targets, a PushJump's or TailJump's callee
// entry, and a Return to every continuation of a call into its function or into a function that
// tail-calls its way to it.
std::set<std::pair<int32_t, int32_t>> block_edges(const ab::LoweredProgram& p) {
  const auto tail = tail_reach(p);
  std::set<std::pair<int32_t, int32_t>> edges;
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    const ab::Terminator& t = p.blocks[i].term;
    const auto from = static_cast<int32_t>(i);
    if (t.kind == ab::Terminator::Kind::Jump || t.kind == ab::Terminator::Kind::PushJump ||
        t.kind == ab::Terminator::Kind::TailJump)
      edges.emplace(from, t.target);
    if (t.kind == ab::Terminator::Kind::Branch) {
      edges.emplace(from, t.target);
      edges.emplace(from, t.target_else);
    }
    if (t.kind == ab::Terminator::Kind::Return)
      for (const ab::LoweredBlock& caller : p.blocks)
        if (caller.term.kind == ab::Terminator::Kind::PushJump &&
            tail[p.blocks[caller.term.target].function][p.blocks[i].function])
          edges.emplace(from, caller.term.target_else);
  }
  return edges;
}

// True when some PushJump's callee can end in a Return of `function`.
bool returns_to_a_caller(const ab::LoweredProgram& p, int32_t function) {
  const auto tail = tail_reach(p);
  for (const ab::LoweredBlock& caller : p.blocks)
    if (caller.term.kind == ab::Terminator::Kind::PushJump &&
        tail[p.blocks[caller.term.target].function][function])
      return true;
  return false;
}

// Checks the graph and the order; returns the blocks that head a component.
std::set<int32_t> check_order(const ab::LoweredProgram& p) {
  const ab::SweepGraph g = ab::sweep_graph(p);
  const auto edges = block_edges(p);
  REQUIRE(!g.block.empty());
  CHECK(g.block[0] == p.entry_block);
  // Every node edge is a block edge, and from every node every block edge of its block is taken
  // by some node edge, except a Return's: a copy returns only to its own caller (or, made for a
  // tail call from the entry function, to none), but some copy of a Return that can end a call
  // goes somewhere.
  std::map<int32_t, bool> return_goes_somewhere;
  for (size_t n = 0; n < g.block.size(); ++n) {
    std::set<int32_t> targets;
    for (int32_t m : g.succ[n]) {
      CHECK(edges.count({g.block[n], g.block[m]}) == 1);
      targets.insert(g.block[m]);
    }
    const ab::Terminator& t = p.blocks[g.block[n]].term;
    if (t.kind == ab::Terminator::Kind::Return) {
      if (returns_to_a_caller(p, p.blocks[g.block[n]].function))
        return_goes_somewhere[g.block[n]] |= !targets.empty();
      continue;
    }
    for (auto [from, to] : edges)
      if (from == g.block[n]) CHECK(targets.count(to) == 1);
  }
  for (auto [block, somewhere] : return_goes_somewhere) {
    CAPTURE(p.blocks[block].name);
    CHECK(somewhere);
  }
  // Every block a lane can reach from the entry has a node.
  std::set<int32_t> reached = {p.entry_block}, with_node(g.block.begin(), g.block.end());
  for (bool grew = true; grew;) {
    grew = false;
    for (auto [from, to] : edges)
      if (reached.count(from) && !reached.count(to)) grew = reached.insert(to).second;
  }
  CHECK(reached == with_node);

  const auto order = ab::sweep_order(p);
  std::vector<int32_t> position(g.block.size(), -1);
  // For each node, the positions of the heads of the components holding it.
  std::vector<std::vector<int32_t>> holders(g.block.size());
  std::set<int32_t> heads;
  int32_t next = 0;
  std::function<void(const std::vector<ab::SweepItem>&, std::vector<int32_t>&)> walk =
      [&](const auto& items, auto& enclosing) {
        for (const ab::SweepItem& i : items) {
          if (i.block >= 0) {
            REQUIRE(i.node >= 0);
            CHECK(g.block[i.node] == i.block);
            CHECK(position[i.node] == -1);  // once
            position[i.node] = next++;
            holders[i.node] = enclosing;
            continue;
          }
          REQUIRE(!i.children.empty());
          REQUIRE(i.children.front().block >= 0);  // a component starts with its head
          heads.insert(i.children.front().block);
          enclosing.push_back(next);  // the head's position
          walk(i.children, enclosing);
          enclosing.pop_back();
          const std::vector<bool> in = ab::blocks_inside(i, p.blocks.size());
          CHECK(in[i.children.front().block]);
        }
      };
  std::vector<int32_t> none;
  walk(order, none);
  for (int32_t at : position)
    CHECK(at >= 0);  // every node listed
  for (size_t n = 0; n < g.block.size(); ++n)
    for (int32_t m : g.succ[n]) {
      if (position[m] > position[n]) continue;  // forward
      bool back_to_head = false;
      for (int32_t head : holders[n])
        back_to_head |= head == position[m];
      CAPTURE(p.blocks[g.block[n]].name);
      CAPTURE(p.blocks[g.block[m]].name);
      CHECK(back_to_head);
    }
  return heads;
}

TEST_CASE("sweep order: the samples and random programs form weak topological orders") {
  for (const auto& sample : ab::testing::all_samples()) {
    CAPTURE(sample.file);
    auto l = lower_source(ab::testing::read_sample(sample.file));
    check_order(l->lowered);
  }
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    auto l = lower_source(ab::testing::generate_program(seed));
    check_order(l->lowered);
  }
}

int count_copies(const ab::LoweredProgram& p, const std::string& block) {
  int n = 0;
  for (int32_t b : ab::sweep_graph(p).block)
    n += p.blocks[b].name == block;
  return n;
}

TEST_CASE("sweep order: loops and recursion are components; a shared callee is copied") {
  auto straight = lower_source(R"(
fn twice(x: int) -> int { return x + x; }
fn main(n: int) -> int {
    var r = twice(n);
    if r > 10 { r = r - 10; }
    return twice(r);
})");
  // `twice` has a copy per call, so its two calls form no cycle: no component at all.
  CHECK(check_order(straight->lowered).empty());
  CHECK(count_copies(straight->lowered, "twice.b0") == 2);

  auto loop = lower_source(R"(
fn main(n: int) -> int {
    var i = 0;
    var s = 0;
    while i < n { s += i; i += 1; }
    return s;
})");
  CHECK(check_order(loop->lowered).size() == 1);

  auto fib = lower_source(ab::testing::read_sample("fib.ab"));
  const auto fib_heads = check_order(fib->lowered);
  // fib's entry block heads the recursion; main's blocks are in no component; a recursive
  // function is never copied.
  const ab::LoweredProgram& p = fib->lowered;
  bool entry_is_head = false;
  for (int32_t h : fib_heads) {
    CHECK(p.source->functions.at(p.blocks[h].function).name == "fib");
    entry_is_head |= p.blocks[h].name == "fib.b0";
  }
  CHECK(entry_is_head);
  CHECK(count_copies(p, "fib.b0") == 1);
}

}  // namespace
