// The lane grid's views at scale, as plain model code: grouping into bands, the grid layout,
// the lane filter (its parser's errors and its counts), the depth histogram, the block x step
// heatmap, the per-lane strip, and their script commands. Every count is checked against the
// batch as a separate VmRun (the ir/ VM, not the debugger's source) sees it, counted here.
#include <doctest/doctest.h>

#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "cpu/vm.h"
#include "debugger/lane_views.h"
#include "debugger/script.h"
#include "support/debugger_test_support.h"

using namespace ab;
using namespace ab::debugger;
using ab::debugger::testing::fib_batch;
using ab::debugger::testing::Loaded;

namespace {

// The batch after `steps` steps, as an independent VmRun has it.
struct Independent {
  std::vector<int32_t> pc;
  std::vector<uint32_t> depth;
  std::vector<uint8_t> faulted;
  std::vector<uint32_t> registers;
  size_t stride = 0;
  int32_t exit = 0;
};

Independent independent(const Loaded& f, uint64_t steps) {
  VmRun run(f.lowered, f.batch, f.options);
  run.step(steps);
  Independent out;
  out.pc = run.lane_pcs();
  out.depth = run.lane_depths();
  out.faulted = run.lane_faulted();
  out.registers = run.registers();
  out.stride = out.registers.size() / f.batch.lanes;
  out.exit = static_cast<int32_t>(f.module->blocks().size());
  return out;
}

// The register offset of a variable by its lowered name ("fib.n").
uint32_t offset_of(const Loaded& f, const std::string& name) {
  for (const VariableInfo& v : f.module->variables())
    if (v.name == name) return v.offset;
  FAIL("no variable " << name);
  return 0;
}

// `n` in the lane's current function (fib.n or main.n), as an int; nullopt when not live, or
// waiting at a call's return block (fib.n is stacked: the caller's value is on its stack then).
std::optional<int32_t> n_of(const Loaded& f, const Independent& s, uint32_t lane) {
  if (s.faulted[lane] || s.pc[lane] == s.exit) return std::nullopt;
  for (const BlockInfo& b : f.module->blocks())
    if (b.call_return == s.pc[lane]) return std::nullopt;
  const std::string function = f.module->blocks()[s.pc[lane]].function;
  return static_cast<int32_t>(s.registers[lane * s.stride + offset_of(f, function + ".n")]);
}

// samples/fib.ab with n drawn from 0..14: lanes spread over many blocks and depths.
Loaded random_fib(uint32_t lanes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> n;
  for (uint32_t lane = 0; lane < lanes; ++lane)
    n.push_back(rng() % 15);
  return Loaded(ab::testing::read_sample("fib.ab"), {n}, lanes);
}

uint32_t count_filter(DebuggerModel& m, const std::string& text) {
  const Status set = m.lane_grid().set_filter(text);
  REQUIRE_MESSAGE(set.ok(), set.error());
  return m.filter_count();
}

std::string filter_error(const DebuggerModel& m, const std::string& text) {
  Expected<LaneFilter> f = LaneFilter::parse(text, m.module());
  REQUIRE_MESSAGE(!f.ok(), text);
  return f.error();
}

std::string run(DebuggerModel& m, const std::string& text, int expect = 0) {
  std::ostringstream log, errors;
  const int code = run_script(m, text, "cmds.txt", {}, log, errors);
  CHECK_MESSAGE(code == expect, errors.str());
  return expect == 0 ? log.str() : errors.str();
}

}  // namespace

