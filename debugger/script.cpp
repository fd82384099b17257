#include "debugger/script.h"

#include <fmt/format.h>
#include <charconv>
#include <cmath>
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

// Runs one command; returns "" or an error message. Sets `quit` for `quit`.
std::string run_command(DebuggerModel& m, const std::string& line, const ScriptHooks& hooks,
                        std::ostream& log, bool& quit) {
  const std::vector<std::string> w = split(line);
  const std::string& cmd = w[0];
  auto count_arg = [&](size_t i, uint64_t fallback, uint64_t& out) {
    if (w.size() <= i) {
      out = fallback;
      return true;
    }
    return w.size() == i + 1 && number(w[i], out);
  };
  uint64_t n = 0;
  if (cmd == "step") {
    if (!count_arg(1, 1, n)) return "usage: step [N]";
    const uint64_t taken = m.step(n);
    log << fmt::format("step {}: ran {}, now at step {}{}\n", n, taken, m.position(),
                       m.source().done() ? " (finished)" : "");
    return m.source().error();
  }
  if (cmd == "back") {
    if (!count_arg(1, 1, n)) return "usage: back [N]";
    m.back(n);
    log << fmt::format("back {}: now at step {}\n", n, m.position());
    return "";
  }
  if (cmd == "seek") {
    if (w.size() != 2 || !number(w[1], n)) return "usage: seek STEP";
    m.seek(n);
    log << fmt::format("seek {}: now at step {}\n", n, m.position());
    return m.source().error();
  }
  if (cmd == "break") {
    if (w.size() < 2)
      return "usage: break line L | block NAME | lane N returns | depth > D | utilization < X | "
             "fault";
    if (Status added = m.add_breakpoint(rest_after(line, "break")); !added) return added.error();
    log << fmt::format("breakpoint {}: {}\n", m.breakpoints().size(),
                       describe(m.breakpoints().back(), m.module()));
    return "";
  }
  if (cmd == "continue") {
    if (w.size() != 1) return "usage: continue";
    const StopReason r = m.continue_run();
    log << "continue: " << r.message << "\n";
    return r.kind == StopReason::Kind::SourceError ? r.message : "";
  }
  if (cmd == "select") {
    if (w.size() == 3 && w[1] == "band" && number(w[2], n)) {
      if (Status s = m.select_band(static_cast<size_t>(std::min<uint64_t>(n, SIZE_MAX))); !s)
        return s.error();
      log << fmt::format("select band {}: {}, filter {}: {} lanes match\n", n,
                         m.grouping().bands[n].label, m.filter_text(), m.filter_count());
      return "";
    }
    if (w.size() != 3 || w[1] != "lane" || !number(w[2], n))
      return "usage: select lane N | select band K";
    if (n > UINT32_MAX) return fmt::format("lane {} is out of range", w[2]);
    if (Status selected = m.select_lane(static_cast<uint32_t>(n)); !selected)
      return selected.error();
    log << "select " << m.lane_summary(static_cast<uint32_t>(n)) << "\n";
    return "";
  }
  if (cmd == "color" || cmd == "colour") {
    const std::string usage = "usage: color block | depth | error | var NAME";
    if (w.size() < 2) return usage;
    Status e = Ok{};
    if (w[1] == "block" && w.size() == 2)
      e = m.set_color_mode(ColorMode::Block);
    else if (w[1] == "depth" && w.size() == 2)
      e = m.set_color_mode(ColorMode::Depth);
    else if (w[1] == "error" && w.size() == 2)
      e = m.set_color_mode(ColorMode::Error);
    else if (w[1] == "var" && w.size() == 3)
      e = m.set_color_mode(ColorMode::Variable, w[2]);
    else
      return usage;
    if (!e) return e.error();
    log << "color " << color_mode_name(m.color_mode())
        << (m.color_mode() == ColorMode::Variable ? " " + m.watched_variable_name() : "") << "\n";
    return "";
  }
  if (cmd == "dump") {
    if (w.size() != 2) return "usage: dump FILE.json";
    const std::string json = m.dump_json();
    if (std::string failure = write_whole_file(w[1], {json, "\n"}); !failure.empty())
      return fmt::format("cannot write '{}': {}", w[1], failure);
    log << "dump " << w[1] << "\n";
    return "";
  }
  if (cmd == "screenshot") {
    if (w.size() != 2) return "usage: screenshot FILE.png";
    if (!hooks.screenshot)
      return "screenshot needs the window (run with a display, e.g. under xvfb-run)";
    if (Status shot = hooks.screenshot(w[1]); !shot) return shot.error();
    log << "screenshot " << w[1] << "\n";
    return "";
  }
  if (cmd == "save") {
    uint64_t first = 0, last = m.timeline().known_end();
    if (w.size() != 2 && !(w.size() == 4 && number(w[2], first) && number(w[3], last)))
      return "usage: save FILE.abtrace [FIRST LAST]";
    if (!hooks.save_trace) return "this session cannot save traces";
    if (Status saved = hooks.save_trace(w[1], first, last); !saved) return saved.error();
    log << fmt::format("save {}: steps {} to {}\n", w[1], first, last);
    return "";
  }
  if (cmd == "frames") {
    if (w.size() != 2 || !number(w[1], n) || n == 0) return "usage: frames N";
    if (!hooks.frames) return "frames needs the window (run with a display, e.g. under xvfb-run)";
    const std::string line_out = hooks.frames(n);
    if (line_out.starts_with("error: ")) return line_out.substr(7);
    log << line_out << "\n";
    return "";
  }
  if (cmd == "show") {
    const std::string usage = "usage: show ir BLOCK | show glsl BLOCK | show group [LANE]";
    if (w.size() >= 2 && w[1] == "group") {
      uint64_t lane = m.selected_lane().value_or(0);
      if (w.size() > 3 || (w.size() == 3 && !number(w[2], lane))) return usage;
      if (lane >= m.source().lanes()) return fmt::format("lane {} is out of range", lane);
      const auto g = m.group_view(static_cast<uint32_t>(lane));
      if (!g) return "show group needs a source with groups (--backend vulkan --schedule local)";
      std::string blocks;
      for (int32_t pc : g->pcs)
        blocks += " " + m.block_name(pc);
      log << fmt::format("group {} (lanes {}-{}): next {}, {} of {} lanes;{}\n", g->group,
                         g->first_lane, g->first_lane + g->pcs.size() - 1,
                         m.block_name(g->next_block), g->lanes_at_next, g->pcs.size(), blocks);
      return "";
    }
    if (w.size() != 3 || (w[1] != "ir" && w[1] != "glsl")) return usage;
    const int32_t block = m.find_block(w[2]);
    if (block < 0)
      return fmt::format("no block '{}' (give a name such as fib.b2, or an index)", excerpt(w[2]));
    const std::string text = w[1] == "ir" ? m.block_ir(block) : m.block_glsl(block);
    log << fmt::format("{} of {}:\n{}{}", w[1], m.module().blocks()[block].name, text,
                       text.ends_with('\n') ? "" : "\n");
    return "";
  }
  if (cmd == "group") {
    const std::string usage = "usage: group block | depth | fault | var NAME | none";
    Status e = Ok{};
    if (w.size() == 2 && w[1] == "block")
      e = m.set_grouping(GroupBy::Block);
    else if (w.size() == 2 && w[1] == "depth")
      e = m.set_grouping(GroupBy::Depth);
    else if (w.size() == 2 && w[1] == "fault")
      e = m.set_grouping(GroupBy::Fault);
    else if (w.size() == 2 && w[1] == "none")
      e = m.set_grouping(GroupBy::None);
    else if (w.size() == 3 && w[1] == "var")
      e = m.set_grouping(GroupBy::Variable, w[2]);
    else
      return usage;
    if (!e) return e.error();
    const LaneGrouping& g = m.grouping();
    std::string bands;
    for (const Band& b : g.bands)
      bands += fmt::format("{}{} {}", bands.empty() ? "" : ", ", b.label, b.count);
    log << fmt::format("group {}{}: {} bands in {:.1f} ms: {}\n", group_by_name(m.grouping_mode()),
                       m.grouping_mode() == GroupBy::Variable ? " " + m.group_variable() : "",
                       g.bands.size(), m.grouping_ms(), bands);
    return "";
  }
  if (cmd == "filter") {
    const std::string usage = "usage: filter EXPR | filter off | filter next | filter prev";
    if (w.size() < 2) return usage;
    if (w.size() == 2 && (w[1] == "next" || w[1] == "prev")) {
      if (!m.has_filter()) return "filter " + w[1] + ": there is no filter";
      const auto lane = m.select_next_match(w[1] == "next");
      if (!lane) return fmt::format("filter {}: no lane matches '{}'", w[1], m.filter_text());
      log << fmt::format("filter {}: select {}\n", w[1], m.lane_summary(*lane));
      return "";
    }
    const std::string expr = rest_after(line, "filter");
    if (Status e = m.set_filter(expr); !e) return "filter: " + e.error();
    if (!m.has_filter()) {
      log << "filter off\n";
      return "";
    }
    const uint32_t count = m.filter_count();
    log << fmt::format("filter {}: {} lanes match ({:.1f} ms)\n", m.filter_text(), count,
                       m.filter_ms());
    return "";
  }
  if (cmd == "histogram") {
    if (w.size() != 1) return "usage: histogram";
    const std::vector<uint32_t> h = m.depth_histogram();
    std::string text;
    for (size_t d = 0; d < h.size(); ++d)
      if (h[d]) text += fmt::format("{}depth {}: {}", text.empty() ? "" : ", ", d, h[d]);
    log << "histogram: " << (text.empty() ? "no live lanes" : text) << "\n";
    return "";
  }
  if (cmd == "zoom") {
    const std::string usage = "usage: zoom fit | zoom FACTOR | zoom lane N";
    GridView& v = m.grid_view();
    if (w.size() == 2 && w[1] == "fit") {
      v = GridView{};
      log << "zoom fit\n";
      return "";
    }
    if (w.size() == 3 && w[1] == "lane") {
      if (!number(w[2], n) || n >= m.source().lanes())
        return fmt::format("zoom lane: lane '{}' is out of range (the batch has {} lanes)",
                           excerpt(w[2]), m.source().lanes());
      const uint32_t lane = static_cast<uint32_t>(n);
      if (Status s = m.select_lane(lane); !s) return s.error();
      v.cell_pixels = 56;  // room for the lane's number and its value
      v.center_x = v.center_y = -1;
      v.center_lane = lane;
      log << fmt::format("zoom lane {}\n", lane);
      return "";
    }
    double factor = 0;
    if (w.size() == 2) {
      auto [ptr, ec] = std::from_chars(w[1].data(), w[1].data() + w[1].size(), factor);
      if (ec == std::errc() && ptr == w[1].data() + w[1].size() && std::isfinite(factor) &&
          factor >= 1 && factor <= 100000) {
        v.zoom = factor;
        v.cell_pixels = 0;
        log << fmt::format("zoom {}\n", factor);
        return "";
      }
      return fmt::format("zoom: '{}' is not a factor from 1 to 100000 ({})", excerpt(w[1]), usage);
    }
    return usage;
  }
  if (cmd == "heatmap") {
    const std::string usage = "usage: heatmap waiting | heatmap ran | heatmap STEP BLOCK";
    if (w.size() == 2 && (w[1] == "waiting" || w[1] == "ran")) {
      m.set_heatmap_shows_ran(w[1] == "ran");
      log << "heatmap " << w[1] << "\n";
      return "";
    }
    if (w.size() != 3 || !number(w[1], n)) return usage;
    const int32_t block = m.find_block(w[2]);
    if (block < 0)
      return fmt::format("no block '{}' (give a name such as fib.b2, or an index)", excerpt(w[2]));
    if (n >= m.heatmap().steps())
      return fmt::format("heatmap: step {} has not run yet ({} steps recorded)", n,
                         m.heatmap().steps());
    std::vector<double> waiting, ran;
    m.heatmap().range(n, n + 1, waiting, ran);
    if (Status s = m.select_heatmap_cell(n, block); !s) return s.error();
    log << fmt::format("heatmap step {} block {}: {} lanes waiting, {} ran; {} lanes match\n", n,
                       m.module().blocks()[block].name, waiting[block], ran[block],
                       m.filter_count());
    return "";
  }
  if (cmd == "quit" || cmd == "exit") {
    quit = true;
    return "";
  }
  return fmt::format(
      "unknown command '{}' (commands: step, break, continue, back, seek, select, "
      "color, group, filter, histogram, zoom, heatmap, show, screenshot, dump, save, frames, "
      "quit)",
      excerpt(cmd));
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
