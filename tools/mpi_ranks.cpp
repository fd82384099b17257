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

// A RunResult as bytes, for the trip from a rank to rank 0.
class Writer {
 public:
  template <typename T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  template <typename T>
  void put(const std::vector<T>& values) {
    put<uint64_t>(values.size());
    if constexpr (std::is_trivially_copyable_v<T>) {
      const auto* p = reinterpret_cast<const char*>(values.data());
      bytes.insert(bytes.end(), p, p + values.size() * sizeof(T));
    } else {
      for (const T& v : values)
        put(v);
    }
  }
  void put(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  std::vector<char> bytes;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <typename T>
  void get(T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    take(&value, sizeof(T));
  }
  template <typename T>
  void get(std::vector<T>& values) {
    uint64_t n = 0;
    get(n);
    values.resize(n);
    if constexpr (std::is_trivially_copyable_v<T>)
      take(values.data(), n * sizeof(T));
    else
      for (T& v : values)
        get(v);
  }
  void get(std::string& s) {
    uint64_t n = 0;
    get(n);
    s.resize(n);
    take(s.data(), n);
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

void put_result(Writer& w, const RunResult& r, double seconds) {
  w.put(r.outputs);
  w.put(r.faulted);
  w.put<uint64_t>(r.errors.size());
  for (const LaneError& e : r.errors) {
    w.put(e.lane);
    w.put(e.code);
    w.put(e.function);
    w.put(e.line);
    w.put(e.step);
    w.put(e.detail);
  }
  const RunStats& s = r.stats;
  w.put(s.lanes), w.put(s.steps), w.put(s.lane_steps), w.put(s.calls), w.put(s.utilization);
  w.put(s.block_executions), w.put(s.block_utilization), w.put(s.block_lanes);
  w.put(s.max_stack_depth), w.put(s.wall_seconds), w.put(s.threads), w.put(s.threads_refused);
  w.put(r.emitted);
  w.put(r.records_emitted);
  w.put<uint8_t>(r.stopped);
  w.put(seconds);
}

RunResult get_result(const std::vector<char>& bytes, double& seconds) {
  Reader in(bytes);
  RunResult r;
  in.get(r.outputs);
  in.get(r.faulted);
  uint64_t errors = 0;
  in.get(errors);
  r.errors.resize(errors);
  for (LaneError& e : r.errors) {
    in.get(e.lane), in.get(e.code), in.get(e.function), in.get(e.line), in.get(e.step);
    in.get(e.detail);
  }
  RunStats& s = r.stats;
  in.get(s.lanes), in.get(s.steps), in.get(s.lane_steps), in.get(s.calls), in.get(s.utilization);
  in.get(s.block_executions), in.get(s.block_utilization), in.get(s.block_lanes);
  in.get(s.max_stack_depth), in.get(s.wall_seconds), in.get(s.threads), in.get(s.threads_refused);
  in.get(r.emitted);
  in.get(r.records_emitted);
  uint8_t stopped = 0;
  in.get(stopped);
  r.stopped = stopped != 0;
  in.get(seconds);
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
    Writer w;
    put_result(w, run.result, run_seconds(run));
    send_bytes(w.bytes);
    return Error{kSentToRoot};
  }
  std::vector<RunResult> results;
  double slowest = run_seconds(run);
  results.push_back(std::move(run.result));
  for (uint32_t r = 1; r < the_ranks.size; ++r) {
    double seconds = 0;
    results.push_back(get_result(receive_bytes(r), seconds));
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