TEST_CASE("views: the filter counts what the batch holds, at the start and mid-run") {
  const Loaded f = fib_batch(1000);
  DebuggerModel m(f.source());
  // At step 0 every lane waits in main with n = lane % 10.
  CHECK(count_filter(m, "n > 5") == 400);
  CHECK(count_filter(m, "n == 3 || n == 7") == 200);
  CHECK(count_filter(m, "!(n < 9)") == 100);
  CHECK(count_filter(m, "lane < 10 && n % 2 == 1") == 5);
  CHECK(count_filter(m, "live") == 1000);
  uint32_t any_deep_big = 0;
  for (uint64_t at : {2u, 5u, 13u, 22u, 58u, 201u}) {
    m.seek(at);
    const Independent s = independent(f, at);
    uint32_t deep_big = 0, at_ret = 0, finished = 0, fib_n = 0;
    const int32_t ret_block = m.blocks().find("fib.b3.ret0");
    REQUIRE(ret_block >= 0);
    for (uint32_t lane = 0; lane < 1000; ++lane) {
      const auto n = n_of(f, s, lane);
      deep_big += n && *n > 3 && s.depth[lane] < 4;
      at_ret += s.pc[lane] == ret_block;
      finished += s.pc[lane] == s.exit && !s.faulted[lane];
      fib_n += static_cast<int32_t>(s.registers[lane * s.stride + offset_of(f, "fib.n")]) >= 2;
    }
    CHECK(count_filter(m, "n > 3 && depth < 4") == deep_big);
    any_deep_big += deep_big;
    CHECK(count_filter(m, "block == fib.b3.ret0") == at_ret);
    CHECK(count_filter(m, "finished") == finished);
    CHECK(count_filter(m, "fib.n >= 2") == fib_n);  // a lowered name reads every lane's register
    CHECK(count_filter(m, "-depth <= -(1 + 0) * 1") == 1000 - finished);
  }
  CHECK(any_deep_big > 0);  // the comparison above is not only of empty sets
  CHECK(m.lane_grid().set_filter("off").ok());
  CHECK(!m.lane_grid().has_filter());
  CHECK(m.filter_matches().empty());
}

TEST_CASE("views: a bad filter names the column of the bad token, and nothing crashes") {
  const Loaded f = fib_batch(10);
  DebuggerModel m(f.source());
  CHECK(filter_error(m, "n >").find("column 4: expected a value") != std::string::npos);
  CHECK(filter_error(m, "n > 15 && && depth").find("column 11: expected a value") !=
        std::string::npos);
  CHECK(filter_error(m, "n = 3").find("column 3: unexpected '=' (did you mean '=='?)") !=
        std::string::npos);
  CHECK(filter_error(m, "n > 1 & depth").find("column 7") != std::string::npos);
  CHECK(filter_error(m, "(n > 1").find("column 7: expected ')' to close the '(' at column 1") !=
        std::string::npos);
  CHECK(filter_error(m, "depth > 2 m").find("column 11: unexpected 'm' after") !=
        std::string::npos);
  CHECK(filter_error(m, "m > 1").find("column 1: unknown name 'm'") != std::string::npos);
  CHECK(filter_error(m, "n @ 2").find("column 3: unexpected character '@'") != std::string::npos);
  CHECK(filter_error(m, "1 < n < 3").find("column 7: comparisons do not chain") !=
        std::string::npos);
  CHECK(filter_error(m, "n > 1x").find("column 5: bad number '1x'") != std::string::npos);
  CHECK(filter_error(m, "   ").find("empty") != std::string::npos);
  CHECK(filter_error(m, std::string(5000, '(') + "1" + std::string(5000, ')'))
            .find("nests too deeply") != std::string::npos);
  CHECK(filter_error(m, std::string(5000, '!') + "1").find("nests too deeply") !=
        std::string::npos);
  // Random text from the filter's own alphabet never crashes the parser or the evaluator.
  std::mt19937 rng(29);
  const std::string alphabet = "n depth block lane fault 0123456789.()!<>=&|+-*/% fib.b0";
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    for (int k = rng() % 24; k > 0; --k)
      text += alphabet[rng() % alphabet.size()];
    Expected<LaneFilter> parsed = LaneFilter::parse(text, m.module());
    if (parsed) {
      std::vector<uint8_t> match;
      parsed->evaluate(lane_state(m.source()), match);
      CHECK(match.size() == 10);
    } else {
      CHECK(parsed.error().find("column ") == 0);
    }
  }
}

