// The benchmark suite (bench/): rows are checked against the interpreter, a wrong result is
// caught, the JSON has the documented keys, and every native baseline and every GLSL ceiling
// kernel equals the interpreter.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/bench.h"
#include "bench/ceiling.h"
#include "bench/harness.h"
#include "bench/report.h"
#include "bench/systems.h"
#include "bench/workloads.h"
#include "cpu/interp.h"
#include "support/engine_test_support.h"

namespace {

using ab::bench::BenchOptions;
using ab::bench::BenchReport;
using ab::bench::BenchRow;

// fib's call count by its definition: one call for n, plus the calls of both subproblems.
uint64_t fib_calls(uint32_t n) {
  return n <= 1 ? 1 : 1 + fib_calls(n - 1) + fib_calls(n - 2);
}

BenchOptions tiny_options() {
  BenchOptions options;
  options.quick = true;
  options.programs = {"fib"};
  options.batches = {1, 7};
  options.systems = {"vm", "native"};
  options.repeats = 1;
  options.print_table = false;
  return options;
}

const BenchRow* find_row(const BenchReport& report, const std::string& system, uint32_t lanes) {
  for (const BenchRow& row : report.rows)
    if (row.system == system && row.lanes == lanes) return &row;
  return nullptr;
}

}  // namespace

TEST_CASE("bench: a tiny run checks every row against the interpreter") {
  BenchReport report;
  REQUIRE(ab::bench::run_suite(tiny_options(), report));
  REQUIRE(report.rows.size() == 4);
  CHECK(report.all_ok());
  for (const BenchRow& row : report.rows) {
    CAPTURE(row.system);
    CAPTURE(row.lanes);
    CHECK(row.status == "ok");
    CHECK(row.checked);
    CHECK(row.repeats == 1);
    CHECK(row.median_seconds > 0);
    CHECK(row.calls_per_second > 0);
  }
  // The work per row comes from the inputs alone: sum over lanes of fib's calls, plus one entry
  // call per lane.
  for (uint32_t lanes : {1u, 7u}) {
    const ab::Batch batch =
        ab::bench::find_workload("fib")->make_batch(lanes, ab::bench::InputSize::Light, true);
    uint64_t expected = lanes;
    for (uint32_t n : batch.inputs[0])
      expected += fib_calls(n);
    const BenchRow* vm = find_row(report, "vm", lanes);
    const BenchRow* native = find_row(report, "native", lanes);
    REQUIRE(vm);
    REQUIRE(native);
    CHECK(vm->lane_calls == expected);
    CHECK(native->lane_calls == expected);
    // Baselines compare with themselves at exactly 1; the VM has scheduler figures, native none.
    CHECK(*vm->vs_vm == doctest::Approx(1.0));
    CHECK(*native->vs_native == doctest::Approx(1.0));
    CHECK(vm->steps.has_value());
    CHECK(*vm->steps > 0);
    CHECK_FALSE(native->steps.has_value());
  }
  // Inputs are divergent: at 7 lanes not every lane asks for the same n.
  const ab::Batch seven =
      ab::bench::find_workload("fib")->make_batch(7, ab::bench::InputSize::Light, true);
  bool divergent = false;
  for (uint32_t n : seven.inputs[0])
    divergent |= n != seven.inputs[0][0];
  CHECK(divergent);
}

// `--programs matmul` (bench/product_bench.h) and `--programs inline` (bench/inline_bench.h):
// their rows run the vm (matmul: a dense set of 3 lanes, one partial tile; inline: a row loop's
// helper call kept and inlined) and check the words against the interpreter's, and the run
// exits 0 (1 would mean a row's words differed); the suite's own rows are not run.
TEST_CASE("bench: the matmul and inline rows check the vm against the interpreter") {
  for (const char* program : {"matmul", "inline"}) {
    CAPTURE(program);
    BenchOptions options;
    options.programs = {program};
    options.batches = {3};
    options.repeats = 1;
    options.print_table = false;
    CHECK(ab::bench::run_bench(options) == 0);
  }
}

