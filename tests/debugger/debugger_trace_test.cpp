// .abtrace files: recording, replaying with no GPU (the replay reaches the live run's states
// step by step), saving a step range, and clear messages for wrong, corrupt or truncated files.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "autobatch/module.h"
#include "autobatch/trace.h"
#include "cpu/vm.h"
#include "debugger/trace_source.h"
#include "support/debugger_test_support.h"
#include "trace/trace_file.h"

using namespace ab;
using namespace ab::debugger;
using ab::debugger::testing::fib_batch;
using ab::debugger::testing::Loaded;
using ab::debugger::testing::temp_path;

namespace {

// The debugger's recording of a session (record_trace), read back as the format's own Trace so
// that the tests can look inside and corrupt it.
Trace record(const Loaded& f, const TraceRange& range) {
  const std::unique_ptr<VmSource> source = f.source();
  Timeline timeline(*source, {.interval = 8});
  const std::string path = temp_path("recorded.abtrace");
  const Status recorded = record_trace(timeline, f.batch, f.options, range, path);
  REQUIRE_MESSAGE(recorded.ok(), recorded.error());
  auto t = read_trace(path);
  REQUIRE_MESSAGE(t.ok(), t.error());
  std::filesystem::remove(path);
  return std::move(*t);
}

std::unique_ptr<TraceSource> open_trace(const Loaded& f, const std::string& path) {
  auto read = TraceFile::read(path);
  REQUIRE_MESSAGE(read.ok(), read.error());
  auto source = TraceSource::open(*read, f.info());
  REQUIRE_MESSAGE(source.ok(), source.error());
  return std::move(*source);
}

// `t` written and read back through the public reader, then opened as the debugger does.
Expected<std::unique_ptr<TraceSource>> open_written(const Loaded& f, const Trace& t) {
  const std::string path = temp_path("written.abtrace");
  REQUIRE(write_trace(path, t).ok());
  auto read = TraceFile::read(path);
  std::filesystem::remove(path);
  REQUIRE_MESSAGE(read.ok(), read.error());
  return TraceSource::open(*read, f.info());
}

std::string read_message(const std::string& path) {
  auto r = read_trace(path);
  REQUIRE(!r.ok());
  return r.error();
}

}  // namespace

TEST_CASE("a replayed trace gives the live run's state at every step") {
  const Loaded f = fib_batch(30);
  const Trace t = record(f, {0, UINT64_MAX, 16});
  CHECK(t.finished);
  CHECK(t.first_step == 0);
  CHECK(t.checkpoints.size() > 2);
  const std::string path = temp_path("replay.abtrace");
  REQUIRE(write_trace(path, t).ok());

  auto replay = open_trace(f, path);
  VmRun live(f.lowered, f.batch, f.options);
  CHECK(replay->total_steps() == t.steps.size());
  uint64_t step = 0;
  while (!live.done()) {
    CHECK(state_json(*f.module, replay->snapshot(0, 30)) == state_json(*f.module, live.snapshot()));
    const int32_t block = live.next_block();
    live.step(1);
    REQUIRE(replay->step(1) == 1);
    std::vector<uint32_t> ran = live.last_active();
    std::sort(ran.begin(), ran.end());
    CHECK(t.active_lanes(step) == ran);
    CHECK(replay->recorded_block(step) == block);
    ++step;
  }
  CHECK(replay->done());
  CHECK(replay->error() == "");
  CHECK(replay->result().outputs == live.result().outputs);
  std::filesystem::remove(path);
}

TEST_CASE("a trace compresses: runs of lanes and zstd") {
  const Loaded f = fib_batch(4000);
  const Trace t = record(f, {0, UINT64_MAX, 4096});
  const std::string path = temp_path("size.abtrace");
  REQUIRE(write_trace(path, t).ok());
  uint64_t lane_entries = 0;
  for (const TraceStep& s : t.steps)
    lane_entries += s.active;
  // Far smaller than 4 bytes per active lane per step.
  CHECK(std::filesystem::file_size(path) < lane_entries);
  std::filesystem::remove(path);
}

TEST_CASE("a saved step range replays from its first step to its last") {
  const Loaded f = fib_batch(20);
  const Trace t = record(f, {40, 90, 16});
  CHECK(t.first_step == 40);
  CHECK(t.steps.size() == 50);
  CHECK(!t.finished);
  const std::string path = temp_path("range.abtrace");
  REQUIRE(write_trace(path, t).ok());
  DebuggerModel m(open_trace(f, path));
  CHECK(m.position() == 40);
  CHECK(m.timeline().known_end() == 90);
  m.step(1000);
  CHECK(m.position() == 90);
  CHECK(m.source().done());
  VmRun live(f.lowered, f.batch, f.options);
  live.step(90);
  CHECK(state_json(*f.module, m.source().snapshot(0, 20)) ==
        state_json(*f.module, live.snapshot()));
  m.seek(10);  // before the range: clamps to its start
  CHECK(m.position() == 40);
  m.seek(77);
  VmRun live77(f.lowered, f.batch, f.options);
  live77.step(77);
  CHECK(state_json(*f.module, m.source().snapshot(0, 20)) ==
        state_json(*f.module, live77.snapshot()));
  std::filesystem::remove(path);
}

