#include <algorithm>

#include <fmt/format.h>

#include "tools/outputs.h"
#include "tools/report.h"
#include "tools/shape.h"
#include "tools/values.h"

namespace ab::cli {
namespace {

// A plain text table: a header row and right-aligned cells.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  std::string render() const {
    std::vector<size_t> widths(rows_[0].size(), 0);
    for (const auto& row : rows_)
      for (size_t c = 0; c < row.size(); ++c)
        widths[c] = std::max(widths[c], row[c].size());
    std::string out;
    for (const auto& row : rows_) {
      std::string line;
      for (size_t c = 0; c < row.size(); ++c)
        line += fmt::format("{}{:>{}}", c == 0 ? "" : "  ", row[c], widths[c]);
      line.erase(line.find_last_not_of(' ') + 1);
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string lane_error_line(const LaneError& error) {
  return fmt::format("  lane {}: {} in {} at line {} (step {})\n", error.lane, fault_text(error),
                     error.function, error.line, error.step);
}

// The lanes' table: a lane's scalar inputs, its outputs and its fault, for the first `max_lanes`.
std::string lanes_table(const RunReport& report, size_t max_lanes) {
  const std::vector<ValueInfo>& params = report.module.inputs();
  const RunResult& result = report.run.result;
  const OutputLayout layout = output_layout(report.module.output().value_type);
  const uint32_t lanes = report.batch.lanes;
  const uint32_t shown = static_cast<uint32_t>(std::min<uint64_t>(lanes, max_lanes));
  auto faulted = [&](uint32_t lane) {
    return lane < result.faulted.size() && result.faulted[lane];
  };

  // Scalar inputs get a column each; array inputs would crowd the table.
  std::vector<size_t> scalar_inputs;
  for (size_t p = 0; p < params.size(); ++p)
    if (params[p].value_type.is_scalar()) scalar_inputs.push_back(p);
  bool any_fault_shown = false;
  for (uint32_t lane = 0; lane < shown; ++lane)
    any_fault_shown |= faulted(lane);

  std::vector<std::string> header{"lane"};
  for (size_t p : scalar_inputs)
    header.push_back(params[p].name);
  for (const OutputColumn& column : layout.columns)
    header.push_back(column.key);
  if (any_fault_shown) header.push_back("error");
  TextTable table(std::move(header));

  std::vector<const LaneError*> error_of_lane(shown, nullptr);
  for (const LaneError& error : result.errors)
    if (error.lane < shown) error_of_lane[error.lane] = &error;

  for (uint32_t lane = 0; lane < shown; ++lane) {
    std::vector<std::string> row{fmt::format("{}", lane)};
    for (size_t p : scalar_inputs) {
      const Scalar leaf = params[p].value_type.scalar;
      row.push_back(format_scalar(report.batch.inputs[p][lane], leaf));
    }
    for (const OutputColumn& column : layout.columns)
      row.push_back(faulted(lane)
                        ? "-"
                        : column_text(column, column_words(layout, column, result.outputs, lane)));
    if (any_fault_shown)
      row.push_back(error_of_lane[lane] ? fault_name(error_of_lane[lane]->code)
                    : faulted(lane)     ? "fault"
                                        : "");
    table.add(std::move(row));
  }

  std::string out = table.render();
  if (lanes > shown) out += fmt::format("... {} more lanes\n", lanes - shown);
  return out;
}

// The faulted lanes, and what to do about the one fault an option causes.
std::string errors_section(const RunResult& result, size_t max_lanes) {
  if (result.errors.empty()) return "";
  std::string out = fmt::format("\nerrors ({} lane{} faulted)\n", result.errors.size(),
                                result.errors.size() == 1 ? "" : "s");
  const size_t listed = std::min<size_t>(result.errors.size(), max_lanes);
  for (size_t i = 0; i < listed; ++i)
    out += lane_error_line(result.errors[i]);
  if (result.errors.size() > listed)
    out += fmt::format("  ... {} more errors\n", result.errors.size() - listed);
  // Said where the user reads the fault.
  const auto overflowed = [](const LaneError& e) { return e.code == Fault::StackOverflow; };
  if (std::any_of(result.errors.begin(), result.errors.end(), overflowed))
    out += fmt::format(
        "  stack_overflow: calls (or a derived gradient's loop) went deeper than the {} frames "
        "--stack-depth allows; raise --stack-depth, or look for a recursion that never ends\n",
        result.stats.max_stack_depth);
  return out;
}

// The run's statistics, and with --trace-steps the step trace.
std::string statistics_section(const RunReport& report, size_t max_lanes) {
  const RunResult& result = report.run.result;
  const RunStats& stats = result.stats;
  std::string out = "\nstatistics\n";
  auto stat = [&](std::string_view name, const std::string& value) {
    out += fmt::format("  {:<16} {}\n", name, value);
  };
  stat("backend", report.backend);
  stat("lanes", fmt::format("{}", report.batch.lanes));
  stat("steps", fmt::format("{}", stats.steps));
  stat("lane steps", fmt::format("{}", stats.lane_steps));
  stat("calls", fmt::format("{}", stats.calls));
  stat("utilization", fmt::format("{:.1f}%", stats.utilization * 100.0));
  stat("max stack depth", fmt::format("{}", stats.max_stack_depth));
  if (!report.module.emit_record().value_type.is_void())
    stat("emitted",
         fmt::format("{} records (--format json or --out DIR shows them)", result.records_emitted));
  stat("wall time", fmt::format("{:.3f} ms", stats.wall_seconds * 1000.0));
  for (const ExtraStat& extra : report.run.extra_stats) {
    std::string label = extra.key;
    std::replace(label.begin(), label.end(), '_', ' ');
    stat(label, extra.text);
  }
  if (!report.with_trace) return out;
  const auto& names = report.run.block_names;
  stat("blocks", fmt::format("{}", names.size()));
  const size_t listed = std::min<size_t>(result.trace.size(), max_lanes);
  out += fmt::format("\ntrace ({} steps)\n", result.trace.size());
  for (size_t i = 0; i < listed; ++i) {
    const TraceStep& step = result.trace[i];
    const std::string name =
        step.block >= 0 && static_cast<size_t>(step.block) < names.size() ? names[step.block] : "?";
    out += fmt::format("  step {}: block {} ({}), {} lanes\n", i, step.block, name, step.active);
  }
  if (result.trace.size() > listed)
    out += fmt::format("  ... {} more steps\n", result.trace.size() - listed);
  return out;
}

}  // namespace

std::string report_table(const RunReport& report, size_t max_lanes) {
  return lanes_table(report, max_lanes) + errors_section(report.run.result, max_lanes) +
         statistics_section(report, max_lanes);
}

}  // namespace ab::cli