TEST_CASE("bench: the JSON report parses and has the documented keys") {
  BenchReport report;
  REQUIRE(ab::bench::run_suite(tiny_options(), report));
  const nlohmann::json parsed = nlohmann::json::parse(ab::bench::to_json(report).dump());
  for (const char* key : {"quick", "device", "notes", "cpu_threads", "inputs", "batches",
                          "heavy_batches", "systems", "rows", "compile", "ok"})
    CHECK_MESSAGE(parsed.contains(key), key);
  CHECK(parsed["ok"] == true);
  CHECK(parsed["batches"] == nlohmann::json::array({1, 7}));
  CHECK(parsed["inputs"] == nlohmann::json::array({"light"}));  // --quick's default
  REQUIRE(parsed["rows"].size() == 4);
  for (const auto& row : parsed["rows"]) {
    for (const char* key : {"program",          "system",         "lanes",
                            "status",           "message",        "checked",
                            "repeats",          "median_seconds", "min_seconds",
                            "lane_calls",       "lane_steps",     "calls_per_second",
                            "steps_per_second", "steps",          "utilization",
                            "dispatches",       "submissions",    "seconds_per_step",
                            "vs_native",        "vs_vm",          "vs_glsl",
                            "inputs",           "upload_seconds", "loop_seconds",
                            "readback_seconds"})
      CHECK_MESSAGE(row.contains(key), key);
    CHECK(row["program"] == "fib");
    CHECK(row["inputs"] == "light");
    CHECK(row["checked"] == true);
    CHECK(row["upload_seconds"].is_null());  // CPU rows have no engine breakdown
  }
  // run_bench writes the same document to --json.
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "autobatch_bench_test.json";
  BenchOptions options = tiny_options();
  options.json_path = path.string();
  REQUIRE(ab::bench::run_bench(options) == 0);
  std::ifstream in(path);
  const nlohmann::json written = nlohmann::json::parse(in);
  CHECK(written["rows"].size() == 4);
  std::filesystem::remove(path);
}

TEST_CASE("bench: a wrong native result marks its row FAILED and the run exits 1") {
  BenchOptions options = tiny_options();
  options.tamper_for_test = [](const std::string& system, ab::RunResult& result) {
    if (system == "native" && result.outputs.size() > 3) result.outputs[3] += 1;
  };
  BenchReport report;
  REQUIRE(ab::bench::run_suite(options, report));
  CHECK_FALSE(report.all_ok());
  const BenchRow* bad = find_row(report, "native", 7);
  REQUIRE(bad);
  CHECK(bad->status == "FAILED");
  CHECK_FALSE(bad->checked);
  CHECK(bad->message.find("lane 3") != std::string::npos);
  // The one-lane batch has no lane 3 to corrupt, and the VM was not touched.
  CHECK(find_row(report, "native", 1)->status == "ok");
  CHECK(find_row(report, "vm", 7)->status == "ok");
  // A failed row reports no ratio, and the table says FAILED.
  CHECK_FALSE(bad->vs_vm.has_value());
  CHECK(ab::bench::format_table(report).find("FAILED") != std::string::npos);
  CHECK(ab::bench::run_bench(options) == 1);
}

TEST_CASE("bench: every native baseline equals the interpreter on divergent inputs") {
  // Native code never faults, so this also proves each workload's stack depth suffices for both
  // input sizes.
  // Light under --quick, then light and heavy.
  for (bool quick : {true, false}) {
    CAPTURE(quick);
    BenchOptions options;
    options.quick = quick;
    options.batches = {33};
    options.systems = {"native"};
    options.repeats = 1;
    options.print_table = false;
    BenchReport report;
    REQUIRE(ab::bench::run_suite(options, report));
    REQUIRE(report.rows.size() == (quick ? 1 : 2) * ab::bench::workloads().size());
    for (const BenchRow& row : report.rows) {
      CAPTURE(row.program);
      CAPTURE(row.message);
      CHECK(row.status == "ok");
    }
  }
}

