#include "tools/outputs.h"
#include "tools/report.h"

namespace ab::cli {

nlohmann::ordered_json report_json(const RunReport& report) {
  const RunResult& result = report.run.result;
  const OutputLayout layout = output_layout(report.module.output().value_type);
  const uint32_t lanes = report.batch.lanes;

  nlohmann::ordered_json outputs = nlohmann::ordered_json::object();
  for (const OutputColumn& column : layout.columns) {
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      const bool faulted = lane < result.faulted.size() && result.faulted[lane];
      values.push_back(
          faulted ? nlohmann::ordered_json(nullptr)
                  : column_json(column, column_words(layout, column, result.outputs, lane)));
    }
    outputs[column.key] = std::move(values);
  }

  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  for (const LaneError& error : result.errors) {
    errors.push_back({{"lane", error.lane},
                      {"code", fault_name(error.code)},
                      {"function", error.function},
                      {"line", error.line},
                      {"step", error.step},
                      {"detail", error.detail}});
  }

  // Per column of the emit type, per lane, the lane's records in order.
  nlohmann::ordered_json emitted = nlohmann::ordered_json::object();
  const ValueType& record_type = report.module.emit_record().value_type;
  if (!record_type.is_void()) {
    const OutputLayout records = output_layout(record_type);
    for (const OutputColumn& column : records.columns) {
      nlohmann::ordered_json per_lane = nlohmann::ordered_json::array();
      for (uint32_t lane = 0; lane < lanes; ++lane) {
        nlohmann::ordered_json values = nlohmann::ordered_json::array();
        const std::vector<uint32_t> none;
        const auto& words = lane < result.emitted.size() ? result.emitted[lane] : none;
        for (uint32_t r = 0; r < words.size() / records.lane_words; ++r)
          values.push_back(column_json(column, column_words(records, column, words, r)));
        per_lane.push_back(std::move(values));
      }
      emitted[column.key] = std::move(per_lane);
    }
  }

  const RunStats& stats = result.stats;
  nlohmann::ordered_json stats_json = {{"backend", report.backend},
                                       {"lanes", lanes},
                                       {"steps", stats.steps},
                                       {"lane_steps", stats.lane_steps},
                                       {"calls", stats.calls},
                                       {"utilization", stats.utilization},
                                       {"max_stack_depth", stats.max_stack_depth},
                                       {"wall_seconds", stats.wall_seconds}};
  for (const ExtraStat& extra : report.run.extra_stats)
    stats_json[extra.key] = extra.value;

  nlohmann::ordered_json document = {{"outputs", std::move(outputs)},
                                     {"errors", std::move(errors)}};
  if (!record_type.is_void()) {
    document["emitted"] = std::move(emitted);
    stats_json["records_emitted"] = result.records_emitted;
  }
  if (report.with_trace) {
    stats_json["blocks"] = report.run.block_names.size();
    nlohmann::ordered_json trace = nlohmann::ordered_json::array();
    for (const TraceStep& step : result.trace)
      trace.push_back({step.block, step.active});
    document["trace"] = std::move(trace);
  }
  document["stats"] = std::move(stats_json);
  return document;
}

}  // namespace ab::cli
