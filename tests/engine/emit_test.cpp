// Output streams (docs/language.md, "Output streams"): `emit(x)` appends x to the lane's stream.
// Every backend and schedule hands the same records, in each lane's order, as the interpreter;
// on Vulkan a lane whose device stream is full parks until the host drains it, which changes
// nothing a program can see. Streams go to RunOptions::on_emit when it is set.
#include <map>

#include "cpu/vm.h"
#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

// Loops, recursion (records emitted at several depths), a fault after some records, random
// draws between records, and lanes with no records at all.
const char* kStreams = R"(
struct Rec { lane_n: int, depth: int, x: float, v: float[2] }
fn walk(n: int, depth: int) -> int {
    if n <= 0 { return 0; }
    emit(Rec { lane_n: n, depth: depth, x: uniform(), v: [float(n), float(depth) * 0.5] });
    let below = walk(n - 1, depth + 1) + walk(n - 2, depth + 1);
    emit(Rec { lane_n: n, depth: -depth, x: 1.0 / float(n - 3), v: [0.0, -0.0] });
    return below + 1;
}
fn main(n: int) -> int {
    assert(n != 6);
    let calls = walk(n, 0);
    for i in 0..n { emit(Rec { lane_n: i, depth: 99, x: normal(), v: [1.0, 2.0] }); }
    assert(n != 7);
    return calls;
}
)";

Batch lanes_0_to(int n) {
  Batch batch;
  batch.lanes = static_cast<uint32_t>(n);
  batch.inputs.resize(1);
  for (int i = 0; i < n; ++i)
    batch.inputs[0].push_back(static_cast<uint32_t>(i % 9));
  return batch;
}

TEST_CASE("emit: every backend and schedule streams the interpreter's records") {
  auto loaded = load_source(kStreams, "main", "streams.ab");
  const Batch batch = lanes_0_to(40);
  RunOptions options;
  options.seed = 5;
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
  // Lane 4 (n = 4): walk emits twice per call with n > 0 (7 calls), then main emits 4 more.
  REQUIRE(expected.emitted.size() == 40);
  const uint32_t record = loaded->program.types.words(loaded->program.emit_type);
  REQUIRE(record == 5);
  CHECK(expected.emitted[4].size() == (2 * 7 + 4) * record);
  CHECK(expected.emitted[0].empty());
  // Lane 6 faults before emitting anything; lane 7 faults after all of its records.
  CHECK(expected.emitted[6].empty());
  CHECK_FALSE(expected.emitted[7].empty());
  CHECK(compare_results(loaded->lowered, expected, run_vm(loaded->lowered, batch, options)) == "");
  // 1 record per lane on the device: lanes park at nearly every emit; 3: now and then; 64: never.
  for (uint32_t capacity : {1u, 3u, 64u}) {
    for (const Config& c : configs()) {
      CAPTURE(capacity);
      CAPTURE(c.name);
      VulkanOptions vulkan = options_for(c);
      vulkan.stream_records = capacity;
      auto got = run_vulkan(loaded->lowered, batch, options, vulkan, nullptr, context());
      REQUIRE_MESSAGE(got.ok(), got.error());
      CHECK(compare_results(loaded->lowered, expected, *got) == "");
      CHECK(got->stats.lane_steps == expected.stats.lane_steps);
      check_no_validation_messages();
    }
  }
}

TEST_CASE("emit: on_emit receives each lane's records in order instead of the result") {
  auto loaded = load_source(kStreams, "main", "streams.ab");
  const Batch batch = lanes_0_to(20);
  RunOptions collect;
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, collect);
  const uint32_t record = loaded->program.types.words(loaded->program.emit_type);
  auto check_sink = [&](const std::string& backend, auto run) {
    CAPTURE(backend);
    std::map<uint32_t, std::vector<uint32_t>> seen;
    RunOptions sink;
    sink.on_emit = [&](uint32_t lane, const uint32_t* words) {
      seen[lane].insert(seen[lane].end(), words, words + record);
    };
    const RunResult got = run(sink);
    CHECK(got.emitted.empty());
    CHECK(got.records_emitted == expected.records_emitted);
    for (uint32_t lane = 0; lane < batch.lanes; ++lane)
      CHECK(seen[lane] == expected.emitted[lane]);
  };
  check_sink("interp", [&](const RunOptions& o) {
    return run_interp(loaded->program, loaded->entry, batch, o);
  });
  check_sink("vm", [&](const RunOptions& o) { return run_vm(loaded->lowered, batch, o); });
  check_sink("vulkan", [&](const RunOptions& o) {
    VulkanOptions vulkan;
    vulkan.stream_records = 2;
    auto r = run_vulkan(loaded->lowered, batch, o, vulkan, nullptr, context());
    REQUIRE_MESSAGE(r.ok(), r.error());
    return *r;
  });
}

TEST_CASE("emit: one type per program, a statement only, one argument") {
  auto error_of = [](const char* source) {
    Diagnostics diags("bad.ab", source);
    return compile_source(source, "bad.ab", diags) ? std::string() : diags.format();
  };
  CHECK(error_of("fn main(n: int) -> int { emit(n); emit(1.5); return n; }")
            .find("every 'emit' of a program emits one type: this one emits 'float', the one at "
                  "line 1 emits 'int'") != std::string::npos);
  CHECK(error_of("fn main(n: int) -> int { let x = emit(n); return n; }")
            .find("'emit' returns nothing and cannot be used as a value") != std::string::npos);
  CHECK(error_of("fn main(n: int) -> int { emit(n, n); return n; }")
            .find("'emit' takes 1 argument, found 2") != std::string::npos);
  CHECK(error_of("fn emit(n: int) -> int { return n; } fn main(n: int) -> int { return n; }") !=
        "");
  // The literal typing rule reads the program's emit type: 2 is a float here.
  CHECK(error_of("fn main(x: float) -> float { emit(x); emit(2); return x; }") == "");
}

}  // namespace
}  // namespace ab::enginetest