TEST_CASE("bench: every GLSL ceiling kernel equals the interpreter on divergent inputs") {
  // 1 lane, a partial workgroup, and two groups with the second partial (local size 64); all
  // three input sizes (light under --quick, light, heavy), so each workload's stack depth
  // suffices for each.
  for (bool quick : {true, false}) {
    CAPTURE(quick);
    BenchOptions options;
    options.quick = quick;
    options.batches = {1, 33, 70};
    options.systems = {"glsl"};
    options.repeats = 1;
    options.print_table = false;
    BenchReport report;
    REQUIRE(ab::bench::run_suite(options, report));
    REQUIRE_MESSAGE(report.vulkan_note.empty(), report.vulkan_note);
    REQUIRE(report.rows.size() == (quick ? 3 : 6) * ab::bench::workloads().size());
    for (const BenchRow& row : report.rows) {
      CAPTURE(row.program);
      CAPTURE(row.lanes);
      CAPTURE(row.message);
      CHECK(row.status == "ok");
      CHECK(row.checked);
      CHECK_FALSE(row.steps.has_value());  // no scheduler, no steps
      CHECK(row.dispatches.value_or(0) >= 1);
    }
    REQUIRE(report.compiles.size() == ab::bench::workloads().size());
    for (const ab::bench::CompileRow& c : report.compiles) {
      CHECK(c.glsl_seconds.has_value());
      CHECK_FALSE(c.seconds.has_value());  // the engine was not asked for
    }
  }
}

TEST_CASE("bench: ceiling kernels are clean under validation and match native and the engine") {
  using namespace ab::bench;
  for (const Workload& w : workloads()) {
    CAPTURE(w.name);
    const ab::Batch batch = w.make_batch(100, InputSize::Light, false);
    auto kernel = compile_ceiling(ab::enginetest::context(), w.name,
                                  static_cast<uint32_t>(batch.inputs.size()), w.stack_depth);
    REQUIRE_MESSAGE(kernel.ok(), kernel.error());
    auto ran = run_ceiling(*kernel, batch, w.out_words, w.seed);
    REQUIRE_MESSAGE(ran.ok(), ran.error());
    const ab::RunResult* result = &ran->result;
    const ab::RunResult native = run_native(w.native, batch, w.out_words, w.seed);
    // Only nuts_tree's floats may differ from the CPU's (the device's log, sqrt and cos in
    // normal()); from the engine's generated kernels on the same device they may not. The hand
    // tracer's colours are the native tracer's within 1e-4 (bench/ceiling/raytrace.glsl: it
    // multiplies weights down each ray's path where the recursion multiplies colours up it, so
    // the sums round differently; every ray takes the same path).
    const bool device_floats = w.name == "nuts_tree";
    const bool floats = device_floats || w.name == "raytrace";
    CHECK(compare_with_reference(native, *result, w.out_words, floats, floats));
    if (device_floats) {
      const std::string source = ab::testing::read_sample(w.name + ".ab");
      auto loaded = ab::enginetest::load_source(source, w.entry, w.name + ".ab");
      ab::RunOptions run_options;
      run_options.seed = w.seed;
      run_options.stack_depth = w.stack_depth;
      ab::VulkanOptions vulkan;
      vulkan.disk_cache = false;
      auto engine = ab::run_vulkan(loaded->lowered, batch, run_options, vulkan, nullptr,
                                   ab::enginetest::context());
      REQUIRE_MESSAGE(engine.ok(), engine.error());
      CHECK(compare_with_reference(*engine, *result, w.out_words, true, false));
    }
    ab::enginetest::check_no_validation_messages();
  }
}

TEST_CASE("bench: a ceiling lane that overflows its stack or loops too long errors clearly") {
  using namespace ab::bench;
  ab::Batch fib;
  fib.lanes = 2;
  fib.inputs = {{3, 10}};  // fib(3) needs 3 frames, fib(10) 10
  auto small = compile_ceiling(ab::enginetest::context(), "fib", 1, 4);
  REQUIRE_MESSAGE(small.ok(), small.error());
  auto overflow = run_ceiling(*small, fib, 1, 1);
  REQUIRE_FALSE(overflow.ok());
  CHECK(overflow.error() == "lane 1: its call chain needs more than 4 stack frames");

  // collatz from 0 never reaches 1: the kernel suspends at its bound in every dispatch (not at
  // the driver's), and the host gives up after the dispatches it allows.
  ab::Batch collatz;
  collatz.lanes = 3;
  collatz.inputs = {{6, 7, 0}};
  auto looping = compile_ceiling(ab::enginetest::context(), "collatz", 1, 8);
  REQUIRE_MESSAGE(looping.ok(), looping.error());
  auto endless = run_ceiling(*looping, collatz, 1, 1, 3);
  REQUIRE_FALSE(endless.ok());
  CHECK(endless.error() == fmt::format("lane 2: not finished after 3 dispatches of {} loop "
                                       "iterations",
                                       kCeilingMaxIterations));
  CHECK_FALSE(compile_ceiling(ab::enginetest::context(), "no_such_program", 1, 8).ok());
  CHECK_FALSE(compile_ceiling(ab::enginetest::context(), "fib", 1, 8, 0).ok());
  CHECK_FALSE(
      compile_ceiling(ab::enginetest::context(), "fib", 1, 8, kCeilingMaxIterations + 1).ok());
  ab::enginetest::check_no_validation_messages();
}

