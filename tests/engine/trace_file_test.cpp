// Traces through the public API alone (autobatch/trace.h): a trace written by write_trace reads
// back as the VM session's own run, its states restore into a VmSession, a TraceWriter's trace of
// steps a host ran itself reads back the same, and the header ties a trace to its source text.
// No Vulkan.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "autobatch/module.h"
#include "autobatch/trace.h"
#include "autobatch/vm.h"
#include "samples/table/sample_table.h"
#include "support/child_process.h"
#include "support/compiled.h"
#include "support/temp_dir.h"

namespace ab {
namespace {

// samples/collatz.ab, as the build embedded it.
const std::string& collatz_source() {
  const std::string* text = samples::sample_source("collatz.ab");
  REQUIRE(text != nullptr);
  return *text;
}

using ab::testing::TempDir;

// The header records the path the module was compiled from.
std::shared_ptr<const Module> collatz_module() {
  return testing::compiled(collatz_source(), {"/tmp/collatz.ab", "main"});
}

std::unique_ptr<VmSession> session(std::shared_ptr<const Module> module, const Batch& b,
                                   const RunOptions& options = {}) {
  auto made = VmSession::create(std::move(module), b, options);
  REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error()));
  return std::move(*made);
}

Batch batch() {
  Batch b;
  b.lanes = 5;
  b.inputs = {{1, 6, 7, 27, 12}};
  return b;
}

TEST_CASE("trace file: write_trace's trace reads back as the VM session's run") {
  TempDir dir("ab_trace_file_test");
  const auto module = collatz_module();
  RunOptions options;
  options.seed = 3;
  REQUIRE(
      write_trace(dir.file("run.abtrace"), *module, batch(), options, {0, UINT64_MAX, 10}).ok());

  auto header = read_trace_header(dir.file("run.abtrace"));
  REQUIRE(header.ok());
  CHECK(header->source_path == "/tmp/collatz.ab");
  CHECK(header->entry == "main");
  CHECK(check_trace_source(*header, "run.abtrace", "collatz.ab", collatz_source()).ok());
  const Status changed =
      check_trace_source(*header, "run.abtrace", "collatz.ab", collatz_source() + " ");
  REQUIRE_FALSE(changed.ok());
  CHECK(changed.error().find("has changed since") != std::string::npos);

  auto read = TraceFile::read(dir.file("run.abtrace"));
  REQUIRE_MESSAGE(read.ok(), (read.ok() ? "" : read.error()));
  const TraceFile& trace = **read;
  CHECK(trace.entry() == "main");
  CHECK(trace.batch().inputs == batch().inputs);
  CHECK(trace.options().seed == 3);
  CHECK(trace.first_step() == 0);
  CHECK(trace.finished());

  auto vm = session(module, trace.batch(), trace.options());
  for (uint64_t s = trace.first_step(); s < trace.end_step(); ++s) {
    const int32_t block = vm->next_block();
    vm->step(1);
    std::vector<uint32_t> lanes = vm->last_active();
    std::sort(lanes.begin(), lanes.end());
    CHECK(trace.steps()[s].block == block);
    CHECK(trace.steps()[s].active == lanes.size());
    CHECK(trace.active_lanes(s) == lanes);
  }
  CHECK(vm->done());
  CHECK(trace.active_lanes(trace.end_step()).empty());

  // Every saved state restores to the run's state at its step.
  REQUIRE(trace.checkpoints().size() > 1);
  for (const auto& state : trace.checkpoints()) {
    auto fresh = session(module, trace.batch(), trace.options());
    fresh->step(state->step());
    const BatchSnapshot want = fresh->snapshot();
    REQUIRE(vm->restore(*state).ok());
    CHECK(vm->steps() == state->step());
    // (Stack capacities grow on demand and may differ; the lanes' state may not.)
    const BatchSnapshot got = vm->snapshot();
    CHECK(got.pc == want.pc);
    CHECK(got.pc_depth == want.pc_depth);
    CHECK(got.registers == want.registers);
    CHECK(got.lane_steps == want.lane_steps);
    CHECK(got.faulted == want.faulted);
  }
}

TEST_CASE("trace file: a trace that cannot be written whole is an error and leaves no file") {
  const auto module = collatz_module();
  // /dev/full: every write fails with ENOSPC, as on a full disk; the device itself stays. Some
  // containers have none (a write would create a file); the file size limit below needs none.
  if (std::filesystem::is_character_file("/dev/full")) {
    Status full = write_trace("/dev/full", *module, batch());
    REQUIRE_FALSE(full.ok());
    CHECK(full.error() == "cannot write trace '/dev/full': No space left on device");
    CHECK(std::filesystem::is_character_file("/dev/full"));
  }
  // A regular file cut short (a file size limit): the partial file is removed.
  TempDir dir("ab_trace_file_test");
  const std::string path = dir.file("cut.abtrace");
  const auto outcome = ab::testing::run_in_child([&] {
    signal(SIGXFSZ, SIG_IGN);  // past the limit a write fails with EFBIG instead
    const rlimit small{64, 64};
    if (setrlimit(RLIMIT_FSIZE, &small) != 0) return 2;
    Status cut = write_trace(path, *module, batch());
    if (cut.ok()) return 3;
    if (cut.error().find("File too large") == std::string::npos) return 4;
    return std::filesystem::exists(path) ? 5 : 0;
  });
  CHECK_MESSAGE(outcome.exited, outcome.describe());
  CHECK(outcome.code == 0);
}

TEST_CASE("trace file: a TraceWriter's trace of a host's own steps reads back the same") {
  TempDir dir("ab_trace_file_test");
  const auto module = collatz_module();
  auto vm = session(module, batch());
  vm->step(4);
  TraceWriter writer(*module, batch(), {});
  CHECK_FALSE(writer.write(dir.file("empty.abtrace"), false).ok());
  writer.add_checkpoint(*vm->checkpoint());
  std::vector<TraceStep> steps;
  while (vm->steps() < 20 && !vm->done()) {
    const int32_t block = vm->next_block();
    vm->step(1);
    writer.add_step(block, vm->last_active());
    steps.push_back({block, static_cast<uint32_t>(vm->last_active().size())});
    if (vm->steps() % 8 == 0) writer.add_checkpoint(*vm->checkpoint());
  }
  REQUIRE(writer.write(dir.file("part.abtrace"), vm->done()).ok());

  auto read = TraceFile::read(dir.file("part.abtrace"));
  REQUIRE(read.ok());
  const TraceFile& trace = **read;
  CHECK(trace.first_step() == 4);
  CHECK(trace.end_step() == 20);
  CHECK_FALSE(trace.finished());
  REQUIRE(trace.steps().size() == steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    CHECK(trace.steps()[i].block == steps[i].block);
    CHECK(trace.steps()[i].active == steps[i].active);
  }
  REQUIRE(trace.checkpoints().size() == 3);  // steps 4, 8 and 16
  CHECK(trace.checkpoints()[1]->step() == 8);
  CHECK(vm->restore(*trace.checkpoints()[2]).ok());
  CHECK(vm->steps() == 16);

  auto garbage = TraceFile::parse("not a trace", "g.abtrace");
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.error().find("g.abtrace") != std::string::npos);

  auto missing = TraceFile::read(dir.file("none.abtrace"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().find("none.abtrace") != std::string::npos);
}

}  // namespace
}  // namespace ab
