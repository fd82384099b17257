// to_json: the report as one JSON object (schema in docs/performance.md).
#include "bench/report.h"

namespace ab::bench {
namespace {

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json to_json(const BenchReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const BenchRow& r : report.rows) {
    rows.push_back({
        {"program", r.program},
        {"system", r.system},
        {"inputs", r.inputs},
        {"lanes", r.lanes},
        {"status", r.status},
        {"message", r.message},
        {"checked", r.checked},
        {"repeats", r.repeats},
        {"median_seconds", r.median_seconds},
        {"min_seconds", r.min_seconds},
        {"lane_calls", r.lane_calls},
        {"lane_steps", r.lane_steps},
        {"calls_per_second", r.calls_per_second},
        {"steps_per_second", r.steps_per_second},
        {"steps", opt(r.steps)},
        {"utilization", opt(r.utilization)},
        {"dispatches", opt(r.dispatches)},
        {"submissions", opt(r.submissions)},
        {"seconds_per_step", opt(r.seconds_per_step)},
        {"vs_native", opt(r.vs_native)},
        {"vs_vm", opt(r.vs_vm)},
        {"vs_glsl", opt(r.vs_glsl)},
        {"upload_seconds", opt(r.upload_seconds)},
        {"loop_seconds", opt(r.loop_seconds)},
        {"readback_seconds", opt(r.readback_seconds)},
    });
  }
  nlohmann::json compiles = nlohmann::json::array();
  for (const CompileRow& c : report.compiles)
    compiles.push_back({{"program", c.program},
                        {"seconds", opt(c.seconds)},
                        {"glsl_seconds", opt(c.glsl_seconds)}});
  return {
      {"quick", report.quick},
      {"device", report.device},
      {"vulkan_note", report.vulkan_note},
      {"notes", report.notes},
      {"cpu_threads", report.cpu_threads},
      {"inputs", report.inputs},
      {"batches", report.batches},
      {"heavy_batches", report.heavy_batches},
      {"systems", report.systems},
      {"rows", rows},
      {"compile", compiles},
      {"ok", report.all_ok()},
  };
}

}  // namespace ab::bench
