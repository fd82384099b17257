// The lane schedule's sweep order (ir/analysis/sweep_order.h): a weak topological order of the
// merged control-flow graph. Checked as properties on the samples and on random programs: every
// block once, positions contiguous per component, every edge forward unless it goes back to the
// head of a component that holds its source; and on small programs, which blocks form loops.
#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "ir/analysis/sweep_order.h"
#include "ir/frontend/frontend.h"
#include "ir/passes/lower.h"
#include "support/program_gen.h"
#include "support/samples.h"

namespace {

struct Lowered {
  ab::Program program;
  ab::LoweredProgram lowered;
};

std::unique_ptr<Lowered> lower_source(const std::string& source) {
  ab::Diagnostics diags("test.ab", source);
  auto program = ab::compile_source(source, "test.ab", diags);
  INFO(diags.format());
  REQUIRE(program.has_value());
  auto out = std::make_unique<Lowered>(Lowered{std::move(*program), {}});
  out->lowered = ab::lower(out->program, out->program.find_function("main"));
  return out;
}

// The edges of the merged graph, derived here from the terminators independently of the analysis:
// Jump/Branch targets, a PushJump's callee entry, and a Return to every continuation of a call
// into its function.
std::vector<std::pair<int32_t, int32_t>> edges_of(const ab::LoweredProgram& p) {
  std::vector<std::pair<int32_t, int32_t>> edges;
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    const ab::Terminator& t = p.blocks[i].term;
    const auto from = static_cast<int32_t>(i);
    if (t.kind == ab::Terminator::Kind::Jump || t.kind == ab::Terminator::Kind::PushJump)
      edges.emplace_back(from, t.target);
    if (t.kind == ab::Terminator::Kind::Branch) {
      edges.emplace_back(from, t.target);
      edges.emplace_back(from, t.target_else);
    }
    if (t.kind == ab::Terminator::Kind::Return)
      for (const ab::LoweredBlock& caller : p.blocks)
        if (caller.term.kind == ab::Terminator::Kind::PushJump &&
            p.blocks[caller.term.target].function == p.blocks[i].function)
          edges.emplace_back(from, caller.term.target_else);
  }
  return edges;
}

// Checks the weak-topological-order properties; returns the heads of the components.
std::set<int32_t> check_order(const ab::LoweredProgram& p) {
  const auto order = ab::sweep_order(p);
  const auto position = ab::sweep_positions(order, p.blocks.size());
  std::set<int32_t> positions;
  for (int32_t at : position) {
    CHECK(at >= 0);
    positions.insert(at);
  }
  CHECK(positions.size() == p.blocks.size());  // every block exactly once
  if (!p.blocks.empty()) {
    CHECK(*positions.begin() == 0);
    CHECK(*positions.rbegin() == static_cast<int32_t>(p.blocks.size()) - 1);
  }
  // For each block, the components holding it: (first, last, head position).
  std::vector<std::vector<std::array<int32_t, 3>>> holders(p.blocks.size());
  std::set<int32_t> heads;
  std::function<void(const std::vector<ab::SweepItem>&, std::vector<std::array<int32_t, 3>>&)>
      walk = [&](const auto& items, auto& enclosing) {
        for (const ab::SweepItem& i : items) {
          if (i.block >= 0) {
            CHECK(i.first == position[i.block]);
            CHECK(i.last == i.first);
            holders[i.block] = enclosing;
            continue;
          }
          REQUIRE(!i.children.empty());
          REQUIRE(i.children.front().block >= 0);  // a component starts with its head
          CHECK(i.first == i.children.front().first);
          CHECK(i.last == i.children.back().last);
          heads.insert(i.children.front().block);
          enclosing.push_back({i.first, i.last, i.first});
          walk(i.children, enclosing);
          enclosing.pop_back();
        }
      };
  std::vector<std::array<int32_t, 3>> none;
  walk(order, none);
  // Blocks no lane can reach (the order appends them) are exempt.
  const auto edges = edges_of(p);
  std::vector<bool> reached(p.blocks.size(), false);
  std::vector<int32_t> work = {p.entry_block};
  reached[p.entry_block] = true;
  while (!work.empty()) {
    const int32_t b = work.back();
    work.pop_back();
    for (auto [from, to] : edges)
      if (from == b && !reached[to]) {
        reached[to] = true;
        work.push_back(to);
      }
  }
  for (auto [from, to] : edges) {
    if (!reached[from] || position[to] > position[from]) continue;  // forward
    bool back_to_head = false;
    for (const auto& c : holders[from])
      back_to_head |= c[2] == position[to];
    CAPTURE(from);
    CAPTURE(to);
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

TEST_CASE("sweep order: loops and recursion are components, straight code is not") {
  auto straight = lower_source(R"(
fn twice(x: int) -> int { return x + x; }
fn main(n: int) -> int {
    var r = twice(n);
    if r > 10 { r = r - 10; }
    return twice(r);
})");
  // `twice` is called twice: its Return goes to both continuations, and the second call jumps
  // back to its entry, so the two calls form one cycle; nothing else does.
  const auto heads = check_order(straight->lowered);
  CHECK(heads.size() <= 1);

  auto loop = lower_source(R"(
fn main(n: int) -> int {
    var i = 0;
    var s = 0;
    while i < n { s += i; i += 1; }
    return s;
})");
  CHECK(check_order(loop->lowered).size() == 1);

  auto fib = lower_source(R"(
fn fib(n: int) -> int {
    if n <= 1 { return 1; }
    return fib(n - 1) + fib(n - 2);
}
fn main(n: int) -> int { return fib(n); })");
  const auto fib_heads = check_order(fib->lowered);
  // fib's entry block heads the recursion; main's blocks are in no component.
  const ab::LoweredProgram& p = fib->lowered;
  bool entry_is_head = false;
  for (int32_t h : fib_heads) {
    CHECK(p.source->functions.at(p.blocks[h].function).name == "fib");
    entry_is_head |= p.blocks[h].name == "fib.b0";
  }
  CHECK(entry_is_head);
}

}  // namespace
