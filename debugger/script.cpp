#include "debugger/script.h"

#include <fmt/format.h>
#include <charconv>
#include <cmath>
#include <optional>
#include <sstream>
#include <vector>

#include "autobatch/user_input.h"

namespace ab::debugger {
namespace {

// `line` without its comment: from a `#` at the start of the line or after a blank on (so a file
// name such as run#2.json still reads whole).
std::string without_comment(const std::string& line) {
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t'))
      return line.substr(0, i);
  return line;
}

std::vector<std::string> split(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

bool number(const std::string& s, uint64_t& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::string rest_after(const std::string& line, const std::string& word) {
  const size_t at = line.find(word);
  return line.substr(at + word.size());
}

// One command line being run: the model, the words, and where its report goes.
struct Command {
  DebuggerModel& m;
  const std::string& line;
  std::vector<std::string> w;
  const ScriptHooks& hooks;
  std::ostream& log;
  bool quit = false;

  // The optional count at word `i` (`fallback` when absent); false when it is malformed or
  // followed by more words.
  bool count_arg(size_t i, uint64_t fallback, uint64_t& out) const {
    if (w.size() <= i) {
      out = fallback;
      return true;
    }
    return w.size() == i + 1 && number(w[i], out);
  }
};

std::string no_block(const std::string& word) {
  return fmt::format("no block '{}' (give a name such as fib.b2, or an index)", excerpt(word));
}

// The mode `color` or `group` names, by the mode's own name ("block", ...; "var NAME" for
// `variable`); none for any other words.
template <typename Mode, size_t N>
std::optional<Mode> named_mode(const std::vector<std::string>& w, const Mode (&modes)[N],
                               const char* (*name)(Mode), Mode variable) {
  for (Mode mode : modes)
    if (w.size() == (mode == variable ? 3u : 2u) && w[1] == name(mode)) return mode;
  return std::nullopt;
}

// Each command's handler returns "" or an error message.

std::string step_command(Command& c) {
  uint64_t n = 0;
  if (!c.count_arg(1, 1, n)) return "usage: step [N]";
  const uint64_t taken = c.m.step(n);
  c.log << fmt::format("step {}: ran {}, now at step {}{}\n", n, taken, c.m.position(),
                       c.m.source().done() ? " (finished)" : "");
  return c.m.source().error();
}

std::string back_command(Command& c) {
  uint64_t n = 0;
  if (!c.count_arg(1, 1, n)) return "usage: back [N]";
  c.m.back(n);
  c.log << fmt::format("back {}: now at step {}\n", n, c.m.position());
  return "";
}

std::string seek_command(Command& c) {
  uint64_t n = 0;
  if (c.w.size() != 2 || !number(c.w[1], n)) return "usage: seek STEP";
  c.m.seek(n);
  c.log << fmt::format("seek {}: now at step {}\n", n, c.m.position());
  return c.m.source().error();
}

std::string break_command(Command& c) {
  if (c.w.size() < 2)
    return "usage: break line L | block NAME | lane N returns | depth > D | utilization < X | "
           "fault";
  DebuggerModel& m = c.m;
  if (Status added = m.add_breakpoint(rest_after(c.line, "break")); !added) return added.error();
  c.log << fmt::format("breakpoint {}: {}\n", m.breakpoints().size(),
                       describe(m.breakpoints().back(), m.module()));
  return "";
}

std::string continue_command(Command& c) {
  if (c.w.size() != 1) return "usage: continue";
  const StopReason r = c.m.continue_run();
  c.log << "continue: " << r.message << "\n";
  return r.kind == StopReason::Kind::SourceError ? r.message : "";
}

std::string select_command(Command& c) {
  const std::vector<std::string>& w = c.w;
  DebuggerModel& m = c.m;
  uint64_t n = 0;
  if (w.size() == 3 && w[1] == "band" && number(w[2], n)) {
    if (Status s = m.select_band(static_cast<size_t>(std::min<uint64_t>(n, SIZE_MAX))); !s)
      return s.error();
    c.log << fmt::format("select band {}: {}, filter {}: {} lanes match\n", n,
                         m.grouping().bands[n].label, m.lane_grid().filter_text(),
                         m.filter_count());
    return "";
  }
  if (w.size() != 3 || w[1] != "lane" || !number(w[2], n))
    return "usage: select lane N | select band K";
  if (n > UINT32_MAX) return fmt::format("lane {} is out of range", w[2]);
  if (Status selected = m.select_lane(static_cast<uint32_t>(n)); !selected) return selected.error();
  c.log << "select " << m.lane_summary(static_cast<uint32_t>(n)) << "\n";
  return "";
}

std::string color_command(Command& c) {
  const std::vector<std::string>& w = c.w;
  DebuggerModel& m = c.m;
  const std::string usage = "usage: color block | depth | error | var NAME";
  if (w.size() < 2) return usage;
  constexpr ColorMode kModes[] = {ColorMode::Block, ColorMode::Depth, ColorMode::Error,
                                  ColorMode::Variable};
  const auto mode = named_mode(w, kModes, color_mode_name, ColorMode::Variable);
  if (!mode) return usage;
  if (Status e = m.coloring().set(*mode, *mode == ColorMode::Variable ? w[2] : ""); !e)
    return e.error();
  c.log << "color " << color_mode_name(m.coloring().mode())
        << (m.coloring().mode() == ColorMode::Variable ? " " + m.coloring().watched_name() : "")
        << "\n";
  return "";
}

std::string dump_command(Command& c) {
  if (c.w.size() != 2) return "usage: dump FILE.json";
  const std::string json = c.m.dump_json();
  if (std::string failure = write_whole_file(c.w[1], {json, "\n"}); !failure.empty())
    return fmt::format("cannot write '{}': {}", c.w[1], failure);
  c.log << "dump " << c.w[1] << "\n";
  return "";
}

std::string screenshot_command(Command& c) {
  if (c.w.size() != 2) return "usage: screenshot FILE.png";
  if (!c.hooks.screenshot)
    return "screenshot needs the window (run with a display, e.g. under xvfb-run)";
  if (Status shot = c.hooks.screenshot(c.w[1]); !shot) return shot.error();
  c.log << "screenshot " << c.w[1] << "\n";
  return "";
}

std::string save_command(Command& c) {
  const std::vector<std::string>& w = c.w;
  uint64_t first = 0, last = c.m.timeline().known_end();
  if (w.size() != 2 && !(w.size() == 4 && number(w[2], first) && number(w[3], last)))
    return "usage: save FILE.abtrace [FIRST LAST]";
  if (!c.hooks.save_trace) return "this session cannot save traces";
  if (Status saved = c.hooks.save_trace(w[1], first, last); !saved) return saved.error();
  c.log << fmt::format("save {}: steps {} to {}\n", w[1], first, last);
  return "";
}

std::string frames_command(Command& c) {
  uint64_t n = 0;
  if (c.w.size() != 2 || !number(c.w[1], n) || n == 0) return "usage: frames N";
  if (!c.hooks.frames) return "frames needs the window (run with a display, e.g. under xvfb-run)";
  const std::string line_out = c.hooks.frames(n);
  if (line_out.starts_with("error: ")) return line_out.substr(7);
  c.log << line_out << "\n";
  return "";
}

std::string show_group(Command& c, const std::string& usage) {
  const std::vector<std::string>& w = c.w;
  DebuggerModel& m = c.m;
  uint64_t lane = m.selected_lane().value_or(0);
  if (w.size() > 3 || (w.size() == 3 && !number(w[2], lane))) return usage;
  if (lane >= m.source().lanes()) return fmt::format("lane {} is out of range", lane);
  const auto g = group_view(m.source(), static_cast<uint32_t>(lane));
  if (!g) return "show group needs a source with groups (--backend vulkan --schedule local)";
  std::string blocks;
  for (int32_t pc : g->pcs)
    blocks += " " + m.blocks().name(pc);
  c.log << fmt::format("group {} (lanes {}-{}): next {}, {} of {} lanes;{}\n", g->group,
                       g->first_lane, g->first_lane + g->pcs.size() - 1,
                       m.blocks().name(g->next_block), g->lanes_at_next, g->pcs.size(), blocks);
  return "";
}

std::string show_command(Command& c) {
  const std::vector<std::string>& w = c.w;
  DebuggerModel& m = c.m;
  const std::string usage = "usage: show ir BLOCK | show glsl BLOCK | show group [LANE]";
  if (w.size() >= 2 && w[1] == "group") return show_group(c, usage);
  if (w.size() != 3 || (w[1] != "ir" && w[1] != "glsl")) return usage;
  const int32_t block = m.blocks().find(w[2]);
  if (block < 0) return no_block(w[2]);
  const std::string text = w[1] == "ir" ? m.blocks().ir(block) : m.blocks().glsl(block);
  c.log << fmt::format("{} of {}:\n{}{}", w[1], m.module().blocks()[block].name, text,
                       text.ends_with('\n') ? "" : "\n");
  return "";
}

std::string group_command(Command& c) {
  const std::vector<std::string>& w = c.w;
  DebuggerModel& m = c.m;
  const std::string usage = "usage: group block | depth | fault | var NAME | none";
  constexpr GroupBy kModes[] = {GroupBy::Block, GroupBy::Depth, GroupBy::Fault, GroupBy::None,
                                GroupBy::Variable};
  const auto by = named_mode(w, kModes, group_by_name, GroupBy::Variable);
  if (!by) return usage;
  if (Status e = m.lane_grid().set_grouping(*by, *by == GroupBy::Variable ? w[2] : ""); !e)
    return e.error();
  const LaneGrouping& g = m.grouping();
  std::string bands;
  for (const Band& b : g.bands)
    bands += fmt::format("{}{} {}", bands.empty() ? "" : ", ", b.label, b.count);
  c.log << fmt::format(
      "group {}{}: {} bands in {:.1f} ms: {}\n", group_by_name(m.lane_grid().grouping_mode()),
      m.lane_grid().grouping_mode() == GroupBy::Variable ? " " + m.lane_grid().group_variable()
                                                         : "",
      g.bands.size(), m.lane_grid().grouping_ms(), bands);
  return "";
}

std::string filter_command(Command& c) {
  const std::vector<std::string>& w = c.w;
  DebuggerModel& m = c.m;
  const std::string usage = "usage: filter EXPR | filter off | filter next | filter prev";
  if (w.size() < 2) return usage;
  if (w.size() == 2 && (w[1] == "next" || w[1] == "prev")) {
    if (!m.lane_grid().has_filter()) return "filter " + w[1] + ": there is no filter";
    const auto lane = m.select_next_match(w[1] == "next");
    if (!lane)
      return fmt::format("filter {}: no lane matches '{}'", w[1], m.lane_grid().filter_text());
    c.log << fmt::format("filter {}: select {}\n", w[1], m.lane_summary(*lane));
    return "";
  }
  const std::string expr = rest_after(c.line, "filter");
  if (Status e = m.lane_grid().set_filter(expr); !e) return "filter: " + e.error();
  if (!m.lane_grid().has_filter()) {
    c.log << "filter off\n";
    return "";
  }
  const uint32_t count = m.filter_count();
  c.log << fmt::format("filter {}: {} lanes match ({:.1f} ms)\n", m.lane_grid().filter_text(),
                       count, m.lane_grid().filter_ms());
  return "";
}

std::string histogram_command(Command& c) {
  if (c.w.size() != 1) return "usage: histogram";
  const std::vector<uint32_t> h = depth_histogram(lane_state(c.m.source()));
  std::string text;
  for (size_t d = 0; d < h.size(); ++d)
    if (h[d]) text += fmt::format("{}depth {}: {}", text.empty() ? "" : ", ", d, h[d]);
  c.log << "histogram: " << (text.empty() ? "no live lanes" : text) << "\n";
  return "";
}

std::string zoom_lane(Command& c, GridView& v) {
  DebuggerModel& m = c.m;
  uint64_t n = 0;
  if (!number(c.w[2], n) || n >= m.source().lanes())
    return fmt::format("zoom lane: lane '{}' is out of range (the batch has {} lanes)",
                       excerpt(c.w[2]), m.source().lanes());
  const uint32_t lane = static_cast<uint32_t>(n);
  if (Status s = m.select_lane(lane); !s) return s.error();
  v.cell_pixels = 56;  // room for the lane's number and its value
  v.center_x = v.center_y = -1;
  v.center_lane = lane;
  c.log << fmt::format("zoom lane {}\n", lane);
  return "";
}

std::string zoom_command(Command& c) {
  const std::vector<std::string>& w = c.w;
  const std::string usage = "usage: zoom fit | zoom FACTOR | zoom lane N";
  GridView& v = c.m.lane_grid().view();
  if (w.size() == 2 && w[1] == "fit") {
    v = GridView{};
    c.log << "zoom fit\n";
    return "";
  }
  if (w.size() == 3 && w[1] == "lane") return zoom_lane(c, v);
  if (w.size() != 2) return usage;
  double factor = 0;
  auto [ptr, ec] = std::from_chars(w[1].data(), w[1].data() + w[1].size(), factor);
  if (ec != std::errc() || ptr != w[1].data() + w[1].size() || !std::isfinite(factor) ||
      factor < 1 || factor > 100000)
    return fmt::format("zoom: '{}' is not a factor from 1 to 100000 ({})", excerpt(w[1]), usage);
  v.zoom = factor;
  v.cell_pixels = 0;
  c.log << fmt::format("zoom {}\n", factor);
  return "";
}

std::string heatmap_command(Command& c) {
  const std::vector<std::string>& w = c.w;
  DebuggerModel& m = c.m;
  const std::string usage = "usage: heatmap waiting | heatmap ran | heatmap STEP BLOCK";
  if (w.size() == 2 && (w[1] == "waiting" || w[1] == "ran")) {
    m.activity().set_heatmap_shows_ran(w[1] == "ran");
    c.log << "heatmap " << w[1] << "\n";
    return "";
  }
  uint64_t n = 0;
  if (w.size() != 3 || !number(w[1], n)) return usage;
  const int32_t block = m.blocks().find(w[2]);
  if (block < 0) return no_block(w[2]);
  if (n >= m.activity().heatmap().steps())
    return fmt::format("heatmap: step {} has not run yet ({} steps recorded)", n,
                       m.activity().heatmap().steps());
  std::vector<double> waiting, ran;
  m.activity().heatmap().range(n, n + 1, waiting, ran);
  if (Status s = m.select_heatmap_cell(n, block); !s) return s.error();
  c.log << fmt::format("heatmap step {} block {}: {} lanes waiting, {} ran; {} lanes match\n", n,
                       m.module().blocks()[block].name, waiting[block], ran[block],
                       m.filter_count());
  return "";
}

std::string quit_command(Command& c) {
  c.quit = true;
  return "";
}

struct CommandEntry {
  const char* name;
  std::string (*run)(Command&);
};

// The commands, in the order the unknown-command message lists them.
constexpr CommandEntry kCommands[] = {{"step", step_command},
                                      {"break", break_command},
                                      {"continue", continue_command},
                                      {"back", back_command},
                                      {"seek", seek_command},
                                      {"select", select_command},
                                      {"color", color_command},
                                      {"colour", color_command},
                                      {"group", group_command},
                                      {"filter", filter_command},
                                      {"histogram", histogram_command},
                                      {"zoom", zoom_command},
                                      {"heatmap", heatmap_command},
                                      {"show", show_command},
                                      {"screenshot", screenshot_command},
                                      {"dump", dump_command},
                                      {"save", save_command},
                                      {"frames", frames_command},
                                      {"quit", quit_command},
                                      {"exit", quit_command}};

// Runs one command; returns "" or an error message. Sets `quit` for `quit`.
std::string run_command(DebuggerModel& m, const std::string& line, const ScriptHooks& hooks,
                        std::ostream& log, bool& quit) {
  Command c{m, line, split(line), hooks, log};
  for (const CommandEntry& entry : kCommands)
    if (c.w[0] == entry.name) {
      std::string error = entry.run(c);
      quit = c.quit;
      return error;
    }
  return fmt::format(
      "unknown command '{}' (commands: step, break, continue, back, seek, select, "
      "color, group, filter, histogram, zoom, heatmap, show, screenshot, dump, save, frames, "
      "quit)",
      excerpt(c.w[0]));
}

}  // namespace

bool script_needs_window(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto w = split(without_comment(line));
    if (!w.empty() && (w[0] == "screenshot" || w[0] == "frames")) return true;
  }
  return false;
}

int run_script(DebuggerModel& model, const std::string& text, const std::string& name,
               const ScriptHooks& hooks, std::ostream& log, std::ostream& errors) {
  std::istringstream in(text);
  int line_number = 0;
  for (std::string text_line; std::getline(in, text_line);) {
    ++line_number;
    const std::string line = without_comment(text_line);
    if (split(line).empty()) continue;
    bool quit = false;
    if (std::string e = run_command(model, line, hooks, log, quit); !e.empty()) {
      errors << fmt::format("{}:{}: {}\n", name, line_number, e);
      return 1;
    }
    if (quit) break;
  }
  return 0;
}

}  // namespace ab::debugger
