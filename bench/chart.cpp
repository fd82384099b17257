// write_chart: throughput vs batch size, log-log, drawn by gnuplot (Debian: gnuplot-nox). The
// data and script go to a temporary folder that is removed afterwards.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>

#include "bench/report.h"

namespace ab::bench {
namespace {

// A gnuplot single-quoted string: a quote is written twice.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A POSIX shell single-quoted word.
std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// collatz makes two calls per lane whatever its work: its throughput is in lane-steps.
bool plots_steps(const std::string& program) {
  return program == "collatz";
}

}  // namespace

Status write_chart(const BenchReport& report, const std::string& png_path) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0)
    return Error{"gnuplot not found (Debian package gnuplot-nox; scripts/setup.sh installs it)"};
  // One panel per (program, input size), in the rows' order.
  std::vector<std::pair<std::string, std::string>> panels;
  for (const BenchRow& row : report.rows)
    if (std::find(panels.begin(), panels.end(), std::pair(row.program, row.inputs)) == panels.end())
      panels.emplace_back(row.program, row.inputs);
  if (panels.empty()) return Error{"no rows to draw"};
  // Light panels on top, heavy ones below: a column per program when both sizes ran.
  std::stable_partition(panels.begin(), panels.end(),
                        [](const auto& panel) { return panel.second == "light"; });
  const size_t light_panels = static_cast<size_t>(std::count_if(
      panels.begin(), panels.end(), [](const auto& panel) { return panel.second == "light"; }));
  const bool both = light_panels > 0 && light_panels < panels.size();

  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec) /
                       fmt::format("autobatch-chart-{}",
                                   std::chrono::steady_clock::now().time_since_epoch().count());
  if (ec || !fs::create_directories(dir, ec)) return Error{"cannot create a temporary folder"};
  const fs::path data_path = dir / "chart.dat", script_path = dir / "chart.gp";

  // One data block per (panel, system), in that order, so `index` finds it by number. A
  // block with no successful row gets one undefined point, which gnuplot skips.
  {
    std::ofstream data(data_path);
    for (const auto& [program, inputs] : panels) {
      for (const std::string& system : report.systems) {
        data << "# " << program << " " << inputs << " " << system << "\n";
        bool any = false;
        for (const BenchRow& row : report.rows) {
          if (row.program != program || row.inputs != inputs || row.system != system ||
              row.status != "ok")
            continue;
          const double y = plots_steps(program) ? row.steps_per_second : row.calls_per_second;
          data << row.lanes << " " << fmt::format("{:.6g}", y) << "\n";
          any = true;
        }
        if (!any) data << "1 NaN\n";
        data << "\n\n";
      }
    }
  }
  {
    const size_t columns = both ? std::max(light_panels, panels.size() - light_panels)
                           : panels.size() <= 2 ? panels.size()
                                                : 3;
    const size_t rows = (panels.size() + columns - 1) / columns;
    std::ofstream gp(script_path);
    gp << fmt::format("set terminal pngcairo size {},{} font 'sans,10'\n", 520 * columns,
                      420 * rows + 40);
    gp << "set output " << quoted(png_path) << "\n";
    gp << "set termoption noenhanced\n";  // names such as nuts_tree are not markup
    gp << "set datafile missing 'NaN'\n";
    gp << "set logscale xy\nset grid\nset key bottom right font 'sans,8'\n";
    gp << "set xlabel 'batch size (lanes)'\n";
    gp << fmt::format("set multiplot layout {},{} title {}\n", rows, columns,
                      quoted(fmt::format("autobatch bench{}: {}", report.quick ? " --quick" : "",
                                         report.device.empty() ? "CPU only" : report.device)));
    const size_t systems = report.systems.size();
    for (size_t p = 0; p < panels.size(); ++p) {
      const std::string& program = panels[p].first;
      gp << "set title " << quoted(fmt::format("{} ({} inputs)", program, panels[p].second))
         << "\n";
      gp << "set ylabel " << quoted(plots_steps(program) ? "lane-steps / s" : "lane-calls / s")
         << "\n";
      gp << "plot ";
      for (size_t s = 0; s < systems; ++s) {
        // The two hand-written baselines (the CPU's and the device's ceiling) are dashed.
        const bool baseline = report.systems[s] == "native" || report.systems[s] == "glsl";
        gp << (s ? ", " : "") << quoted(data_path.string()) << " index " << p * systems + s
           << " using 1:2 with linespoints pt 7 ps 0.6" << (baseline ? " dt 2" : "") << " title "
           << quoted(report.systems[s]);
      }
      gp << "\n";
    }
    gp << "unset multiplot\n";
  }
  const std::string command = fmt::format("gnuplot {} 2>{}", shell_quoted(script_path.string()),
                                          shell_quoted((dir / "gnuplot.log").string()));
  const int rc = std::system(command.c_str());
  Status drawn = Ok{};
  if (rc != 0) {
    std::ifstream log(dir / "gnuplot.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    drawn = Error{"gnuplot failed: " + text};
  }
  fs::remove_all(dir, ec);
  return drawn;
}

}  // namespace ab::bench
