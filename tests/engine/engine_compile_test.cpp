// Compile time and sizes (issue 10; docs/performance.md, "Compile time"): a program with a
// thousand functions compiles (split into parts of bounded size) and equals the interpreter; a
// split program gives the interpreter's results on every schedule; a value or batch too large for
// the device is refused at once, before any code is generated.
#include <set>
#include <string>

#include "codegen/kernel_split.h"
#include "engine/device/shader_compiler.h"
#include "engine/run/program_impl.h"
#include "support/engine_test_support.h"
#include "support/program_gen.h"

namespace ab::enginetest {
namespace {

Batch counts(uint32_t lanes, uint32_t modulo) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < lanes; ++lane)
    batch.inputs[0].push_back(lane % modulo);
  return batch;
}

void check_equals_interp(const Loaded& loaded, const Batch& batch, const RunOptions& options,
                         const VulkanOptions& vulkan, size_t min_parts) {
  const RunResult expected = run_interp(loaded.program, loaded.entry, batch, options);
  auto program = VulkanProgram::compile(context(), loaded.lowered, vulkan);
  REQUIRE_MESSAGE(program.ok(), program.error());
  CHECK((*program)->parts() >= min_parts);
  auto run = VulkanRun::create(*program, batch, options, vulkan);
  REQUIRE_MESSAGE(run.ok(), run.error());
  size_t calls = 0, last_total = 0;
  auto prepared = (*run)->prepare([&](size_t done, size_t total) {
    CHECK(done == calls);  // called before each kernel and once at the end
    ++calls;
    last_total = total;
  });
  REQUIRE_MESSAGE(prepared.ok(), prepared.error());
  CHECK(calls == last_total + 1);
  const double compiled = (*program)->compile_seconds();
  auto status = (*run)->run();
  REQUIRE_MESSAGE(status.ok(), status.error());
  CHECK((*program)->compile_seconds() == compiled);  // prepare() compiled everything
  auto result = (*run)->result();
  REQUIRE_MESSAGE(result.ok(), result.error());
  CHECK((*run)->stats().parts >= min_parts);
  // Each kernel built is listed once, with its times, however many threads built them.
  const std::vector<KernelCompile>& kernels = (*run)->stats().kernels;
  CHECK(kernels.size() >= (*run)->stats().parts);
  std::set<std::string> names;
  for (const KernelCompile& k : kernels) {
    CAPTURE(k.kernel);
    CHECK(names.insert(k.kernel).second);
    CHECK((k.source_seconds >= 0 && k.create_seconds >= 0 && k.first_dispatch_seconds >= 0));
  }
  CHECK(compare_results(loaded.lowered, expected, *result) == "");
  check_no_validation_messages();
}

// The issue's program: a chain main -> f0 -> ... -> f999. It compiles in ~10 s of CPU here
// (lavapipe, docs/performance.md), so the test runs the full size.
TEST_CASE("engine: a chain of 1000 functions runs on the default schedule and equals interp") {
  // Calls stay calls: each function has one call site, so inline_calls would make the chain one
  // function in one part, and the test is about a program of many functions in many parts.
  FrontendOptions frontend;
  frontend.inline_calls = false;
  auto loaded = load_source(testing::call_chain_program(1000), "main", "chain1000.ab", frontend);
  check_equals_interp(*loaded, counts(40, 40), {}, {}, 2);
}

// A mutually recursive ring, split into many small parts (a tiny max_part_cost), so that lanes
// recurse through every part and back on each schedule, with faults: lanes deeper than the
// stack overflow, and a step budget that some lanes exhaust.
TEST_CASE("engine: a split mutually recursive ring equals interp on every schedule") {
  auto loaded = load_source(testing::call_ring_program(24), "main", "ring24.ab");
  RunOptions options;
  options.stack_depth = 40;
  options.max_steps = 150;
  for (const Config& c : configs()) {
    CAPTURE(c.name);
    VulkanOptions vulkan = options_for(c);
    vulkan.max_part_cost = 200;
    vulkan.compile_threads = 3;  // the parts' kernels built at once
    check_equals_interp(*loaded, counts(70, 70), options, vulkan, 4);
    // One lane: the global schedule runs its fused kernel, split the same way.
    vulkan.compile_threads = 1;
    check_equals_interp(*loaded, counts(1, 1), options, vulkan, 4);
  }
}

// Random programs (loops, recursion, arrays, structs, faults, random draws) split into parts of a
// few blocks each: every schedule equals the interpreter, and every module passes spirv-val.
TEST_CASE("engine: split random programs equal interp on every schedule") {
  // The first three generated programs large enough to split into more than two parts.
  int tested = 0;
  for (uint64_t seed = 1; seed <= 60 && tested < 3; ++seed) {
    CAPTURE(seed);
    const std::string source = testing::generate_program(seed);
    auto loaded = load_source(source, "main", fmt::format("gen{}.ab", seed));
    RunOptions options = random_program_options(seed);
    Batch batch;
    batch.lanes = 50;
    batch.inputs.resize(2);
    for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
      batch.inputs[0].push_back(static_cast<uint32_t>(testing::lane_hash(seed, lane) % 64));
      batch.inputs[1].push_back(static_cast<uint32_t>(testing::lane_hash(seed + 99, lane)));
    }
    const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
    VulkanOptions split;
    split.max_part_cost = 300;
    auto program = VulkanProgram::compile(context(), loaded->lowered, split);
    REQUIRE_MESSAGE(program.ok(), program.error());
    if ((*program)->parts() <= 2) continue;
    ++tested;
    for (const Config& c : configs()) {
      CAPTURE(c.name);
      VulkanOptions vulkan = options_for(c);
      vulkan.max_part_cost = split.max_part_cost;
      auto run = VulkanRun::create(*program, batch, options, vulkan);
      REQUIRE_MESSAGE(run.ok(), run.error());
      REQUIRE((*run)->run().ok());
      auto result = (*run)->result();
      REQUIRE_MESSAGE(result.ok(), result.error());
      CHECK_MESSAGE(compare_results(loaded->lowered, expected, *result) == "", source);
    }
    auto modules = (*program)->all_spirv();
    REQUIRE_MESSAGE(modules.ok(), modules.error());
    for (const auto& m : *modules)
      CHECK(validate_spirv(m).empty());
    check_no_validation_messages();
  }
  CHECK(tested == 3);
}