TEST_CASE("a trace from another version of the program is rejected") {
  const Loaded f = fib_batch(8);
  const std::string path = temp_path("version.abtrace");
  REQUIRE(write_trace(path, record(f, {})).ok());
  auto header = read_trace_header(path);
  REQUIRE(header.ok());
  const TraceHeader& h = *header;
  CHECK(h.source_path == "fib.ab");
  CHECK(check_trace_source(h, path, "fib.ab", f.text).ok());
  const std::string message = check_trace_source(h, path, "fib.ab", f.text + "// edited\n").error();
  CHECK(message.find("different version of the program") != std::string::npos);
  CHECK(message.find("fib.ab") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("missing, foreign, truncated and corrupt trace files give clear messages") {
  const Loaded f = fib_batch(8);
  const std::string path = temp_path("bad.abtrace");
  REQUIRE(write_trace(path, record(f, {})).ok());
  std::vector<char> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto write_bytes = [&](const std::vector<char>& b) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  };
  CHECK(read_message(temp_path("nonexistent.abtrace")).find("cannot read trace") !=
        std::string::npos);

  write_bytes(
      std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() - 10)));
  CHECK(read_message(path).find("truncated") != std::string::npos);
  write_bytes(std::vector<char>(bytes.begin(), bytes.begin() + 14));
  CHECK(read_message(path).find("truncated") != std::string::npos);

  // Cut anywhere inside the header (magic, version, hash, names, sizes), a trace says so, and
  // not that it has format version 0 or that 0 of its bytes are missing.
  const size_t header_bytes = 8 + 4 + 8 + 1 + f.path.size() + 1 + 4 + 8 + 8;  // entry "main"
  for (size_t cut = 1; cut < header_bytes; ++cut) {
    CAPTURE(cut);
    write_bytes(std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(cut)));
    const std::string message = read_message(path);
    CHECK(message == "trace '" + path + "' is truncated (its header is incomplete)");
  }
  write_bytes({});
  CHECK(read_message(path) == "trace '" + path + "' is empty");

  std::vector<char> flipped = bytes;
  flipped[flipped.size() - 20] ^= 0x5a;
  write_bytes(flipped);
  CHECK(read_message(path).find("corrupt") != std::string::npos);

  write_bytes({'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'});
  CHECK(read_message(path).find("not an autobatch trace") != std::string::npos);

  std::vector<char> future = bytes;
  future[8] = 99;  // the format version follows the 8-byte magic
  write_bytes(future);
  CHECK(read_message(path).find("format version 99") != std::string::npos);

  // Version 2 numbered blocks before loops were joined: its steps would name the wrong blocks.
  std::vector<char> before_joined_loops = bytes;
  before_joined_loops[8] = 2;
  write_bytes(before_joined_loops);
  const std::string old_message = read_message(path);
  CHECK(old_message.find("format version 2") != std::string::npos);
  CHECK(old_message.find("record the trace again") != std::string::npos);
  std::filesystem::remove(path);
}