TEST_CASE("views: grouping by block, depth and fault counts the lanes the batch holds") {
  const Loaded f = random_fib(3000, 1);
  DebuggerModel m(f.source());
  m.step(21);
  const Independent s = independent(f, 21);
  std::map<int32_t, uint32_t> per_block;
  std::map<uint32_t, uint32_t> per_depth;
  uint32_t finished = 0;
  for (uint32_t lane = 0; lane < 3000; ++lane) {
    if (s.pc[lane] == s.exit) {
      ++finished;
      continue;
    }
    ++per_block[s.pc[lane]];
    ++per_depth[s.depth[lane]];
  }
  REQUIRE(finished > 0);
  REQUIRE(per_block.size() >= 2);

  auto check_bands = [&](const LaneGrouping& g, auto key_of) {
    std::vector<uint32_t> sorted = g.order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<uint32_t> all(3000);
    std::iota(all.begin(), all.end(), 0);
    CHECK(sorted == all);  // every lane once
    for (const Band& b : g.bands) {
      const auto first = g.order.begin() + b.first;
      CHECK(std::is_sorted(first, first + b.count));  // lane order within a band
      for (uint32_t i = 0; i < b.count; ++i)
        CHECK(key_of(g.order[b.first + i]) == b.label);
    }
  };

  REQUIRE(m.lane_grid().set_grouping(GroupBy::Block).ok());
  const LaneGrouping& blocks = m.grouping();
  REQUIRE(blocks.bands.size() == per_block.size() + 1);  // + finished, no faulted band
  size_t i = 0;
  for (auto [pc, count] : per_block) {
    CHECK(blocks.bands[i].label == f.module->blocks()[pc].name);
    CHECK(blocks.bands[i].count == count);
    ++i;
  }
  CHECK(blocks.bands.back().label == "finished");
  CHECK(blocks.bands.back().count == finished);
  check_bands(blocks, [&](uint32_t lane) {
    return s.pc[lane] == s.exit ? std::string("finished") : f.module->blocks()[s.pc[lane]].name;
  });
  // The layout starts every band on a row of its own, and cells and lanes map both ways.
  const GridLayout layout = layout_grid(blocks, 3000, 50);
  CHECK(layout.columns == 50);
  uint32_t rows = 0;
  for (size_t b = 0; b < blocks.bands.size(); ++b) {
    CHECK(layout.band_row[b] == rows);
    rows += (blocks.bands[b].count + 49) / 50;
    const uint32_t lane = layout.cell_lane[size_t{layout.band_row[b]} * 50];
    CHECK(lane == blocks.order[blocks.bands[b].first]);
  }
  CHECK(layout.rows == rows);
  for (uint32_t lane = 0; lane < 3000; ++lane)
    CHECK(layout.cell_lane[layout.lane_cell[lane]] == lane);

  REQUIRE(m.lane_grid().set_grouping(GroupBy::Depth).ok());
  const LaneGrouping& depths = m.grouping();
  REQUIRE(depths.bands.size() == per_depth.size() + 1);
  i = 0;
  for (auto [d, count] : per_depth) {
    CHECK(depths.bands[i].label == "depth " + std::to_string(d));
    CHECK(depths.bands[i].count == count);
    ++i;
  }
  check_bands(depths, [&](uint32_t lane) {
    return s.pc[lane] == s.exit ? std::string("finished")
                                : "depth " + std::to_string(s.depth[lane]);
  });
  // The histogram counts the same live lanes per depth.
  const std::vector<uint32_t> histogram = depth_histogram(lane_state(m.source()));
  for (size_t d = 0; d < histogram.size(); ++d)
    CHECK(histogram[d] == (per_depth.count(d) ? per_depth[d] : 0));
  CHECK(histogram.size() == per_depth.rbegin()->first + 1);

  REQUIRE(m.lane_grid().set_grouping(GroupBy::Fault).ok());
  REQUIRE(m.grouping().bands.size() == 2);
  CHECK(m.grouping().bands[0].label == "running");
  CHECK(m.grouping().bands[0].count == 3000 - finished);
  CHECK(m.lane_grid()
            .set_grouping(GroupBy::Variable, "nosuch")
            .error()
            .find("no variable 'nosuch'") != std::string::npos);

  // Clicking a band selects exactly its lanes through its filter.
  REQUIRE(m.lane_grid().set_grouping(GroupBy::Block).ok());
  for (size_t b = 0; b < m.grouping().bands.size(); ++b) {
    const Band band = m.grouping().bands[b];
    REQUIRE(m.select_band(b).ok());
    CHECK(m.filter_count() == band.count);
    CHECK(m.selected_lane() == m.grouping().order[band.first]);
  }
  CHECK(m.select_band(99).error().find("out of range") != std::string::npos);
}

