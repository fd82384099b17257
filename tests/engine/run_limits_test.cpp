// A run at the limits of the host, through the public API: a batch too big for memory, memory
// running out while lanes recurse, worker threads the system will not start, more threads than
// cores, and a stack depth of 0. Each gives an Error or a correct result; none throws, aborts or
// hangs. The limits are set in forked children (support/child_process.h).
#include <doctest/doctest.h>

#include <thread>

#include "autobatch/autobatch.h"
#include "support/child_process.h"
#include "support/compiled.h"
#include "support/temp_dir.h"

namespace ab {
namespace {

using testing::compiled;
using testing::run_in_child;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// No inputs, so a batch of any size is cheap to describe; 256 bytes of output per lane.
const char* kNoInputs = "fn main() -> int[64] { return [7; 64]; }\n";

const char* kCollatz = R"(
fn collatz_steps(n: int) -> int {
    var x = n;
    var steps = 0;
    while x != 1 {
        if x % 2 == 0 { x = x / 2; } else { x = 3 * x + 1; }
        steps += 1;
    }
    return steps;
}
fn main(n: int) -> int { return collatz_steps(n); }
)";

Batch collatz_batch(uint32_t lanes) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs = {{}};
  for (uint32_t l = 0; l < lanes; ++l)
    batch.inputs[0].push_back(l % 5000 + 1);
  return batch;
}

TEST_CASE("run limits: a batch too big for host memory is refused up front, naming the size") {
  auto module = compiled(kNoInputs);
  Batch huge;
  huge.lanes = 4'000'000'000u;  // a terabyte of outputs alone
  for (CpuBackend backend : {CpuBackend::Interpreter, CpuBackend::Vm}) {
    auto result = module->run_cpu(huge, {}, backend);
    REQUIRE_FALSE(result.ok());
    CHECK(contains(result.error(), "the batch needs "));
    CHECK(contains(result.error(), "GiB of host memory"));
    CHECK(contains(result.error(), "4000000000 lanes"));
  }
  auto session = VmSession::create(module, huge);
  REQUIRE_FALSE(session.ok());
  CHECK(contains(session.error(), "the batch needs "));
  testing::TempDir dir("run_limits");
  Status written = write_trace(dir.file("huge.abtrace"), *module, huge);
  REQUIRE_FALSE(written.ok());
  CHECK(contains(written.error(), "the batch needs "));
}

TEST_CASE("run limits: memory running out as lanes recurse is an Error, not an abort") {
  // Each frame of `deep` keeps 16,384 words alive across its call: 100,000 frames need 6.4 GB,
  // far more than the child's address space allows; the batch itself fits easily.
  auto module = compiled(R"(
fn deep(n: int) -> int {
    var big = [n; 16384];
    if n == 0 { return 0; }
    let below = deep(n - 1);
    return below + big[n % 16384];
}
fn main(n: int) -> int { return deep(n); }
)");
  Batch batch;
  batch.lanes = 2;
  batch.inputs = {{100000, 3}};
  RunOptions options;
  options.stack_depth = 200000;
  for (CpuBackend backend : {CpuBackend::Interpreter, CpuBackend::Vm}) {
    CAPTURE(static_cast<int>(backend));
    const auto outcome = run_in_child([&] {
      if (!testing::limit_address_space(size_t{128} << 20)) return 2;
      auto result = module->run_cpu(batch, options, backend);
      if (result.ok()) return 3;
      return contains(result.error(), "out of host memory") ? 0 : 4;
    });
    CHECK_MESSAGE(outcome.exited, outcome.describe());
    CHECK(outcome.code == 0);
  }
}

TEST_CASE("run limits: a stack depth of 0 is refused with the same message on the CPU backends") {
  auto module = compiled(kCollatz);
  RunOptions options;
  options.stack_depth = 0;
  const std::string message =
      "the stack depth must be at least 1 (it counts the entry function's frame)";
  for (CpuBackend backend : {CpuBackend::Interpreter, CpuBackend::Vm}) {
    auto result = module->run_cpu(collatz_batch(4), options, backend);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error() == message);
  }
  auto session = VmSession::create(module, collatz_batch(4), options);
  REQUIRE_FALSE(session.ok());
  CHECK(session.error() == message);
  options.stack_depth = 1;  // the entry function's frame alone: collatz needs no more
  CHECK(module->run_cpu(collatz_batch(4), options, CpuBackend::Interpreter).ok());
  CHECK(module->run_cpu(collatz_batch(4), options, CpuBackend::Vm).ok());
}

TEST_CASE("run limits: the VM runs on the workers that started when the system refuses some") {
  auto module = compiled(kCollatz);
  const Batch batch = collatz_batch(100000);  // enough per step for the workers (vm.cpp)
  auto expected = module->run_cpu(batch, {}, CpuBackend::Interpreter);
  REQUIRE(expected.ok());
  const unsigned cores = usable_cores();
  const auto outcome = run_in_child([&] {
    if (!testing::refuse_new_threads()) return 2;
    RunOptions options;
    options.threads = 64;
    auto result = module->run_cpu(batch, options, CpuBackend::Vm);
    if (!result.ok()) return 3;
    if (result->outputs != expected->outputs) return 4;
    if (result->stats.threads != 1) return 5;
    if (result->stats.threads_refused != cores - 1) return 6;  // asked for: the cores
    return 0;
  });
  CHECK_MESSAGE(outcome.exited, outcome.describe());
  CHECK(outcome.code == 0);
}

TEST_CASE("run limits: more VM threads than cores run as many as the cores, same results") {
  auto module = compiled(kCollatz);
  const Batch batch = collatz_batch(100000);  // enough per step for the workers (vm.cpp)
  RunOptions one;
  one.threads = 1;
  auto single = module->run_cpu(batch, one, CpuBackend::Vm);
  REQUIRE(single.ok());
  CHECK(single->stats.threads == 1);
  RunOptions many;
  many.threads = 1024;
  auto crowded = module->run_cpu(batch, many, CpuBackend::Vm);
  REQUIRE(crowded.ok());
  CHECK(crowded->outputs == single->outputs);
  CHECK(crowded->stats.steps == single->stats.steps);
  CHECK(crowded->stats.threads == usable_cores());
  CHECK(crowded->stats.threads_refused == 0);
}

}  // namespace
}  // namespace ab