TEST_CASE("bench: a ceiling lane resumes across dispatches with the interpreter's result") {
  using namespace ab::bench;
  // ackermann(3, 5) at the real bound: ~85,000 loop iterations, more than one dispatch may run.
  {
    ab::Batch ack;
    ack.lanes = 2;
    ack.inputs = {{3, 2}, {5, 3}};
    auto kernel = compile_ceiling(ab::enginetest::context(), "ackermann", 2, 320);
    REQUIRE_MESSAGE(kernel.ok(), kernel.error());
    auto ran = run_ceiling(*kernel, ack, 1, 1);
    REQUIRE_MESSAGE(ran.ok(), ran.error());
    CHECK(ran->dispatches >= 2);
    CHECK(ran->result.outputs == std::vector<uint32_t>{253, 9});  // ack(3, 5), ack(2, 3)
  }
  // Every program at heavy inputs with a bound of 64 iterations per dispatch (nuts_tree 300: one
  // transition per dispatch; raytrace 4 rays), against the interpreter and against the same kernel
  // at the real bound bit for bit: saving and restoring a lane's state changes nothing.
  for (const Workload& w : workloads()) {
    CAPTURE(w.name);
    const ab::Batch batch = w.make_batch(70, InputSize::Heavy, false);
    const uint32_t params = static_cast<uint32_t>(batch.inputs.size());
    const uint32_t depth = w.depth(InputSize::Heavy);
    const uint32_t bound = w.name == "nuts_tree" ? 300 : w.name == "raytrace" ? 4 : 64;
    auto sliced = compile_ceiling(ab::enginetest::context(), w.name, params, depth, bound);
    auto whole = compile_ceiling(ab::enginetest::context(), w.name, params, depth);
    REQUIRE_MESSAGE(sliced.ok(), sliced.error());
    REQUIRE_MESSAGE(whole.ok(), whole.error());
    auto many = run_ceiling(*sliced, batch, w.out_words, w.seed);
    auto few = run_ceiling(*whole, batch, w.out_words, w.seed);
    REQUIRE_MESSAGE(many.ok(), many.error());
    REQUIRE_MESSAGE(few.ok(), few.error());
    CHECK(many->dispatches > few->dispatches);
    CHECK(many->result.outputs == few->result.outputs);
    const std::string source = ab::testing::read_sample(w.name + ".ab");
    auto loaded = ab::enginetest::load_source(source, w.entry, w.name + ".ab");
    ab::RunOptions run_options;
    run_options.seed = w.seed;
    run_options.stack_depth = depth;
    const ab::RunResult expected =
        ab::run_interp(loaded->program, loaded->entry, batch, run_options);
    const bool floats = w.name == "nuts_tree" || w.name == "raytrace";
    CHECK(compare_with_reference(expected, many->result, w.out_words, floats, floats));
  }
  ab::enginetest::check_no_validation_messages();
}