TEST_CASE("views: grouping by a variable, by value or by range, and faulted lanes") {
  std::vector<uint32_t> n;
  for (uint32_t lane = 0; lane < 500; ++lane)
    n.push_back(lane % 7);
  Loaded few(ab::testing::read_sample("fib.ab"), {n}, 500);
  DebuggerModel m(few.source());
  REQUIRE(m.lane_grid().set_grouping(GroupBy::Variable, "n").ok());
  REQUIRE(m.grouping().bands.size() == 7);
  for (uint32_t v = 0; v < 7; ++v) {
    CHECK(m.grouping().bands[v].label == "n = " + std::to_string(v));
    CHECK(m.grouping().bands[v].count == (500 + 6 - v) / 7);
  }
  // Many distinct values: 16 ranges whose predicates select exactly their lanes.
  std::vector<uint32_t> wide;
  for (uint32_t lane = 0; lane < 500; ++lane)
    wide.push_back((lane * 37) % 60);
  Loaded many(ab::testing::read_sample("fib.ab"), {wide}, 500);
  DebuggerModel w(many.source());
  w.step(40);
  REQUIRE(w.lane_grid().set_grouping(GroupBy::Variable, "n").ok());
  const LaneGrouping g = w.grouping();
  uint32_t total = 0;
  for (size_t b = 0; b < g.bands.size(); ++b) {
    total += g.bands[b].count;
    if (g.bands[b].predicate.empty()) continue;
    CHECK_MESSAGE(count_filter(w, g.bands[b].predicate) == g.bands[b].count, g.bands[b].label);
  }
  CHECK(total == 500);
  CHECK(g.bands.front().label.find("n in [") == 0);

  // A program where some lanes fault: the fault grouping and the `fault` filter find them.
  const char* source = R"(fn main(d: int) -> int {
    return 10 / (d - 3);
}
)";
  Loaded div(source, {{5, 3, 3, 6, 1}}, 5, "div.ab");
  DebuggerModel d(div.source());
  d.step(UINT64_MAX);
  REQUIRE(d.lane_grid().set_grouping(GroupBy::Fault).ok());
  const LaneGrouping& faults = d.grouping();
  REQUIRE(faults.bands.size() == 2);
  CHECK(faults.bands[0].label == "finished");
  CHECK(faults.bands[0].count == 3);
  CHECK(faults.bands[1].label == "faulted");
  CHECK(std::vector<uint32_t>(faults.order.begin() + 3, faults.order.end()) ==
        std::vector<uint32_t>{1, 2});
  CHECK(count_filter(d, "fault") == 2);
}

