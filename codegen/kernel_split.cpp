#include "codegen/kernel_split.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "passes/analysis/sweep_order.h"

namespace ab {
namespace {

// Weights of block_cost, in rough GLSL statements.
constexpr uint32_t kBlockOverhead = 8;  // step count, budget check, the sweep's test, PC update
constexpr uint32_t kBufferAccess = 8;   // a storage-buffer load or store (a loop over SIMD lanes)
constexpr uint32_t kFaultCheck = 4;     // a fault test and its record
constexpr uint32_t kWordsUnrolled = 8;  // glsl_codegen's kUnrollWords: longer values loop

uint32_t words_cost(uint32_t words) {
  return std::min(words, kWordsUnrolled + 2);
}

}  // namespace

uint32_t block_cost(const LoweredProgram& program, int32_t b, Residency residency,
                    uint32_t register_words) {
  const LoweredBlock& block = program.blocks[b];
  const Types& types = program.types();
  auto words = [&](VarId v) { return types.words(program.vars[v].type); };
  uint32_t cost = kBlockOverhead;
  std::set<VarId> kept, written;  // Register and Stacked variables
  auto note = [&](VarId v) {
    if (program.vars[v].storage != Storage::Temp) kept.insert(v);
  };
  for (const Op& op : block.ops) {
    for (VarId a : op.args)
      note(a);
    if (op.dst >= 0) {
      note(op.dst);
      written.insert(op.dst);
    }
    const uint32_t n = op.dst >= 0 ? words(op.dst) : 1;
    const uint32_t faults = kFaultCheck * static_cast<uint32_t>(op.path.size());
    if (is_stack_op(op) || is_division(op) || is_emit(op))
      cost += kBufferAccess * words_cost(words(op.args[0])) + kFaultCheck;
    else if (is_uniform_get(op))
      cost += kBufferAccess * words_cost(n) + faults;
    else if (has_path(op.code))  // Get, Set
      cost += words_cost(n) + faults;
    else if (is_assert(op))
      cost += words_cost(n) + kFaultCheck;
    else
      cost += words_cost(n);
  }
  switch (block.term.kind) {
    case Terminator::Kind::PushJump:
      cost += kBufferAccess + kFaultCheck + 4;
      break;
    case Terminator::Kind::Return:
      cost += kBufferAccess + 2;
      break;
    case Terminator::Kind::Branch:
      note(block.term.cond);
      cost += 1;
      break;
    case Terminator::Kind::Jump:
      cost += 1;
      break;
    case Terminator::Kind::TailJump:  // the call count; parameters were copied by the block's ops
      cost += 2;
      break;
  }
  for (VarId v : kept) {
    const uint32_t n = words(v), moves = written.count(v) ? 2 : 1;
    if (residency == Residency::Memory) {
      cost += kBufferAccess * words_cost(n) * moves;
    } else if (n <= register_words) {
      cost += 4 * words_cost(n);  // a case of ab_load's and ab_store's switches
    } else {
      // Left in the state buffer: a load (and a store) per use, one access in a loop past
      // kWordsUnrolled words, so the code does not grow with the value.
      cost += (n <= kWordsUnrolled ? kBufferAccess * n : kBufferAccess + 2) * moves;
    }
  }
  return cost;
}

namespace {

// Static heat: a block nested in d cycles of the sweep graph (the components of sweep_order) is
// taken to run kCycleHeat^d times as often as one in none, up to kMaxHeatDepth (8^12 times the
// edges of a program stays far below 2^64).
constexpr uint64_t kCycleHeat = 8;
constexpr int kMaxHeatDepth = 12;

void note_depths(const std::vector<SweepItem>& items, int depth, std::vector<int>& out) {
  for (const SweepItem& item : items) {
    if (item.node >= 0) out[item.block] = std::max(out[item.block], depth);
    note_depths(item.children, depth + 1, out);
  }
}

// Each block's neighbours in the sweep graph without copies (calls go to the callee's entry, a
// Return to every continuation of a call into its function), both directions merged, sorted by
// block, with the running sum of the edges' heat: an edge is as hot as its cooler end.
struct HeatGraph {
  std::vector<std::vector<std::pair<int32_t, uint64_t>>> next;  // (block, heat so far)

