// The split's contract (kernel_split.h, issue 26): the parts are contiguous ranges covering every
// block once, each within the cost cap (or one block), at most kExtraHotParts more than the
// fewest; of all such splits the chosen one has the least crossing heat; and a hot recursion that
// a split by cost alone would cut lands in one part. No device: the split is computed, not run
// (engine_compile_test runs split programs on every schedule).
#include <algorithm>

#include "autobatch/sampler.h"
#include "codegen/kernel_split.h"
#include "core/module_impl.h"
#include "support/engine_test_support.h"
#include "support/program_gen.h"

namespace ab::enginetest {
namespace {

std::vector<uint32_t> costs(const LoweredProgram& program, Residency r) {
  std::vector<uint32_t> out;
  for (size_t b = 0; b < program.blocks.size(); ++b)
    out.push_back(block_cost(program, static_cast<int32_t>(b), r));
  return out;
}

// The cut points of a split by cost alone: each part as long as the cap allows.
std::vector<BlockRange> greedy_split(const std::vector<uint32_t>& cost, uint32_t max_cost) {
  std::vector<BlockRange> parts;
  BlockRange part{0, 0};
  uint64_t sum = 0;
  for (int32_t b = 0; b < static_cast<int32_t>(cost.size()); ++b) {
    if (part.end > part.first && sum + cost[b] > max_cost) {
      parts.push_back(part);
      part = {b, b};
      sum = 0;
    }
    part.end = b + 1;
    sum += cost[b];
  }
  parts.push_back(part);
  return parts;
}

std::vector<BlockSet> sets(const std::vector<BlockRange>& ranges) {
  std::vector<BlockSet> out;
  for (const BlockRange& r : ranges)
    out.push_back(BlockSet{{r}});
  return out;
}

bool within_cap(const std::vector<uint32_t>& cost, const BlockSet& part, uint32_t max_cost) {
  uint64_t sum = 0, blocks = 0;
  part.each([&](int32_t b) {
    sum += cost[b];
    ++blocks;
  });
  return blocks == 1 || sum <= max_cost;
}

// Random contiguous splits within the cap of at most `most` parts (fixed seed): each part ends at
// a random block among those the cap allows after its first.
std::vector<std::vector<BlockRange>> random_splits(const std::vector<uint32_t>& cost,
                                                   uint32_t max_cost, size_t most, int count) {
  std::vector<std::vector<BlockRange>> out;
  uint64_t state = 12345;
  const auto blocks = static_cast<int32_t>(cost.size());
  for (int tries = 0; tries < count * 20 && static_cast<int>(out.size()) < count; ++tries) {
    std::vector<BlockRange> parts;
    for (int32_t first = 0; first < blocks && parts.size() < most;) {
      int32_t last = first + 1;  // the furthest end the cap allows
      for (uint64_t sum = cost[first]; last < blocks && sum + cost[last] <= max_cost; ++last)
        sum += cost[last];
      state = state * 6364136223846793005u + 1442695040888963407u;
      // Mostly long parts, so that the split fits `most`.
      const auto span = static_cast<int32_t>((state >> 33) % 4 == 0 ? (state >> 40) % (last - first)
                                                                    : last - first - 1);
      parts.push_back({first, first + 1 + span});
      first = parts.back().end;
    }
    if (parts.back().end == blocks) out.push_back(parts);
  }
  return out;
}

void check_contract(const LoweredProgram& program, uint32_t max_cost, Residency r,
                    const std::vector<BlockSet>& parts) {
  const std::vector<uint32_t> cost = costs(program, r);
  REQUIRE(!parts.empty());
  std::vector<int> seen(program.blocks.size(), 0);
  for (size_t p = 0; p < parts.size(); ++p) {
    CAPTURE(p);
    CHECK(!parts[p].ranges.empty());
    parts[p].each([&](int32_t b) { ++seen[b]; });
    // One part is the whole program, which costs at most kSplitAbove * max_cost.
    CHECK((parts.size() == 1 || within_cap(cost, parts[p], max_cost)));
  }
  for (size_t b = 0; b < seen.size(); ++b) {
    CAPTURE(b);
    CHECK(seen[b] == 1);  // every block in exactly one part
  }
  const size_t fewest = greedy_split(cost, max_cost).size();
  CHECK(parts.size() <= fewest + kExtraHotParts);
  // No contiguous split the contract allows crosses less heat: the split by cost alone and
  // random ones (an exhaustive search takes too long past a few parts).
  const uint64_t chosen = crossing_heat(program, parts);
  CHECK(chosen <= crossing_heat(program, sets(greedy_split(cost, max_cost))));
  const auto others = random_splits(cost, max_cost, fewest + kExtraHotParts, 200);
  CHECK(others.size() >= 20);
  for (const auto& other : others)
    CHECK(chosen <= crossing_heat(program, sets(other)));
}

TEST_CASE(
    "kernel_split: parts cover every block once within the cap, with the least crossing heat") {
  struct Case {
    std::string name, source;
    uint32_t max_cost;
  };
  std::vector<Case> cases = {{"ring6", testing::call_ring_program(6), 150}};
  for (uint64_t seed : {3u, 7u, 11u})
    cases.push_back({fmt::format("gen{}", seed), testing::generate_program(seed), 400});
  size_t split = 0;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    auto loaded = load_source(c.source, "main", c.name + ".ab");
    const KernelSplit s = split_kernels(loaded->lowered, c.max_cost);
    for (Residency r : {Residency::Memory, Residency::Registers}) {
      CAPTURE(static_cast<int>(r));
      check_contract(loaded->lowered, c.max_cost, r, s.parts(r));
      split += s.parts(r).size() > 1;
    }
  }
  CHECK(split >= 4);  // the cases do split
}

// Cold straight-line functions before and after a hot recursion, in block order. Of the caps
// that split the program and hold the recursion in one part, the test takes one at which a split
// by cost alone cuts it; the hot split does not.
TEST_CASE("kernel_split: a hot recursion that a split by cost would cut lands in one part") {
  std::string source;
  for (int f = 0; f < 12; ++f) {
    if (f == 3)
      source += R"(
fn hot(n: int, acc: int) -> int {
  if n <= 0 { return acc; }
  var a = acc * 3 + n;
  if a % 7 == 0 { a = a + 1; } else { a = a - 1; }
  var b = a * 5 - n;
  if b % 3 == 0 { b = b + 2; }
  return hot(n - 1, b);
}
)";
    source += fmt::format("fn cold{}(x: int) -> int {{\n  var y = x;\n", f);
    for (int i = 0; i < 12; ++i)
      source += fmt::format("  y = y * {} + {};\n", i + f + 3, i);
    source += "  return y;\n}\n";
  }
  source += "fn main(n: int) -> int {\n  var x = hot(n, n);\n";
  for (int f = 0; f < 12; ++f)
    source += fmt::format("  x = cold{}(x);\n", f);
  source += "  return x;\n}\n";
  // Calls stay calls: the cold functions have one call site each, and inline_calls would fold
  // them into main; the test is about a split of many functions' blocks.
  FrontendOptions frontend;
  frontend.inline_calls = false;
  auto loaded = load_source(source, "main", "hot.ab", frontend);
  const LoweredProgram& program = loaded->lowered;
  int32_t hot_first = INT32_MAX, hot_end = 0;
  for (size_t b = 0; b < program.blocks.size(); ++b)
    if (program.source->functions[program.blocks[b].function].name == "hot") {
      hot_first = std::min(hot_first, static_cast<int32_t>(b));
      hot_end = std::max(hot_end, static_cast<int32_t>(b) + 1);
    }
  const std::vector<uint32_t> cost = costs(program, Residency::Memory);
  uint64_t hot_cost = 0, total = 0;
  for (int32_t b = 0; b < static_cast<int32_t>(cost.size()); ++b) {
    total += cost[b];
    if (b >= hot_first && b < hot_end) hot_cost += cost[b];
  }
  // Whether hot's blocks lie in more than one part.
  auto cuts_hot = [&](const std::vector<BlockSet>& parts) {
    return std::none_of(parts.begin(), parts.end(), [&](const BlockSet& p) {
      for (int32_t b = hot_first; b < hot_end; ++b)
        if (!p.contains(b)) return false;
      return true;
    });
  };
  uint32_t cap = 0;
  for (auto c = static_cast<uint32_t>(hot_cost); uint64_t{kSplitAbove} * c < total && cap == 0; ++c)
    if (cuts_hot(sets(greedy_split(cost, c)))) cap = c;
  CAPTURE(hot_cost);
  CAPTURE(total);
  REQUIRE(cap > 0);  // the test's premise
  const KernelSplit s = split_kernels(program, cap);
  const std::vector<BlockSet>& parts = s.parts(Residency::Memory);
  REQUIRE(parts.size() > 1);
  check_contract(program, cap, Residency::Memory, parts);
  CHECK_FALSE(cuts_hot(parts));
  CHECK(crossing_heat(program, parts) < crossing_heat(program, sets(greedy_split(cost, cap))));
}