TEST_CASE("bench: --inputs heavy rows say heavy and pass their checks") {
  BenchOptions options;
  options.inputs = "heavy";
  options.batches = {5};
  options.systems = {"vm", "native", "glsl", "local-lane"};
  options.repeats = 1;
  options.print_table = false;
  BenchReport report;
  REQUIRE(ab::bench::run_suite(options, report));
  REQUIRE_MESSAGE(report.vulkan_note.empty(), report.vulkan_note);
  CHECK(report.inputs == std::vector<std::string>{"heavy"});
  REQUIRE(report.rows.size() == 4 * ab::bench::workloads().size());
  for (const BenchRow& row : report.rows) {
    CAPTURE(row.program);
    CAPTURE(row.system);
    CAPTURE(row.message);
    CHECK(row.inputs == "heavy");
    CHECK(row.status == "ok");
    CHECK(row.checked);
    // The engine's rows say where their time went; the others have no such figures.
    CHECK(row.upload_seconds.has_value() == (row.system == "local-lane"));
    if (row.system == "local-lane") {
      CHECK(*row.upload_seconds > 0);
      CHECK(*row.loop_seconds > 0);
      CHECK(*row.readback_seconds > 0);
    }
  }
  // Heavy fib does more work per lane than light fib on the same lanes.
  options.inputs = "both";
  options.programs = {"fib"};
  options.systems = {"native"};
  REQUIRE(ab::bench::run_suite(options, report));
  REQUIRE(report.rows.size() == 2);
  CHECK(report.rows[0].inputs == "light");
  CHECK(report.rows[1].inputs == "heavy");
  CHECK(report.rows[1].lane_calls > report.rows[0].lane_calls);
  const std::string table = ab::bench::format_table(report);
  CHECK(table.find("inputs: light, heavy") != std::string::npos);
  CHECK(table.find("fib        heavy") != std::string::npos);
  // With --quick and no --batches, heavy rows run at 1024 lanes only; light ones at 1, 64, 1024.
  options.quick = true;
  options.batches = {};
  options.inputs = "";
  REQUIRE(ab::bench::run_suite(options, report));
  CHECK(report.inputs == std::vector<std::string>{"light"});
  options.inputs = "heavy";
  REQUIRE(ab::bench::run_suite(options, report));
  REQUIRE(report.rows.size() == 1);
  CHECK(report.rows[0].lanes == 1024);
  CHECK(report.rows[0].inputs == "heavy");
}

TEST_CASE("bench: heavy rows above 1024 lanes leave out the slowest schedules unless named") {
  // Checked on the plan alone: native rows run; the two slow schedules are absent at 1025 lanes
  // and present at 1024, with a note. (Running them here would take long; the names show it.)
  BenchOptions options;
  options.inputs = "heavy";
  options.programs = {"collatz"};
  options.batches = {1024, 1025};
  options.systems = {"native", "vulkan"};
  options.repeats = 1;
  options.repeat_budget_seconds = 0.001;
  options.print_table = false;
  BenchReport report;
  REQUIRE(ab::bench::run_suite(options, report));
  REQUIRE_MESSAGE(report.vulkan_note.empty(), report.vulkan_note);
  CHECK(find_row(report, "global-masked", 1024));
  CHECK(find_row(report, "local-workgroup", 1024));
  CHECK_FALSE(find_row(report, "global-masked", 1025));
  CHECK_FALSE(find_row(report, "local-workgroup", 1025));
  CHECK(find_row(report, "global-compacted", 1025));
  CHECK(find_row(report, "native", 1025));
  REQUIRE(report.notes.size() == 1);
  CHECK(report.notes[0].find("global-masked and local-workgroup") != std::string::npos);
  options.systems = {"native", "global-masked"};
  REQUIRE(ab::bench::run_suite(options, report));
  CHECK(find_row(report, "global-masked", 1025));
  CHECK(report.notes.empty());
}

TEST_CASE("bench: engine rows report their ratio to the glsl ceiling; baselines do not") {
  BenchOptions options = tiny_options();
  options.systems = {"vm", "glsl", "global-compacted"};
  BenchReport report;
  REQUIRE(ab::bench::run_suite(options, report));
  REQUIRE_MESSAGE(report.vulkan_note.empty(), report.vulkan_note);
  CHECK(report.all_ok());
  for (uint32_t lanes : {1u, 7u}) {
    const BenchRow* glsl = find_row(report, "glsl", lanes);
    const BenchRow* engine = find_row(report, "global-compacted", lanes);
    REQUIRE(glsl);
    REQUIRE(engine);
    REQUIRE(engine->vs_glsl.has_value());
    CHECK(*engine->vs_glsl ==
          doctest::Approx(glsl->median_seconds / engine->median_seconds).epsilon(1e-9));
    CHECK_FALSE(glsl->vs_glsl.has_value());
    CHECK_FALSE(find_row(report, "vm", lanes)->vs_glsl.has_value());
    CHECK(glsl->vs_vm.has_value());
  }
  CHECK(ab::bench::format_table(report).find("x glsl") != std::string::npos);
}