  // The heat of b's edges to blocks before `first`.
  uint64_t heat_before(int32_t b, int32_t first) const {
    const auto& n = next[b];
    const auto it = std::lower_bound(n.begin(), n.end(), std::pair<int32_t, uint64_t>{first, 0});
    return it == n.begin() ? 0 : std::prev(it)->second;
  }
};

HeatGraph heat_graph(const LoweredProgram& program) {
  const size_t blocks = program.blocks.size();
  std::vector<int> depth(blocks, 0);
  note_depths(sweep_order(program, false), 0, depth);
  auto heat = [&](int32_t b) {
    uint64_t h = 1;
    for (int d = 0; d < std::min(depth[b], kMaxHeatDepth); ++d)
      h *= kCycleHeat;
    return h;
  };
  const SweepGraph g = sweep_graph(program, false);
  std::vector<std::map<int32_t, uint64_t>> edges(blocks);
  for (size_t n = 0; n < g.succ.size(); ++n)
    for (int32_t m : g.succ[n]) {
      const int32_t a = g.block[n], b = g.block[m];
      if (a == b) continue;
      const uint64_t w = std::min(heat(a), heat(b));
      edges[a][b] += w;
      edges[b][a] += w;
    }
  HeatGraph out;
  out.next.resize(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    uint64_t sum = 0;
    for (const auto& [to, w] : edges[b])
      out.next[b].push_back({to, sum += w});
  }
  return out;
}

// The fewest contiguous parts of at most max_cost each (a block costlier than that alone in its
// part): the bound on the number of parts a split may use is kExtraHotParts more.
size_t fewest_parts(const std::vector<uint32_t>& cost, uint32_t max_cost) {
  size_t parts = 1;
  uint64_t sum = 0;
  for (size_t b = 0; b < cost.size(); ++b) {
    if (b > 0 && sum > 0 && sum + cost[b] > max_cost) {
      ++parts;
      sum = 0;
    }
    sum += cost[b];
  }
  return parts;
}

std::vector<BlockSet> as_sets(const std::vector<BlockRange>& ranges) {
  std::vector<BlockSet> out;
  for (const BlockRange& r : ranges)
    out.push_back(BlockSet{{r}});
  return out;
}

// The contiguous candidate: dynamic programming over the cut points. best[k][j] is the least heat
// of edges crossing between parts when blocks [0, j) form k parts. A part [i, j) adds the heat of
// its edges to blocks before i, so each crossing edge counts once, when its later end's part
// closes.
std::vector<BlockSet> contiguous_split(const std::vector<uint32_t>& cost, uint32_t max_cost,
                                       size_t most, const HeatGraph& heat) {
  const auto blocks = static_cast<int32_t>(cost.size());
  constexpr uint64_t kNone = UINT64_MAX;
  std::vector<std::vector<uint64_t>> best(most + 1, std::vector<uint64_t>(blocks + 1, kNone));
  std::vector<std::vector<int32_t>> from(most + 1, std::vector<int32_t>(blocks + 1, -1));
  best[0][0] = 0;
  for (size_t k = 0; k < most; ++k)
    for (int32_t i = 0; i < blocks; ++i) {
      if (best[k][i] == kNone) continue;
      uint64_t sum = 0, crossing = 0;
      for (int32_t j = i + 1; j <= blocks; ++j) {
        sum += cost[j - 1];
        if (j > i + 1 && sum > max_cost) break;
        crossing += heat.heat_before(j - 1, i);
        if (best[k][i] + crossing < best[k + 1][j]) {
          best[k + 1][j] = best[k][i] + crossing;
          from[k + 1][j] = i;
        }
      }
    }
  // The least crossing heat; of equals, the fewest parts.
  size_t parts = 0;
  for (size_t k = 1; k <= most; ++k)
    if (best[k][blocks] != kNone && (parts == 0 || best[k][blocks] < best[parts][blocks]))
      parts = k;
  std::vector<BlockRange> out(parts);
  for (int32_t j = blocks; parts > 0; --parts) {
    out[parts - 1] = {from[parts][j], j};
    j = from[parts][j];
  }
  return as_sets(out);
}

// The clustered candidate, parts of any blocks (Pettis and Hansen's greedy layout, with a cap):
// the program cut into chunks (runs of one function's consecutive blocks, at most max_cost
// each), chunks joined along their hottest edges while the joined cost stays within max_cost,
// then the clusters packed into parts first-fit by decreasing cost.
std::vector<BlockSet> clustered_split(const LoweredProgram& program,
                                      const std::vector<uint32_t>& cost, uint32_t max_cost,
                                      const HeatGraph& heat) {
  const auto blocks = static_cast<int32_t>(cost.size());
  std::vector<int32_t> chunk_of(blocks);
  std::vector<uint64_t> chunk_cost;
  for (int32_t b = 0; b < blocks; ++b) {
    const bool same = b > 0 && program.blocks[b].function == program.blocks[b - 1].function &&
                      chunk_cost.back() + cost[b] <= max_cost;
    if (!same) chunk_cost.push_back(0);
    chunk_cost.back() += cost[b];
    chunk_of[b] = static_cast<int32_t>(chunk_cost.size()) - 1;
  }
  const size_t chunks = chunk_cost.size();
  std::map<std::pair<int32_t, int32_t>, uint64_t> between;  // chunk pair (lower first) -> heat
  for (int32_t b = 0; b < blocks; ++b) {
    uint64_t before = 0;
    for (const auto& [to, upto] : heat.next[b]) {
      if (to < b && chunk_of[to] != chunk_of[b])
        between[{chunk_of[to], chunk_of[b]}] += upto - before;
      before = upto;
    }
  }
  std::vector<std::pair<uint64_t, std::pair<int32_t, int32_t>>> edges;
  for (const auto& [pair, h] : between)
    edges.push_back({h, pair});
  std::stable_sort(edges.begin(), edges.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<int32_t> root(chunks);
  for (size_t c = 0; c < chunks; ++c)
    root[c] = static_cast<int32_t>(c);
  auto find = [&](int32_t c) {
    while (root[c] != c)
      c = root[c] = root[root[c]];
    return c;
  };
  std::vector<uint64_t> cluster_cost = chunk_cost;
  for (const auto& [h, pair] : edges) {
    const int32_t a = find(pair.first), b = find(pair.second);
    if (a == b || cluster_cost[a] + cluster_cost[b] > max_cost) continue;
    root[b] = a;
    cluster_cost[a] += cluster_cost[b];
  }
  std::vector<int32_t> clusters;
  for (size_t c = 0; c < chunks; ++c)
    if (find(static_cast<int32_t>(c)) == static_cast<int32_t>(c))
      clusters.push_back(static_cast<int32_t>(c));
  std::stable_sort(clusters.begin(), clusters.end(),
                   [&](int32_t a, int32_t b) { return cluster_cost[a] > cluster_cost[b]; });
  std::vector<uint64_t> bin_cost;
  std::vector<int32_t> bin_of(chunks, -1);  // by cluster root
  for (int32_t c : clusters) {
    size_t bin = 0;
    while (bin < bin_cost.size() && bin_cost[bin] + cluster_cost[c] > max_cost)
      ++bin;
    if (bin == bin_cost.size()) bin_cost.push_back(0);
    bin_cost[bin] += cluster_cost[c];
    bin_of[c] = static_cast<int32_t>(bin);
  }
  // Parts in the order of their first blocks, each a list of ranges.
  std::vector<BlockSet> parts(bin_cost.size());
  std::vector<int32_t> part_of_bin(bin_cost.size(), -1);
  int32_t next = 0;
  for (int32_t b = 0; b < blocks; ++b) {
    const int32_t bin = bin_of[find(chunk_of[b])];
    if (part_of_bin[bin] < 0) part_of_bin[bin] = next++;
    std::vector<BlockRange>& ranges = parts[part_of_bin[bin]].ranges;
    if (!ranges.empty() && ranges.back().end == b)
      ranges.back().end = b + 1;
    else
      ranges.push_back({b, b + 1});
  }
  return parts;
}

uint64_t heat_between(const HeatGraph& heat, const std::vector<BlockSet>& parts) {
  std::vector<size_t> part_of(heat.next.size(), 0);
  for (size_t p = 0; p < parts.size(); ++p)
    parts[p].each([&](int32_t b) { part_of[b] = p; });
  uint64_t sum = 0;
  for (size_t b = 0; b < heat.next.size(); ++b) {
    uint64_t before = 0;  // each edge once, from its later end
    for (const auto& [to, upto] : heat.next[b]) {
      if (static_cast<size_t>(to) < b && part_of[to] != part_of[b]) sum += upto - before;
      before = upto;
    }
  }
  return sum;
}

std::vector<BlockSet> split(const LoweredProgram& program, const std::vector<uint32_t>& cost,
                            uint32_t max_cost, const HeatGraph& heat) {
  const auto blocks = static_cast<int32_t>(cost.size());
  uint64_t total = 0;
  for (uint32_t c : cost)
    total += c;
  if (max_cost == 0 || total <= uint64_t{kSplitAbove} * max_cost) return as_sets({{0, blocks}});
  const size_t most = fewest_parts(cost, max_cost) + kExtraHotParts;
  std::vector<BlockSet> parts = contiguous_split(cost, max_cost, most, heat);
  std::vector<BlockSet> clustered = clustered_split(program, cost, max_cost, heat);
  if (clustered.size() <= most && heat_between(heat, clustered) < heat_between(heat, parts))
    parts = std::move(clustered);
  return parts;
}

}  // namespace

KernelSplit split_kernels(const LoweredProgram& program, uint32_t max_cost,
                          uint32_t register_words) {
  std::vector<uint32_t> memory(program.blocks.size()), registers(program.blocks.size());
  for (size_t b = 0; b < program.blocks.size(); ++b) {
    memory[b] = block_cost(program, static_cast<int32_t>(b), Residency::Memory);
    registers[b] =
        block_cost(program, static_cast<int32_t>(b), Residency::Registers, register_words);
  }
  KernelSplit result;
  uint64_t largest = 0;
  for (const auto* costs : {&memory, &registers}) {
    uint64_t total = 0;
    for (uint32_t c : *costs)
      total += c;
    largest = std::max(largest, total);
  }
  // The sweep graph only for a program that splits.
  const HeatGraph heat = max_cost > 0 && largest > uint64_t{kSplitAbove} * max_cost
                             ? heat_graph(program)
                             : HeatGraph{std::vector<std::vector<std::pair<int32_t, uint64_t>>>(
                                   program.blocks.size())};
  result.memory_parts = split(program, memory, max_cost, heat);
  result.register_parts = split(program, registers, max_cost, heat);
  if (max_cost == 0) return result;
  if (result.register_parts.size() > 1) {
    result.copy_callees = false;
    return result;
  }
  // The copies repeat blocks in the lane kernel (up to kMaxSweepNodesPerBlock times).
  uint64_t with_copies = 0;
  for (int32_t b : sweep_graph(program).block)
    with_copies += registers[b];
  result.copy_callees = with_copies <= uint64_t{kSplitAbove} * max_cost;
  return result;
}

uint64_t crossing_heat(const LoweredProgram& program, const std::vector<BlockSet>& parts) {
  return heat_between(heat_graph(program), parts);
}

uint32_t automatic_register_words(const LoweredProgram& program, uint32_t max_cost) {
  return split_kernels(program, max_cost, kRegisterWords).register_parts.size() > 1
             ? kLargeProgramRegisterWords
             : kRegisterWords;
}

}  // namespace ab