// The sampler over the shipped models at the default cap, with long values in the state buffer
// as the engine splits them: the split crosses less heat than the split by cost alone (measured
// 5.4x less on eight_schools, 3.3x on the 100-d loop models: docs/engine.md, "Parts").
TEST_CASE("kernel_split: the sampler's split crosses less heat than a split by cost") {
  for (const char* name :
       {"eight_schools", "logistic_regression_loop", "correlated_gaussian_loop"}) {
    CAPTURE(name);
    auto model =
        sample::Model::load(std::string(AB_SOURCE_DIR) + "/samples/models/" + name + ".ab");
    REQUIRE_MESSAGE(model.ok(), model.error());
    const LoweredProgram& program = (*model)->module()->impl().lowered;
    const uint32_t words = automatic_register_words(program, 3000);
    CHECK(words == kLargeProgramRegisterWords);
    const KernelSplit s = split_kernels(program, 3000, words);
    std::vector<uint32_t> cost;
    for (size_t b = 0; b < program.blocks.size(); ++b)
      cost.push_back(block_cost(program, static_cast<int32_t>(b), Residency::Registers, words));
    const std::vector<BlockSet>& parts = s.parts(Residency::Registers);
    CHECK(parts.size() > 1);
    CHECK(parts.size() <= greedy_split(cost, 3000).size() + kExtraHotParts);
    CHECK(crossing_heat(program, parts) * 3 <
          crossing_heat(program, sets(greedy_split(cost, 3000))));
  }
}

}  // namespace
}  // namespace ab::enginetest