TEST_CASE("bench: system names expand to the documented sets") {
  auto names = [](const std::vector<std::string>& asked) {
    auto selected = ab::bench::select_systems(asked);
    REQUIRE(selected);
    std::vector<std::string> out;
    for (const auto& s : *selected)
      out.push_back(s.name);
    return out;
  };
  CHECK(names({"all"}) == std::vector<std::string>{"vm", "native", "glsl", "global-masked",
                                                   "global-compacted", "local-subgroup",
                                                   "local-workgroup", "local-lane"});
  CHECK(names({}) == names({"all"}));
  CHECK(names({"vulkan"}) == std::vector<std::string>{"global-masked", "global-compacted",
                                                      "local-subgroup", "local-workgroup",
                                                      "local-lane"});
  CHECK(names({"glsl", "vm"}) == std::vector<std::string>{"vm", "glsl"});
  auto unknown = ab::bench::select_systems({"glsl", "gl5l"});
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().rfind("unknown system 'gl5l' (known: ", 0) == 0);
}

TEST_CASE("bench: compare_with_reference is exact on the CPU and tolerant on float words only") {
  ab::RunResult expected, actual;
  expected.faulted = actual.faulted = {0, 0};
  expected.outputs = {std::bit_cast<uint32_t>(1.0f), std::bit_cast<uint32_t>(2.0f)};
  actual.outputs = {std::bit_cast<uint32_t>(1.00001f), std::bit_cast<uint32_t>(2.0f)};
  using ab::bench::compare_with_reference;
  CHECK(compare_with_reference(expected, expected, 1, true, false));
  CHECK_FALSE(compare_with_reference(expected, actual, 1, true, false));  // exact: differs
  CHECK(compare_with_reference(expected, actual, 1, true, true));         // within 1e-4
  actual.outputs[0] = std::bit_cast<uint32_t>(1.01f);
  CHECK(compare_with_reference(expected, actual, 1, true, true).error().find("lane 0") == 0);
  // Integer words are never given a tolerance; a fault where none was expected is a mismatch.
  expected.outputs = {5, 6};
  actual.outputs = {5, 6};
  actual.faulted = {0, 1};
  CHECK(compare_with_reference(expected, actual, 1, false, true).error() ==
        "lane 1: expected no fault, got a fault");
}

TEST_CASE("bench: bad options are refused with exit code 2") {
  BenchOptions options = tiny_options();
  options.programs = {"no_such_program"};
  CHECK(ab::bench::run_bench(options) == 2);
  options = tiny_options();
  options.systems = {"warp-drive"};
  CHECK(ab::bench::run_bench(options) == 2);
  options.systems = {"glsl", "GLSL"};  // names are case-sensitive
  CHECK(ab::bench::run_bench(options) == 2);
  options = tiny_options();
  options.batches = {0};
  CHECK(ab::bench::run_bench(options) == 2);
  options = tiny_options();
  options.inputs = "medium";
  BenchReport report;
  CHECK(ab::bench::run_suite(options, report).error() ==
        "--inputs must be light, heavy or both, not "
        "'medium'");
  CHECK(ab::bench::run_bench(options) == 2);
  options.inputs = "Heavy";  // case-sensitive, like the other names
  CHECK(ab::bench::run_bench(options) == 2);
}

TEST_CASE("bench: the chart is a PNG drawn by gnuplot") {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    MESSAGE("gnuplot not installed (scripts/setup.sh installs gnuplot-nox): chart not tested");
    return;
  }
  BenchReport report;
  REQUIRE(ab::bench::run_suite(tiny_options(), report));
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "autobatch_bench_test.png";
  std::filesystem::remove(path);
  REQUIRE(ab::bench::write_chart(report, path.string()));
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  CHECK(std::string(magic + 1, 3) == "PNG");
  CHECK(std::filesystem::file_size(path) > 1000);
  std::filesystem::remove(path);
}
