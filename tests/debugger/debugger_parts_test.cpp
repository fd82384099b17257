// The debugger model's parts, each on its own: the block index, the breakpoint list, the
// colouring, the block activity followed step by step, the lane selection's strip and the lane
// grid's settings and job. DebuggerModel composes them; tests/debugger/debugger_model_test.cpp and
// debugger_views_test.cpp drive them through it.
#include <doctest/doctest.h>

#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "debugger/block_activity.h"
#include "debugger/block_index.h"
#include "debugger/breakpoints.h"
#include "debugger/lane_coloring.h"
#include "debugger/lane_grid_model.h"
#include "debugger/lane_selection.h"
#include "debugger/model.h"
#include "debugger/script.h"
#include "support/debugger_test_support.h"

using namespace ab;
using namespace ab::debugger;
using ab::debugger::testing::fib_batch;
using ab::debugger::testing::fib_call_line;

TEST_CASE("debugger parts: the block index finds every block by name and by index") {
  const auto fib = fib_batch(4);
  const BlockIndex blocks(*fib.module);
  const int32_t exit = blocks.exit_pc();
  REQUIRE(exit == static_cast<int32_t>(fib.module->blocks().size()));
  for (int32_t b = 0; b < exit; ++b) {
    CAPTURE(b);
    CHECK(blocks.name(b) == fib.module->blocks()[b].name);
    CHECK(blocks.find(blocks.name(b)) == b);
    CHECK(blocks.find(std::to_string(b)) == b);
    CHECK(blocks.line(b) == (blocks.lines(b).empty() ? 0 : blocks.lines(b).front()));
    CHECK_FALSE(blocks.ir(b).empty());
  }
  CHECK(blocks.name(exit) == "finished");
  CHECK(blocks.name(-1) == "finished");
  CHECK(blocks.find(std::to_string(exit)) == -1);
  CHECK(blocks.find("no.such.block") == -1);
  CHECK(blocks.find("1x") == -1);
  CHECK(blocks.ir(exit).empty());
  // Lanes counted per block land on each block's first line, and none is lost.
  std::vector<uint32_t> per_block(exit, 0);
  uint32_t on_lines = 0;
  for (int32_t b = 0; b < exit; ++b) {
    per_block[b] = static_cast<uint32_t>(b + 1);
    if (blocks.line(b) > 0) on_lines += per_block[b];
  }
  const std::vector<uint32_t> per_line = blocks.per_line(per_block);
  CHECK(per_line[0] == 0);
  CHECK(std::accumulate(per_line.begin(), per_line.end(), 0u) == on_lines);
}

TEST_CASE("debugger parts: the block activity followed step by step equals a recount") {
  const auto fib = fib_batch(24);
  auto source = fib.source();
  const auto blocks = static_cast<uint32_t>(fib.module->blocks().size());
  BlockActivity followed(blocks);
  CHECK_FALSE(followed.follow(*source, true));
  for (int i = 0; i < 400 && !source->done(); ++i) {
    source->step(1);
    REQUIRE(followed.follow(*source, false));
    BlockActivity recounted(blocks);
    recounted.follow(*source, true);
    CAPTURE(source->steps());
    REQUIRE(followed.waiting() == recounted.waiting());
    REQUIRE(followed.executions() == recounted.executions());
    REQUIRE(followed.heatmap().steps() == source->steps());
  }
  CHECK(source->done());
  // The heatmap setting counts as a view setting.
  const uint64_t before = followed.version();
  followed.set_heatmap_shows_ran(true);
  CHECK(followed.heatmap_shows_ran());
  CHECK(followed.version() > before);
}

TEST_CASE("debugger parts: the selected lane's strip grows one step at a time from its selection") {
  LaneSelection selection;
  const std::vector<int32_t> pcs = {4, 5, 6};
  const std::vector<uint32_t> depths = {1, 2, 3};
  selection.follow(1, pcs, depths);  // nothing selected: nothing recorded
  CHECK_FALSE(selection.lane());
  CHECK(selection.strip().empty());
  selection.select(1, 10, 7, 2);
  CHECK(selection.lane() == 1u);
  CHECK(selection.strip_first() == 10);
  selection.follow(11, pcs, depths);
  REQUIRE(selection.strip().size() == 2);
  CHECK(selection.strip()[0].pc == 7);
  CHECK(selection.strip()[1].pc == 5);
  CHECK(selection.strip()[1].depth == 2);
  selection.follow(13, pcs, depths);  // a gap (a jump ahead): not this strip's next step
  selection.follow(11, pcs, depths);  // a step already recorded
  CHECK(selection.strip().size() == 2);
  selection.clear();
  CHECK_FALSE(selection.lane());
}

TEST_CASE(
    "debugger parts: the breakpoint list toggles lines and reports the enabled ones that hold") {
  const auto fib = fib_batch(8);
  auto source = fib.source();
  source->step(3);
  BreakpointList list;
  const int line = fib_call_line(fib);
  list.toggle_line(line);
  REQUIRE(list.size() == 1);
  CHECK(list[0].kind == Breakpoint::Kind::Line);
  CHECK(list[0].line == line);
  list.toggle_line(line);
  CHECK(list.empty());
  list.remove(3);  // out of range: ignored
  Breakpoint next;
  next.kind = Breakpoint::Kind::Block;
  next.block = source->next_block();
  Breakpoint elsewhere = next;
  elsewhere.block = next.block == 0 ? 1 : 0;
  list.add(elsewhere);
  list.add(next);
  CHECK(list.hits(*source) == std::vector<int>{1});
  CHECK(list.first_hit(*source, true) == 1);
  list[1].enabled = false;
  CHECK(list.hits(*source).empty());
  CHECK(list.first_hit(*source, true) == -1);
  list.remove(0);
  REQUIRE(list.size() == 1);
  CHECK(list.back().block == next.block);
}

