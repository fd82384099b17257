// `run` and `sample` under mpirun (docs/cli.md, "Over MPI ranks"): every rank parses the same
// command and builds the same batch; rank r runs the r-th contiguous block of its lanes
// (autobatch/shards.h, its random streams keyed by the lanes' global indices) on the device its
// local rank picks, and rank 0 gathers the blocks in lane order and goes on as a single process
// would (reports, files). Built with MPI (CMake option AB_MPI) and started by mpirun; otherwise
// there is one rank and everything here is a plain call.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "tools/backends.h"

namespace ab::cli {

struct Ranks {
  uint32_t rank = 0, size = 1;
  uint32_t local_rank = 0;  // among the ranks on this machine: picks the device
};

// Starts MPI when the build has it and mpirun started this process (it sets
// OMPI_COMM_WORLD_SIZE); end_ranks() finalises it. Without either there is one rank.
void start_ranks(int* argc, char*** argv);
void end_ranks();
const Ranks& ranks();
inline bool distributed() {
  return ranks().size > 1;
}
inline bool root_rank() {
  return ranks().rank == 0;
}

// Every rank's setup, agreed on before anything runs, so that a rank that cannot start (a bad
// file, rank 0's output folder unreachable) stops them all with one message. Go: every rank's
// succeeded. Report: this rank failed and prints its error (rank 0's failure is the one printed;
// another rank's only when rank 0's setup succeeded). Quiet: exit non-zero, another rank says why.
enum class Ready { Go, Report, Quiet };
Ready agree_to_run(bool ok);

// `backend` on this rank's block of `batch` (run_on_devices: --devices still cuts it further),
// then, on rank 0, every block gathered: the whole batch's BackendRun, the other ranks' records
// handed to options.on_emit (theirs after rank 0's own, each lane's in order). On the other ranks
// an Error whose message is kSentToRoot once their block has reached rank 0. One rank: a plain
// run_on_devices. A rank whose run fails has its lanes faulted (shard_failed, naming the rank).
// The lanes of each shard that run_over_ranks cuts `lanes` lanes into, in lane order (for
// TraceOptions::shard_lanes): the ranks' blocks, each cut over its --devices; empty when one
// device in one process runs them all. `run --trace` records the VM's steps with it.
Expected<std::vector<uint32_t>> shard_lanes(uint32_t lanes, const DeviceOptions& device);

inline constexpr const char* kSentToRoot = "(results sent to rank 0)";
Expected<BackendRun> run_over_ranks(const Backend& backend,
                                    const std::shared_ptr<const Module>& module, const Batch& batch,
                                    const RunOptions& options, const DeviceOptions& device);

}  // namespace ab::cli
