#include "tools/mpi_ranks.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "autobatch/context.h"
#include "autobatch/shards.h"
#include "tools/shards.h"

#ifdef AB_WITH_MPI
#include <mpi.h>
#endif

namespace ab::cli {
namespace {

Ranks the_ranks;
bool mpi_started = false;

// A RunResult as bytes, for the trip from a rank to rank 0: result_fields lists the fields once,
// for the Writer and the Reader alike.
class Writer {
 public:
  template <typename T>
  void field(const T& value) {
    if constexpr (std::is_trivially_copyable_v<T>) {
      const auto* p = reinterpret_cast<const char*>(&value);
      bytes.insert(bytes.end(), p, p + sizeof(T));
    } else {
      field<uint64_t>(value.size());
      if constexpr (std::is_trivially_copyable_v<typename T::value_type>) {
        const auto* p = reinterpret_cast<const char*>(value.data());
        bytes.insert(bytes.end(), p, p + value.size() * sizeof(typename T::value_type));
      } else {
        for (const auto& v : value)
          field(v);
      }
    }
  }
  std::vector<char> bytes;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <typename T>
  void field(T& value) {
    if constexpr (std::is_trivially_copyable_v<T>) {
      take(&value, sizeof(T));
    } else {
      uint64_t n = 0;
      field(n);
      if (n > bytes_.size() - at_) throw std::runtime_error("a rank's results arrived cut short");
      value.resize(n);
      if constexpr (std::is_trivially_copyable_v<typename T::value_type>)
        take(value.data(), n * sizeof(typename T::value_type));
      else
        for (auto& v : value)
          field(v);
    }
  }