TEST_CASE("debugger parts: the colouring keeps its mode when a variable is refused") {
  const auto fib = fib_batch(6);
  auto source = fib.source();
  source->step(5);
  LaneColoring coloring(*fib.module);
  CHECK(coloring.mode() == ColorMode::Block);
  const Status refused = coloring.set(ColorMode::Variable, "no_such_variable");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().find("no variable 'no_such_variable'") != std::string::npos);
  CHECK(coloring.mode() == ColorMode::Block);
  CHECK(coloring.value(lane_state(*source), 0, 2).empty());
  const uint64_t before = coloring.version();
  REQUIRE(coloring.set(ColorMode::Variable, "n").ok());
  CHECK(coloring.version() > before);
  CHECK(coloring.mode() == ColorMode::Variable);
  CHECK(coloring.watched_name() == "fib.n");
  std::vector<uint32_t> rgba;
  coloring.colors(lane_state(*source), rgba);
  CHECK(rgba.size() == 6);
  // The legend ends with the finished and faulted lanes' counts.
  const std::vector<LegendEntry> legend = coloring.legend(lane_state(*source), {});
  REQUIRE_FALSE(legend.empty());
  CHECK(legend.back().label == "faulted (0)");
}

TEST_CASE("debugger parts: the lane grid's job colours a watched variable as the full state does") {
  // The job copies only the variables its views read, side by side: the colours must still be
  // those of each lane's own value, whichever other variable the grouping reads.
  const auto fib = fib_batch(40);
  auto source = fib.source();
  source->step(30);
  for (const auto& [watched, grouped] : {std::pair{"fib.n", "main.n"}, {"main.n", "fib.n"}}) {
    const std::string watched_name = watched;
    CAPTURE(watched_name);
    LaneColoring coloring(*fib.module);
    REQUIRE(coloring.set(ColorMode::Variable, watched).ok());
    LaneGridModel grid(*fib.module);
    REQUIRE(grid.set_grouping(GroupBy::Variable, grouped).ok());
    const LaneGridViews views = LaneGridJob(*source, coloring, grid, 8, 1, 1).run();
    std::vector<uint32_t> want;
    coloring.colors(lane_state(*source), want);
    REQUIRE(views.layout.lane_cell.size() == 40);
    for (uint32_t lane = 0; lane < 40; ++lane) {
      CAPTURE(lane);
      CHECK(views.rgba[views.layout.lane_cell[lane]] == want[lane]);
    }
  }
}

TEST_CASE("debugger parts: the lane grid model computes its views once per state and setting") {
  const auto fib = fib_batch(16);
  auto source = fib.source();
  source->step(10);
  LaneGridModel grid(*fib.module);
  const LaneState state = lane_state(*source);
  CHECK(grid.grouping(state, 1).by == GroupBy::None);
  const uint64_t before = grid.version();
  REQUIRE(grid.set_grouping(GroupBy::Fault).ok());
  CHECK(grid.version() > before);
  CHECK(grid.grouping(state, 1).by == GroupBy::Fault);
  CHECK_FALSE(grid.set_grouping(GroupBy::Variable, "no_such_variable").ok());
  CHECK(grid.grouping_mode() == GroupBy::Fault);
  CHECK_FALSE(grid.has_filter());
  CHECK(grid.filter_count(state, 1) == 0);
  REQUIRE(grid.set_filter("lane < 5").ok());
  CHECK(grid.filter_text() == "lane < 5");
  CHECK(grid.filter_count(state, 1) == 5);
  CHECK(grid.filter_matches(state, 1).size() == 16);
  CHECK_FALSE(grid.set_filter("lane <").ok());
  CHECK(grid.filter_text() == "lane < 5");  // a refused filter leaves the last one
  REQUIRE(grid.set_filter("off").ok());
  CHECK_FALSE(grid.has_filter());
  CHECK(grid.filter_matches(state, 1).empty());
}

TEST_CASE("debugger parts: the script's color and group commands take each mode's own name") {
  const auto fib = fib_batch(8);
  DebuggerModel m(fib.source());
  m.step(4);
  // The script's error for `command` ("" when it ran).
  auto error_of = [&](const std::string& command) {
    std::ostringstream log, errors;
    run_script(m, command + "\n", "s", {}, log, errors);
    return errors.str();
  };
  for (const char* bad : {"color", "color red", "color var", "color block extra", "colour var n x"})
    CHECK(error_of(bad).find("usage: color block | depth | error | var NAME") != std::string::npos);
  for (const char* bad : {"group", "group var", "group colour", "group none extra"})
    CHECK(error_of(bad).find("usage: group block | depth | fault | var NAME | none") !=
          std::string::npos);
  CHECK(error_of("color depth").empty());
  CHECK(m.coloring().mode() == ColorMode::Depth);
  CHECK(error_of("colour var n").empty());
  CHECK(m.coloring().watched_name() == "fib.n");
  CHECK(error_of("group fault").empty());
  CHECK(m.lane_grid().grouping_mode() == GroupBy::Fault);
  CHECK(error_of("group var n").empty());
  CHECK(m.lane_grid().group_variable() == "n");
  CHECK(error_of("group none").empty());
  CHECK(m.lane_grid().grouping_mode() == GroupBy::None);
}
