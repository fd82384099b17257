// `run` and `sample` over several devices (--devices) and several processes (mpirun): the batch's
// lanes cut into contiguous shards (autobatch/shards.h), each run with its lanes' global indices,
// the results put back in lane order as if one device had run them (docs/cli.md, "Sharding").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "tools/backends.h"

namespace ab::cli {

// The testing hook of a failed device: AB_TEST_FAIL_SHARD=k makes shard k's run fail as a refused
// allocation would (docs/cli.md). -1 when unset.
int injected_failed_shard();

// `backend` on `batch`: on one device, or, with device.devices, cut over those devices, one host
// thread and queue each, shard k's lanes faulted (shard_failed) when its device fails. The
// statistics of a sharded run are summed and its step trace is the shards' steps in turn
// (autobatch/shards.h, merge_shards).
Expected<BackendRun> run_on_devices(const Backend& backend,
                                    const std::shared_ptr<const Module>& module, const Batch& batch,
                                    const RunOptions& options, const DeviceOptions& device);

}  // namespace ab::cli