 private:
  void take(void* to, size_t n) {
    if (n > bytes_.size() - at_) throw std::runtime_error("a rank's results arrived cut short");
    std::memcpy(to, bytes_.data() + at_, n);
    at_ += n;
  }
  const std::vector<char>& bytes_;
  size_t at_ = 0;
};

// `Result` is RunResult or const RunResult, as `Io` reads or writes.
template <typename Io, typename Result, typename Seconds>
void result_fields(Io& io, Result& r, Seconds& seconds) {
  io.field(r.outputs);
  io.field(r.faulted);
  uint64_t errors = r.errors.size();
  io.field(errors);
  if constexpr (!std::is_const_v<Result>) r.errors.resize(errors);
  for (auto& e : r.errors) {
    io.field(e.lane), io.field(e.code), io.field(e.function), io.field(e.line);
    io.field(e.step), io.field(e.detail);
  }
  auto& s = r.stats;
  io.field(s.lanes), io.field(s.steps), io.field(s.lane_steps), io.field(s.calls);
  io.field(s.utilization), io.field(s.block_executions), io.field(s.block_utilization);
  io.field(s.block_lanes), io.field(s.max_stack_depth), io.field(s.wall_seconds);
  io.field(s.threads), io.field(s.threads_refused);
  io.field(r.emitted), io.field(r.records_emitted), io.field(r.stopped), io.field(r.trace);
  io.field(seconds);
}

std::vector<char> result_bytes(const RunResult& r, double seconds) {
  Writer w;
  result_fields(w, r, seconds);
  return std::move(w.bytes);
}

RunResult bytes_result(const std::vector<char>& bytes, double& seconds) {
  Reader in(bytes);
  RunResult r;
  result_fields(in, r, seconds);
  return r;
}

#ifdef AB_WITH_MPI
// Sent in pieces under MPI's int count, after their size.
constexpr size_t kPiece = size_t{1} << 30;

void send_bytes(const std::vector<char>& bytes) {
  uint64_t size = bytes.size();
  MPI_Send(&size, 1, MPI_UINT64_T, 0, 0, MPI_COMM_WORLD);
  for (size_t at = 0; at < bytes.size(); at += kPiece)
    MPI_Send(bytes.data() + at, static_cast<int>(std::min(kPiece, bytes.size() - at)), MPI_BYTE, 0,
             1, MPI_COMM_WORLD);
}

std::vector<char> receive_bytes(uint32_t from) {
  // Rank 0 waits for a rank still running without spinning: MPI's blocking receive polls at full
  // speed, which takes a core from the ranks it waits for where cores are shared.
  for (int arrived = 0; !arrived;) {
    MPI_Iprobe(static_cast<int>(from), 0, MPI_COMM_WORLD, &arrived, MPI_STATUS_IGNORE);
    if (!arrived) ::usleep(1000);
  }
  uint64_t size = 0;
  MPI_Recv(&size, 1, MPI_UINT64_T, static_cast<int>(from), 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::vector<char> bytes(size);
  for (size_t at = 0; at < bytes.size(); at += kPiece)
    MPI_Recv(bytes.data() + at, static_cast<int>(std::min(kPiece, bytes.size() - at)), MPI_BYTE,
             static_cast<int>(from), 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return bytes;
}
#else
void send_bytes(const std::vector<char>&) {}
std::vector<char> receive_bytes(uint32_t) {
  return {};
}
#endif

// The testing hook of a rank that dies: AB_TEST_MPI_EXIT_RANK=k makes rank k exit with status 3
// at its run's first poll, mid-run (docs/cli.md).
void exit_if_told_to(RunOptions& o) {
  const char* value = std::getenv("AB_TEST_MPI_EXIT_RANK");
  if (!value || !*value || std::atoi(value) != static_cast<int>(the_ranks.rank)) return;
  o.should_stop = [] {
    fmt::print(stderr, "rank {}: exiting mid-run (AB_TEST_MPI_EXIT_RANK)\n", the_ranks.rank);
    std::fflush(stderr);
    ::_exit(3);
    return true;
  };
}

// The rank's device: --device or --devices as given, else the local rank's among the machine's.
DeviceOptions rank_device(const Backend& backend, const DeviceOptions& device) {
  DeviceOptions d = device;
  d.progress = device.progress && root_rank();
  if (backend.name != "vulkan" || !device.devices.empty() ||
      device.vulkan.context.device_index >= 0)
    return d;
  if (auto list = list_devices(); list && !list->empty())
    d.vulkan.context.device_index = static_cast<int>(the_ranks.local_rank % list->size());
  return d;
}

}  // namespace

void start_ranks(int* argc, char*** argv) {
#ifdef AB_WITH_MPI
  if (!std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMIX_RANK")) return;
  // Open MPI's waits (a send to a busy rank 0, MPI_Finalize while rank 0 writes the fit) yield the
  // core instead of spinning on it, unless the user set it otherwise.
  ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  mpi_started = true;
  int rank = 0, size = 1, local = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  the_ranks = {static_cast<uint32_t>(rank), static_cast<uint32_t>(size),
               static_cast<uint32_t>(local)};
#else
  (void)argc, (void)argv;
#endif
}

void end_ranks() {
#ifdef AB_WITH_MPI
  if (mpi_started) MPI_Finalize();
  mpi_started = false;
#endif
}

const Ranks& ranks() {
  return the_ranks;
}

Ready agree_to_run(bool ok) {
  std::vector<uint8_t> all(the_ranks.size, 0);
  const uint8_t mine = ok ? 1 : 0;
  all[the_ranks.rank] = mine;
#ifdef AB_WITH_MPI
  if (mpi_started) MPI_Allgather(&mine, 1, MPI_UINT8_T, all.data(), 1, MPI_UINT8_T, MPI_COMM_WORLD);
#endif
  if (std::all_of(all.begin(), all.end(), [](uint8_t r) { return r != 0; })) return Ready::Go;
  if (ok) return Ready::Quiet;
  if (root_rank() || all[0]) {
    if (!root_rank()) fmt::print(stderr, "rank {}: ", the_ranks.rank);
    return Ready::Report;
  }
  return Ready::Quiet;
}

Expected<std::vector<uint32_t>> shard_lanes(uint32_t lanes, const DeviceOptions& device) {
  uint32_t devices = 1;
  if (!device.devices.empty()) {
    auto list = parse_device_list(device.devices, device.vulkan.context);
    if (!list) return list.failure();
    devices = static_cast<uint32_t>(list->size());
  }
  std::vector<uint32_t> out;
  if (the_ranks.size == 1 && devices == 1) return out;
  for (const LaneShard& block : cut_lanes(lanes, the_ranks.size))
    for (const LaneShard& shard : cut_lanes(block.lanes, devices))
      out.push_back(shard.lanes);
  return out;
}

Expected<BackendRun> run_over_ranks(const Backend& backend,
                                    const std::shared_ptr<const Module>& module, const Batch& batch,
                                    const RunOptions& options, const DeviceOptions& device) {
  if (!distributed()) return run_on_devices(backend, module, batch, options, device);
  const std::vector<LaneShard> cut = cut_lanes(batch.lanes, the_ranks.size);
  const LaneShard mine = cut[the_ranks.rank];
  RunOptions o = options;
  o.first_lane = options.first_lane + mine.first;
  // Rank 0's lanes are the batch's first: its records stream as they come; the others' travel
  // with their results.
  if (!root_rank()) o.on_emit = nullptr;
  exit_if_told_to(o);
  Expected<BackendRun> ran = BackendRun{};
  if (mine.lanes > 0)
    ran =
        run_on_devices(backend, module, shard_batch(batch, mine), o, rank_device(backend, device));
  BackendRun run;
  if (ran)
    run = std::move(*ran);
  else
    run.result = failed_shard(mine, module->output().words,
                              fmt::format("rank {}: {}", the_ranks.rank, ran.error()));
  if (!root_rank()) {
    send_bytes(result_bytes(run.result, run_seconds(run)));
    return Error{kSentToRoot};
  }
  std::vector<RunResult> results;
  double slowest = run_seconds(run);
  results.push_back(std::move(run.result));
  for (uint32_t r = 1; r < the_ranks.size; ++r) {
    double seconds = 0;
    results.push_back(bytes_result(receive_bytes(r), seconds));
    slowest = std::max(slowest, seconds);
    if (!options.on_emit) continue;
    RunResult& part = results.back();
    const uint32_t words = module->emit_record().words;
    for (uint32_t lane = 0; lane < part.emitted.size() && words > 0; ++lane)
      for (size_t at = 0; at + words <= part.emitted[lane].size(); at += words)
        options.on_emit(cut[r].first + lane, part.emitted[lane].data() + at);
    part.emitted.clear();
  }
  run.result = merge_shards(cut, std::move(results));
  bool timed = false;
  for (ExtraStat& s : run.extra_stats)
    if (s.key == "run_seconds") {
      s = {"run_seconds", slowest, fmt::format("{:.3f} ms", slowest * 1000)};
      timed = true;
    }
  if (!timed) run.result.stats.wall_seconds = slowest;
  run.extra_stats.push_back({"ranks", the_ranks.size,
                             fmt::format("{} (lanes cut into contiguous blocks)", the_ranks.size)});
  return run;
}

}  // namespace ab::cli