// A recursion whose cycle runs through a function at the far end of the program (its blocks
// last), with cold functions between: the hot split puts the recursion and its callee into one
// part of two block ranges. Every schedule equals the interpreter, with a step budget some lanes
// exhaust, and the sources pass spirv-val.
TEST_CASE("engine: a split whose parts are several block ranges equals interp on every schedule") {
  std::string source = R"(
fn hot(n: int, acc: int) -> int {
  if n <= 0 { return acc; }
  return hot(n - 1, step(acc, n));
}
)";
  for (int f = 0; f < 10; ++f) {
    source += fmt::format("fn cold{}(x: int) -> int {{\n  var y = x;\n", f);
    for (int i = 0; i < 10; ++i)
      source += fmt::format("  if y % {} == 0 {{ y = y / 2 + {}; }} else {{ y = y * 3 + 1; }}\n",
                            i + 2, f);
    source += "  return y;\n}\n";
  }
  source += "fn main(n: int) -> int {\n  var x = hot(n % 23, n);\n";
  for (int f = 0; f < 10; ++f)
    source += fmt::format("  x = cold{}(x % 1000);\n", f);
  source += R"(  return x;
}
fn step(acc: int, n: int) -> int {
  var a = acc * 3 + n;
  if a % 7 == 0 { a = a + 1; } else { a = a - 1; }
  return a % 100003;
}
)";
  // Calls stay calls: each cold function has one call site, and inline_calls would fold them
  // into main; the test is about a split of many functions' blocks.
  FrontendOptions frontend;
  frontend.inline_calls = false;
  auto loaded = load_source(source, "main", "far_cycle.ab", frontend);
  // The smallest cap at which some part of the register kernels holds several ranges.
  uint32_t cap = 0;
  for (uint32_t c = 100; c < 2000 && cap == 0; c += 20) {
    const KernelSplit s = split_kernels(loaded->lowered, c);
    for (const BlockSet& part : s.register_parts)
      if (s.register_parts.size() > 2 && part.ranges.size() > 1) cap = c;
  }
  REQUIRE(cap > 0);
  RunOptions options;
  options.max_steps = 400;
  for (const Config& c : configs()) {
    CAPTURE(c.name);
    VulkanOptions vulkan = options_for(c);
    vulkan.max_part_cost = cap;
    check_equals_interp(*loaded, counts(70, 70), options, vulkan, 3);
  }
  VulkanOptions vulkan;
  vulkan.max_part_cost = cap;
  auto program = VulkanProgram::compile(context(), loaded->lowered, vulkan);
  REQUIRE_MESSAGE(program.ok(), program.error());
  auto modules = (*program)->all_spirv();
  REQUIRE_MESSAGE(modules.ok(), modules.error());
  for (const auto& m : *modules)
    CHECK(validate_spirv(m).empty());
}

// `var a: int[16777216]` is the largest value the language allows (64 MiB). It lives across the
// loop, so it is in the lane state: 768 MiB for 12 lanes, more than the 4 bindings ("banks") of
// lavapipe's maxStorageBufferRange (128 MiB) hold. One lane fits the buffer but not a kernel's
// private memory.
// Both are refused by VulkanRun::create before any code is generated (they used to take 30 and
// 97 s); the test asserts the messages, not the time.
TEST_CASE("engine: the largest legal array is refused at once with a clear message") {
  auto loaded = load_source(R"(
fn main(n: int) -> int {
    var a: int[16777216];
    var i = 0;
    while i < n {
        a[i] = i * 2;
        i += 1;
    }
    return a[n / 2];
}
)");
  auto program = VulkanProgram::compile(context(), loaded->lowered);
  REQUIRE_MESSAGE(program.ok(), program.error());
  const uint64_t range = context()->device().max_storage_buffer_range;
  REQUIRE(range * 4 < (uint64_t{768} << 20));  // true of lavapipe and of most GPUs
  auto twelve = VulkanRun::create(*program, counts(12, 4), {});
  REQUIRE_FALSE(twelve.ok());
  CHECK(twelve.error().find("the lane state needs 768 MiB") != std::string::npos);
  CHECK(twelve.error().find("maxStorageBufferRange") != std::string::npos);
  auto one = VulkanRun::create(*program, counts(1, 1), {});
  REQUIRE_FALSE(one.ok());
  CHECK(one.error().find("'main.a' holds 16777216 words (64 MiB) per lane") != std::string::npos);
  CHECK(one.error().find("--backend vm") != std::string::npos);
  // Nothing else generates its code either.
  CHECK((*program)->glsl().empty());
  CHECK_FALSE((*program)->all_spirv().ok());
  // run_vulkan (the CLI's path) says the same.
  auto direct = run_vulkan(loaded->lowered, counts(12, 4), {}, {}, nullptr, context());
  REQUIRE_FALSE(direct.ok());
  CHECK(direct.error().find("the lane state needs 768 MiB") != std::string::npos);
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