// Found by fuzz/fuzz_trace.cpp (seeds fuzz/corpus/trace/crash-*.abtrace): a header claiming a
// huge body was allocated before decompressing, and a lane set was decoded without regard to its
// step's active count (a few bytes could ask active_lanes for 2^62 lanes).
TEST_CASE("a trace's claimed sizes and lane sets are checked before they are trusted") {
  const Loaded f = fib_batch(8);
  const Trace good = record(f, {});
  const std::string path = temp_path("sizes.abtrace");
  auto bytes_of = [&](const Trace& t) {
    REQUIRE(write_trace(path, t).ok());
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  auto message = [](const std::string& bytes) {
    auto r = parse_trace(bytes, "t.abtrace");
    REQUIRE(!r.ok());
    return r.error();
  };

  std::string bytes = bytes_of(good);
  auto parsed = parse_trace(bytes, "t.abtrace");
  REQUIRE(parsed.ok());
  CHECK(parsed->active_lanes(1) == good.active_lanes(1));
  // The body size follows the magic, the version, the hash and the two strings.
  const size_t body_size_at = 8 + 4 + 8 + 1 + good.source_path.size() + 1 + good.entry.size();
  const uint64_t claimed = uint64_t{1} << 39;  // 512 GiB
  std::memcpy(bytes.data() + body_size_at, &claimed, sizeof claimed);
  CHECK(message(bytes) == "trace 't.abtrace' is corrupt: wrong body size");

  // A run of 2^62 lanes in a step of one; a lane past the batch's 8; no lane in a step of one.
  const std::vector<std::vector<uint8_t>> bad_sets = {
      {0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f}, {8, 1}, {}};
  for (const std::vector<uint8_t>& set : bad_sets) {
    Trace t = good;
    t.steps.resize(1);
    t.steps[0].active = 1;
    t.active_sets = set;
    t.active_set_start = {0, set.size()};
    CHECK(message(bytes_of(t)) == "trace 't.abtrace' is corrupt (inconsistent sections)");
  }
  std::filesystem::remove(path);
}

TEST_CASE("a trace that does not match its program is refused when opened") {
  const Loaded f = fib_batch(8);
  Trace t = record(f, {});
  t.steps[3].block = 999;
  CHECK(open_written(f, t).error().find("program has") != std::string::npos);
  Trace shifted = record(f, {});
  shifted.checkpoints.front().pc_depth[0] = 5;  // stack sizes no longer add up
  CHECK(open_written(f, shifted).error().find("does not fit the program") != std::string::npos);
}

// Found by fuzz/fuzz_trace.cpp (seeds fuzz/corpus/trace/crash-return-address-*.abtrace and
// crash-variable-stack-*.abtrace): a checkpoint whose sizes added up but whose stacks did not
// could be restored, and the VM then returned to a block outside the program or popped an empty
// variable stack.
TEST_CASE("a checkpoint the VM cannot run on from is refused when opened") {
  const Loaded f = fib_batch(8);
  const Trace good = record(f, {0, UINT64_MAX, 3});
  auto open_message = [&](const Trace& t) { return open_written(f, t).error(); };
  REQUIRE(open_message(good) == "");
  // A later checkpoint with a lane inside a call: two PC stack entries and a pushed fib.n.
  size_t ci = 0;
  uint32_t lane = 0;
  for (ci = 1; ci < good.checkpoints.size(); ++ci) {
    const VmCheckpoint& c = good.checkpoints[ci];
    auto it = std::find_if(c.pc_depth.begin(), c.pc_depth.end(), [](uint32_t d) { return d >= 3; });
    if (it == c.pc_depth.end()) continue;
    lane = static_cast<uint32_t>(it - c.pc_depth.begin());
    break;
  }
  REQUIRE(ci < good.checkpoints.size());
  size_t at = 0;  // where the lane's entries start in the concatenated PC stack
  for (uint32_t l = 0; l < lane; ++l)
    at += good.checkpoints[ci].pc_depth[l];

  Trace outside = good;
  outside.checkpoints[ci].pc_stack[at + 1] = 999;
  CHECK(open_message(outside).ends_with("a return address is outside the program"));

  Trace no_exit = good;
  no_exit.checkpoints[ci].pc_stack[at] = 0;
  CHECK(open_message(no_exit).ends_with("a running lane's PC stack does not start at the exit"));

  // Empty every variable stack of the lane (the sizes still add up).
  Trace popped = good;
  for (VmCheckpoint::VarStack& s : popped.checkpoints[ci].stacks) {
    size_t first = 0;
    for (uint32_t l = 0; l < lane; ++l)
      first += s.depth[l];  // fib's stacked variables are ints: one word per entry
    s.words.erase(s.words.begin() + static_cast<long>(first),
                  s.words.begin() + static_cast<long>(first + s.depth[lane]));
    s.depth[lane] = 0;
  }
  CHECK(open_message(popped).ends_with(
      "a variable stack holds fewer entries than the lane will pop"));
}

TEST_CASE("the public write_trace writes the debugger's own recording, and it replays") {
  const Loaded f = fib_batch(30);
  auto module = Module::compile(f.text, {f.path, "main"});
  REQUIRE_MESSAGE(module.ok(), module.error());
  const std::string path = temp_path("public.abtrace"), own = temp_path("own.abtrace");
  REQUIRE(write_trace(path, **module, f.batch, f.options, {0, UINT64_MAX, 16}).ok());
  // Byte for byte what the debugger records from a session's timeline: the same header, steps,
  // lane sets and checkpoints, written by the same writer.
  REQUIRE(write_trace(own, record(f, {0, UINT64_MAX, 16})).ok());
  auto bytes = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  CHECK(bytes(path) == bytes(own));

  // The debugger's reader opens it and its replay has the live VM's state at every step.
  auto replay = open_trace(f, path);
  VmRun live(f.lowered, f.batch, f.options);
  while (!live.done()) {
    CHECK(state_json(*f.module, replay->snapshot(0, 30)) == state_json(*f.module, live.snapshot()));
    live.step(1);
    REQUIRE(replay->step(1) == 1);
  }
  CHECK(replay->done());
  CHECK(replay->result().outputs == live.result().outputs);

  // A range, and what write_trace refuses.
  REQUIRE(write_trace(path, **module, f.batch, f.options, {40, 90, 16}).ok());
  auto range = read_trace(path);
  REQUIRE(range.ok());
  CHECK(range->first_step == 40);
  CHECK(range->steps.size() == 50);
  Batch wrong = f.batch;
  wrong.inputs.clear();
  CHECK_FALSE(write_trace(path, **module, wrong).ok());
  const Status late = write_trace(path, **module, f.batch, {}, {1u << 30, UINT64_MAX, 16});
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().find("the run ends at step") == 0);
  CHECK_FALSE(write_trace(temp_path("no/such/dir/x.abtrace"), **module, f.batch).ok());
  std::filesystem::remove(path);
  std::filesystem::remove(own);
}