TEST_CASE("views: the heatmap and the per-block counts follow an independent run step by step") {
  const Loaded f = random_fib(400, 2);
  DebuggerModel m(f.source(), {.interval = 16});
  VmRun run(f.lowered, f.batch, f.options);
  const size_t blocks = f.module->blocks().size();
  const int32_t exit = static_cast<int32_t>(blocks);
  std::vector<std::vector<uint32_t>> waiting, ran;
  while (!run.done()) {
    std::vector<uint32_t> w(blocks, 0), r(blocks, 0);
    const std::vector<int32_t> before = run.lane_pcs();
    for (int32_t pc : before)
      if (pc != exit) ++w[pc];
    CHECK(m.activity().waiting() == w);
    run.step(1);
    for (uint32_t lane : run.last_active())
      ++r[before[lane]];
    waiting.push_back(w);
    ran.push_back(r);
    m.step(1);
  }
  REQUIRE(m.activity().heatmap().steps() == waiting.size());
  CHECK(m.activity().executions() == run.result().stats.block_executions);
  // Going back and forward again records nothing twice.
  m.seek(20);
  m.step(30);
  CHECK(m.activity().heatmap().steps() == waiting.size());
  {
    VmRun at50(f.lowered, f.batch, f.options);
    at50.step(50);
    CHECK(m.activity().executions() == at50.result().stats.block_executions);
  }
  std::vector<double> hw, hr;
  for (uint64_t st = 0; st < waiting.size(); ++st) {
    m.activity().heatmap().range(st, st + 1, hw, hr);
    for (size_t b = 0; b < blocks; ++b) {
      CHECK(hw[b] == waiting[st][b]);
      CHECK(hr[b] == ran[st][b]);
    }
  }
  // Clicking a cell: the state before that step, the lanes waiting at that block selected.
  const auto block = static_cast<int32_t>(std::max_element(waiting[29].begin(), waiting[29].end()) -
                                          waiting[29].begin());
  REQUIRE(waiting[29][block] < 400);
  REQUIRE(m.select_heatmap_cell(29, block).ok());
  CHECK(m.position() == 29);
  CHECK(m.filter_count() == waiting[29][block]);
  REQUIRE(m.selected_lane());
  CHECK(m.source().lane_pcs()[*m.selected_lane()] == block);
}

TEST_CASE("views: a heatmap over its budget sums neighbouring steps and keeps the totals") {
  BlockHeatmap h;
  h.reset(3, 3 * 2 * 8 * 64);  // room for 64 rows
  std::vector<std::vector<uint32_t>> raw;
  std::mt19937 rng(7);
  for (int st = 0; st < 1000; ++st) {
    raw.push_back({static_cast<uint32_t>(rng() % 100), static_cast<uint32_t>(rng() % 100),
                   static_cast<uint32_t>(rng() % 100)});
    h.push(raw.back(), raw.back());
  }
  CHECK(h.steps() == 1000);
  CHECK(h.steps_per_row() == 16);
  CHECK(h.bytes() <= 3 * 2 * 8 * 64);
  std::vector<double> w, r;
  h.range(0, 1000, w, r);
  for (size_t b = 0; b < 3; ++b) {
    double sum = 0;
    for (const auto& row : raw)
      sum += row[b];
    CHECK(w[b] == doctest::Approx(sum / 1000));
  }
  h.range(32, 48, w, r);  // exactly one row
  double sum = 0;
  for (int st = 32; st < 48; ++st)
    sum += raw[st][1];
  CHECK(r[1] == doctest::Approx(sum / 16));
}

