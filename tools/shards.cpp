#include "tools/shards.h"

#include <cstdlib>

#include <fmt/format.h>

#include "autobatch/context.h"
#include "autobatch/shards.h"

namespace ab::cli {

int injected_failed_shard() {
  const char* value = std::getenv("AB_TEST_FAIL_SHARD");
  return value && *value ? std::atoi(value) : -1;
}

Expected<BackendRun> run_on_devices(const Backend& backend,
                                    const std::shared_ptr<const Module>& module, const Batch& batch,
                                    const RunOptions& options, const DeviceOptions& device) {
  if (device.devices.empty()) return backend.run(module, batch, options, device);
  if (backend.name != "vulkan")
    return Error{fmt::format("--devices needs the vulkan backend, not '{}'", backend.name)};
  // Said once here, rather than by every shard as its failure.
  if (options.record_trace && device.schedule && *device.schedule != Schedule::Global)
    return Error{"--trace-steps needs --schedule global"};
  auto list = parse_device_list(device.devices, device.vulkan.context);
  if (!list) return list.failure();
  const uint32_t shards = static_cast<uint32_t>(list->size());
  std::vector<BackendRun> runs(shards);
  const int failing = injected_failed_shard();
  const RunResult merged = run_shards(
      batch, options, shards, module->output().words,
      [&](uint32_t k, const Batch& part, const RunOptions& o) -> Expected<RunResult> {
        if (static_cast<int>(k) == failing)
          return Error{
              fmt::format("device {} refused an allocation (injected by AB_TEST_FAIL_SHARD={})",
                          (*list)[k], k)};
        DeviceOptions one = device;
        one.devices.clear();
        one.vulkan.context.device_index = (*list)[k];
        one.progress = device.progress && k == 0;  // one progress line, the first shard's
        auto ran = backend.run(module, part, o, one);
        if (!ran) return ran.failure();
        runs[k] = std::move(*ran);
        return runs[k].result;
      });
  BackendRun run;
  run.result = merged;
  // The first shard that ran: its block names and its device's statistics stand for the kind.
  for (BackendRun& r : runs)
    if (!r.block_names.empty()) {
      run.block_names = r.block_names;
      run.extra_stats = r.extra_stats;
      break;
    }
  double slowest = 0;
  for (const BackendRun& r : runs)
    slowest = std::max(slowest, run_seconds(r));
  for (ExtraStat& s : run.extra_stats)
    if (s.key == "run_seconds")
      s = {"run_seconds", slowest, fmt::format("{:.3f} ms", slowest * 1000)};
  run.extra_stats.push_back(
      {"devices", *list, fmt::format("{} shards on devices {}", shards, device.devices)});
  return run;
}

}  // namespace ab::cli
