#include "ir/run.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>

namespace ab {

void deliver_emitted(const RunOptions& options, uint32_t record_words, uint32_t lane,
                     std::vector<uint32_t>& words, RunResult& result) {
  if (words.empty() || record_words == 0) return;
  result.records_emitted += words.size() / record_words;
  if (options.on_emit) {
    for (size_t at = 0; at + record_words <= words.size(); at += record_words)
      options.on_emit(lane, words.data() + at);
  } else {
    if (result.emitted.size() <= lane) result.emitted.resize(size_t{lane} + 1);
    result.emitted[lane].insert(result.emitted[lane].end(), words.begin(), words.end());
  }
  words.clear();
}

const char* heuristic_name(Heuristic h) {
  return h == Heuristic::MinPc ? "min-pc" : "most-lanes";
}

Status check_batch(const Program& program, int entry, const Batch& batch) {
  if (entry < 0 || entry >= static_cast<int>(program.functions.size()))
    return Error{"no entry function"};
  const Function& fn = program.functions[entry];
  if (batch.lanes == 0) return Error{"the batch has no lanes"};
  if (batch.inputs.size() != fn.params.size())
    return Error{fmt::format("function '{}' takes {} inputs but {} were given", fn.name,
                             fn.params.size(), batch.inputs.size())};
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const Var& p = fn.vars[fn.params[i]];
    const size_t want = static_cast<size_t>(batch.lanes) * program.types.words(p.type);
    if (batch.inputs[i].size() != want)
      return Error{fmt::format("input '{}' ({}) has {} words but {} lanes need {}", p.name,
                               program.types.to_string(p.type), batch.inputs[i].size(), batch.lanes,
                               want)};
  }
  if (batch.uniforms.size() != program.uniforms.size())
    return Error{fmt::format("the program declares {} uniforms but {} were bound",
                             program.uniforms.size(), batch.uniforms.size())};
  for (size_t u = 0; u < program.uniforms.size(); ++u) {
    const Uniform& un = program.uniforms[u];
    if (batch.uniforms[u].size() != program.types.words(un.type))
      return Error{fmt::format("uniform '{}' ({}) needs {} values but {} were bound", un.name,
                               program.types.to_string(un.type), program.types.words(un.type),
                               batch.uniforms[u].size())};
  }
  return Ok{};
}

Status check_run_options(const RunOptions& options) {
  if (options.stack_depth == 0)
    return Error{"the stack depth must be at least 1 (it counts the entry function's frame)"};
  // No lane could run a block: every one would fault at once.
  if (options.max_steps == 0)
    return Error{
        "max_steps must be at least 1 (the blocks a lane may run before it faults with "
        "step_budget)"};
  return Ok{};
}

namespace {

// "1.5 GiB", "12.0 MiB", "512 bytes"
std::string host_bytes(uint64_t bytes) {
  constexpr double kMiB = 1024.0 * 1024.0, kGiB = kMiB * 1024.0;
  const auto b = static_cast<double>(bytes);
  if (b >= kGiB) return fmt::format("{:.1f} GiB", b / kGiB);
  if (b >= kMiB) return fmt::format("{:.1f} MiB", b / kMiB);
  return fmt::format("{} bytes", bytes);
}

// The memory the system can still give without swapping (MemAvailable), else its physical
// memory.
uint64_t available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    uint64_t kib = 0;
    if (key == "MemAvailable:" && meminfo >> kib) return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX;
}

// What this process may still allocate: the memory available, or less, the room left under
// RLIMIT_AS.
uint64_t host_memory_limit() {
  const long page = sysconf(_SC_PAGESIZE);
  uint64_t limit = available_memory();
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    uint64_t mapped_pages = 0;  // the address space in use now (statm's first field, in pages)
    std::ifstream statm("/proc/self/statm");
    statm >> mapped_pages;
    const uint64_t mapped = mapped_pages * uint64_t(page > 0 ? page : 4096);
    limit = std::min<uint64_t>(limit, as.rlim_cur > mapped ? as.rlim_cur - mapped : 0);
  }
  return limit;
}

uint64_t batch_bytes(uint64_t bytes_per_lane, uint32_t lanes) {
  return bytes_per_lane > UINT64_MAX / std::max<uint64_t>(lanes, 1) ? UINT64_MAX
                                                                    : bytes_per_lane * lanes;
}

}  // namespace

Status check_host_memory(uint64_t bytes_per_lane, uint32_t lanes) {
  const uint64_t needed = batch_bytes(bytes_per_lane, lanes);
  const uint64_t limit = host_memory_limit();
  if (needed <= limit) return Ok{};
  return Error{fmt::format(
      "the batch needs {} of host memory to start ({} lanes x {} bytes) but this process can "
      "allocate {}: reduce the batch size",
      host_bytes(needed), lanes, bytes_per_lane, host_bytes(limit))};
}

std::string out_of_host_memory(uint64_t bytes_per_lane, uint32_t lanes) {
  return fmt::format(
      "out of host memory: the batch needs {} to start ({} lanes x {} bytes) and more as its "
      "stacks grow: reduce the batch size or the stack depth",
      host_bytes(batch_bytes(bytes_per_lane, lanes)), lanes, bytes_per_lane);
}

}  // namespace ab
