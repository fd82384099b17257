// The human-readable table (format_table) and BenchReport::all_ok.
#include <fmt/format.h>

#include "bench/report.h"

namespace ab::bench {
namespace {

template <class T>
std::string opt(const std::optional<T>& v, const char* spec = "{}") {
  return v ? fmt::format(fmt::runtime(spec), *v) : "-";
}

std::string microseconds(const std::optional<double>& seconds) {
  return seconds ? fmt::format("{:.3g}", *seconds * 1e6) : "-";
}

// A part of the row's median time, in percent.
std::string share(const std::optional<double>& part, double whole) {
  return part && whole > 0 ? fmt::format("{:.2g}", *part / whole * 100) : "-";
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words)
    out += (out.empty() ? "" : ", ") + w;
  return out;
}

}  // namespace

bool BenchReport::all_ok() const {
  for (const BenchRow& row : rows)
    if (row.status != "ok") return false;
  return true;
}

std::string format_table(const BenchReport& report) {
  std::string out;
  out += fmt::format("device: {}\n", report.device.empty() ? "(no Vulkan)" : report.device);
  out += fmt::format("cpu threads: {}   mode: {}   inputs: {}\n", report.cpu_threads,
                     report.quick ? "quick" : "full", joined(report.inputs));
  if (!report.vulkan_note.empty()) out += report.vulkan_note + "\n";
  for (const std::string& note : report.notes)
    out += "note: " + note + "\n";
  out += "\n";
  const std::string header = fmt::format(
      "{:<10} {:<6} {:>6} {:<17} {:>6} {:>10} {:>4} {:>10} {:>10} {:>9} {:>5} {:>8} {:>7} {:>8} "
      "{:>8} {:>8} {:>8} {:>4} {:>5} {:>5}\n",
      "program", "inputs", "lanes", "system", "check", "median s", "reps", "calls/s", "steps/s",
      "steps", "util", "dispatch", "submits", "us/step", "x native", "x vm", "x glsl", "up%",
      "loop%", "read%");
  out += header;
  out += std::string(header.size() - 1, '-') + "\n";
  std::string last_cell;
  for (const BenchRow& row : report.rows) {
    const std::string cell = fmt::format("{}/{}/{}", row.program, row.inputs, row.lanes);
    if (!last_cell.empty() && cell != last_cell) out += "\n";
    last_cell = cell;
    if (row.status != "ok") {
      out += fmt::format("{:<10} {:<6} {:>6} {:<17} {:>6} {}\n", row.program, row.inputs, row.lanes,
                         row.system, row.status, row.message);
      continue;
    }
    out += fmt::format(
        "{:<10} {:<6} {:>6} {:<17} {:>6} {:>10.4g} {:>4} {:>10.3g} {:>10.3g} {:>9} {:>5} {:>8} "
        "{:>7} {:>8} {:>8} {:>8} {:>8} {:>4} {:>5} {:>5}\n",
        row.program, row.inputs, row.lanes, row.system, "ok", row.median_seconds, row.repeats,
        row.calls_per_second, row.steps_per_second, opt(row.steps), opt(row.utilization, "{:.2f}"),
        opt(row.dispatches), opt(row.submissions), microseconds(row.seconds_per_step),
        opt(row.vs_native, "{:.3g}"), opt(row.vs_vm, "{:.3g}"), opt(row.vs_glsl, "{:.3g}"),
        share(row.upload_seconds, row.median_seconds), share(row.loop_seconds, row.median_seconds),
        share(row.readback_seconds, row.median_seconds));
  }
  if (!report.compiles.empty()) {
    out +=
        "\nVulkan compile time per program (engine: GLSL generation, glslang, pipelines of all "
        "kernel variants used; glsl: the ceiling kernel; apart from the run times above):\n";
    for (const CompileRow& c : report.compiles)
      out += fmt::format("  {:<10} engine {:<9} glsl {}\n", c.program, opt(c.seconds, "{:.3f} s"),
                         opt(c.glsl_seconds, "{:.3f} s"));
  }
  size_t failed = 0;
  for (const BenchRow& row : report.rows)
    failed += row.status != "ok";
  out += fmt::format("\n{} rows, {} checked against interp, {} failed or errored\n",
                     report.rows.size(), report.rows.size() - failed, failed);
  return out;
}

}  // namespace ab::bench