TEST_CASE("views: the selected lane's strip, stepping through matches, filter breakpoints") {
  const Loaded f = random_fib(200, 3);
  DebuggerModel m(f.source());
  m.step(5);
  REQUIRE(m.select_lane(9).ok());
  m.step(25);
  REQUIRE(m.selection().strip().size() == 26);
  CHECK(m.selection().strip_first() == 5);
  for (uint64_t i = 0; i < 26; i += 5) {
    const Independent s = independent(f, 5 + i);
    CHECK(m.selection().strip()[i].pc == s.pc[9]);
    CHECK(m.selection().strip()[i].depth == s.depth[9]);
  }

  // Stepping through the matches visits them in lane order and wraps.
  REQUIRE(m.lane_grid().set_filter("n == 4 && lane < 40").ok());
  const Independent s = independent(f, 30);
  std::vector<uint32_t> expected;
  for (uint32_t lane = 0; lane < 40; ++lane)
    if (n_of(f, s, lane) == 4) expected.push_back(lane);
  REQUIRE(!expected.empty());
  CHECK(m.filter_count() == expected.size());
  std::vector<uint32_t> visited;
  for (size_t i = 0; i < expected.size() + 1; ++i)
    visited.push_back(*m.select_next_match());
  CHECK(visited.front() == expected.front());
  CHECK(visited.back() == expected.front());  // wrapped
  visited.pop_back();
  std::sort(visited.begin(), visited.end());
  CHECK(visited == expected);

  // A filter breakpoint stops at the first step after which some lane matches: the same step
  // as the depth breakpoint (depth changes only in lanes that run).
  DebuggerModel a(f.source()), b(f.source());
  REQUIRE(a.add_breakpoint("filter depth > 4 && n == 1").ok());
  REQUIRE(b.add_breakpoint("depth > 4").ok());
  const StopReason ra = a.continue_run(), rb = b.continue_run();
  CHECK(ra.kind == StopReason::Kind::Breakpoint);
  CHECK(ra.message.find("filter depth > 4 && n == 1") != std::string::npos);
  const Independent at = independent(f, a.position());
  uint32_t deep = 0;
  for (uint32_t lane = 0; lane < 200; ++lane)
    deep += at.depth[lane] > 4 && n_of(f, at, lane) == 1;
  CHECK(deep > 0);
  CHECK(a.position() >= b.position());
  const Independent before = independent(f, a.position() - 1);
  for (uint32_t lane = 0; lane < 200; ++lane)
    CHECK(!(before.depth[lane] > 4 && n_of(f, before, lane) == 1));
  // The current filter as a breakpoint; a filter that already holds stops after one step.
  REQUIRE(a.lane_grid().set_filter("live").ok());
  REQUIRE(a.add_breakpoint("filter").ok());
  const uint64_t from = a.position();
  CHECK(a.continue_run().kind == StopReason::Kind::Breakpoint);
  CHECK(a.position() == from + 1);
  CHECK(a.add_breakpoint("filter n >").error().find("column 4") != std::string::npos);
}

TEST_CASE("views: script commands group, filter, histogram, zoom and heatmap") {
  const Loaded f = fib_batch(1000);
  DebuggerModel m(f.source());
  std::string log = run(m, "group var n\nfilter n > 5\nhistogram\n");
  CHECK(log.find("group var n: 10 bands in ") != std::string::npos);
  CHECK(log.find("n = 0 100, n = 1 100") != std::string::npos);
  CHECK(log.find("filter n > 5: 400 lanes match") != std::string::npos);
  CHECK(log.find("histogram: depth 1: 1000") != std::string::npos);
  log = run(m, "step 12\nfilter next\nfilter prev\nfilter off\ngroup block\nselect band 0\n");
  CHECK(log.find("filter next: select lane ") != std::string::npos);
  CHECK(log.find("filter off") != std::string::npos);
  CHECK(log.find("select band 0: ") != std::string::npos);
  log = run(m, "zoom 4\nzoom lane 17\n");
  CHECK(log.find("zoom 4") != std::string::npos);
  CHECK(m.selected_lane() == 17u);
  CHECK(m.lane_grid().view().cell_pixels > 0);
  log = run(m, "zoom fit\nheatmap ran\nheatmap 3 fib.b0\n");
  CHECK(m.lane_grid().view().zoom == 1);
  CHECK(m.activity().heatmap_shows_ran());
  CHECK(log.find("heatmap step 3 block fib.b0: ") != std::string::npos);
  CHECK(m.position() == 3);
  CHECK(run(m, "filter n >\n", 1).find("cmds.txt:1: filter: column 4: expected a value") !=
        std::string::npos);
  CHECK(run(m, "group colour\n", 1).find("usage: group") != std::string::npos);
  CHECK(run(m, "zoom 0\n", 1).find("not a factor") != std::string::npos);
  CHECK(run(m, "zoom lane 5000\n", 1).find("out of range") != std::string::npos);
  CHECK(run(m, "heatmap 99999 fib.b0\n", 1).find("has not run yet") != std::string::npos);
  CHECK(
      run(m, "filter off\nfilter next\n", 1).find("cmds.txt:2: filter next: there is no filter") !=
      std::string::npos);
  CHECK(run(m, "break filter depth >> 2\n", 1).find("column 8") != std::string::npos);
}
