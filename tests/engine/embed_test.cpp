// The embedding API (docs/embedding.md): Module, a context on a host's device, runs recorded into
// the host's command buffers, their buffers on the device, restarts fed from GPU regions, and the
// threading rules. The host here is the shared validation-enabled test context: its instance,
// device and queue are handed to create_external as an app would hand its own, so its validation
// layer checks everything the external context does. Results are compared with the interpreter.
#include <doctest/doctest.h>

#include <thread>

#include "autobatch/autobatch.h"
#include "core/module_impl.h"
#include "cpu/vm.h"
#include "engine/device/buffers.h"
#include "engine/device/context_impl.h"
#include "support/engine_test_support.h"

namespace ab {
namespace {

using enginetest::check_no_validation_messages;
using enginetest::context;

const char* kCollatzChain = R"(
fn collatz_steps(n: int) -> int {
    var x = n;
    var steps = 0;
    while x != 1 {
        if x % 2 == 0 { x = x / 2; } else { x = 3 * x + 1; }
        steps += 1;
    }
    return steps;
}
fn depth(n: int) -> int {
    if n <= 0 { return 0; }
    return 1 + depth(n / 3);
}
fn main(n: int) -> int {
    return (n * 7 + collatz_steps(n % 997 + 1) + depth(n)) % 100000;
}
)";

std::shared_ptr<const Module> compile_module(const std::string& source) {
  auto module = Module::compile(source, {"embed.ab", "main"});
  REQUIRE_MESSAGE(module.ok(), module.error());
  return *module;
}

Batch int_batch(uint32_t lanes, uint32_t salt = 0) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(1);
  for (uint32_t l = 0; l < lanes; ++l)
    batch.inputs[0].push_back((l * 2654435761u + salt) % 50000);
  return batch;
}

// The host's side: its own context's device, queue and a command pool of its own.
struct Host {
  std::shared_ptr<VulkanContext> owner = context();
  VulkanContext::Impl& ctx = owner->impl();
  VkCommandPool pool = VK_NULL_HANDLE;
  Host() {
    VkCommandPoolCreateInfo pci{};
    pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pci.queueFamilyIndex = ctx.queue_family;
    REQUIRE(ctx.api.vkCreateCommandPool(ctx.device, &pci, nullptr, &pool) == VK_SUCCESS);
  }
  ~Host() {
    ctx.api.vkQueueWaitIdle(ctx.queue);
    ctx.api.vkDestroyCommandPool(ctx.device, pool, nullptr);
  }
  ExternalDevice device() const {
    ExternalDevice d;
    d.get_instance_proc_addr = ctx.api.vkGetInstanceProcAddr;
    d.instance = ctx.instance;
    d.physical_device = ctx.physical;
    d.device = ctx.device;
    d.queue_family = ctx.queue_family;
    d.queue = ctx.queue;
    return d;
  }
  std::shared_ptr<VulkanContext> external() const {
    auto created = VulkanContext::create_external(device());
    REQUIRE_MESSAGE(created.ok(), created.error());
    return *created;
  }
  // Records with `record` into a command buffer of the host's pool, submits it with the host's
  // own fence and waits for that fence.
  template <class F>
  void submit(F record) {
    VkCommandBufferAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    REQUIRE(ctx.api.vkAllocateCommandBuffers(ctx.device, &ai, &cmd) == VK_SUCCESS);
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    ctx.api.vkBeginCommandBuffer(cmd, &bi);
    record(cmd);
    ctx.api.vkEndCommandBuffer(cmd);
    VkFenceCreateInfo fci{};
    fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    VkFence fence = VK_NULL_HANDLE;
    ctx.api.vkCreateFence(ctx.device, &fci, nullptr, &fence);
    VkSubmitInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    {
      std::lock_guard lock(ctx.submit_mutex);  // the test shares the queue with the owner
      REQUIRE(ctx.api.vkQueueSubmit(ctx.queue, 1, &si, fence) == VK_SUCCESS);
    }
    REQUIRE(ctx.api.vkWaitForFences(ctx.device, 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS);
    ctx.api.vkDestroyFence(ctx.device, fence, nullptr);
    ctx.api.vkFreeCommandBuffers(ctx.device, pool, 1, &cmd);
  }
  // Frames of `rounds` rounds each until poll() says the run finished; the frame count.
  int run_in_frames(VulkanRun& run, uint32_t rounds, int limit = 100000) {
    for (int frame = 1; frame <= limit; ++frame) {
      submit([&](VkCommandBuffer cmd) {
        auto recorded = run.record(cmd, rounds);
        REQUIRE_MESSAGE(recorded.ok(), recorded.error());
      });
      auto done = run.poll();
      REQUIRE_MESSAGE(done.ok(), done.error());
      if (*done) return frame;
    }
    FAIL("the run did not finish");
    return limit;
  }
};

// Empty when `actual` equals the interpreter's `expected` (outputs, faults and error records).
void expect_same(const Module& module, const RunResult& actual, const RunResult& expected) {
  const std::string difference =
      enginetest::compare_results(module.impl().lowered, expected, actual);
  CHECK_MESSAGE(difference.empty(), difference);
}

RunResult interp(const Module& module, const Batch& batch, const RunOptions& options = {}) {
  auto result = module.run_cpu(batch, options, CpuBackend::Interpreter);
  REQUIRE_MESSAGE(result.ok(), result.error());
  return std::move(*result);
}

std::unique_ptr<VulkanRun> make_run(std::shared_ptr<VulkanContext> ctx,
                                    std::shared_ptr<const Module> module, const Batch& batch,
                                    const RunOptions& options = {},
                                    const VulkanOptions& vulkan = {}) {
  auto program = VulkanProgram::compile(ctx, module, vulkan);
  REQUIRE_MESSAGE(program.ok(), program.error());
  auto run = VulkanRun::create(*program, batch, options, vulkan);
  REQUIRE_MESSAGE(run.ok(), run.error());
  auto prepared = (*run)->prepare();
  REQUIRE_MESSAGE(prepared.ok(), prepared.error());
  return std::move(*run);
}

TEST_CASE("embed: a Module reports compile errors as values with file:line:col") {
  std::vector<SourceDiagnostic> diagnostics;
  auto bad = Module::compile("fn main(n: int) -> int {\n  return m;\n}\n", {"bad.ab", "main"},
                             &diagnostics);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().rfind("bad.ab:2:10: error:", 0) == 0);
  REQUIRE(diagnostics.size() == 1);
  CHECK(diagnostics[0].file == "bad.ab");
  CHECK(diagnostics[0].line == 2);
  CHECK(diagnostics[0].col == 10);
  CHECK(diagnostics[0].message.find("'m'") != std::string::npos);

  auto no_entry = Module::compile("fn f() -> int { return 1; }", {"x.ab", "main"});
  REQUIRE_FALSE(no_entry.ok());
  CHECK(no_entry.error() ==
        "no function 'main' in 'x.ab' to use as the entry; its functions are: f");

  auto missing = Module::load("/nonexistent/dir/p.ab");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error() == "cannot read '/nonexistent/dir/p.ab': No such file or directory");
}

TEST_CASE("embed: a Module describes its interface and runs on both CPU backends") {
  auto module = compile_module(R"(
struct Agent { x: float, y: float, mood: int }
uniform scale: float[2];
fn main(a: Agent, steps: int) -> Agent {
    var b = a;
    var i = 0;
    while i < steps { b.x = b.x * scale[0]; b.mood += 1; i += 1; }
    return b;
}
)");
  REQUIRE(module->inputs().size() == 2);
  CHECK(module->inputs()[0].name == "a");
  CHECK(module->inputs()[0].type == "Agent");
  CHECK(module->inputs()[0].words == 3);
  CHECK(module->inputs()[1].type == "int");
  CHECK(module->output().words == 3);
  REQUIRE(module->uniforms().size() == 1);
  CHECK(module->uniforms()[0].type == "float[2]");
  CHECK(module->uniforms()[0].words == 2);
  CHECK(module->emit_record().words == 0);

  Batch batch;
  batch.lanes = 3;
  CHECK_FALSE(module->check(batch).ok());  // no inputs given
  const float two = 2.0f, one = 1.0f, half = 0.5f;
  auto bits = [](float f) {
    uint32_t w;
    std::memcpy(&w, &f, 4);
    return w;
  };
  batch.inputs = {{bits(one), bits(one), 0, bits(half), 0, 5, bits(two), bits(two), 1}, {0, 1, 3}};
  batch.uniforms = {{bits(two), bits(one)}};
  REQUIRE(module->check(batch).ok());
  auto vm = module->run_cpu(batch, {}, CpuBackend::Vm);
  auto in = module->run_cpu(batch, {}, CpuBackend::Interpreter);
  REQUIRE(vm.ok());
  REQUIRE(in.ok());
  CHECK(vm->outputs == in->outputs);
  // lane 2: x = 2 * 2^3, mood = 1 + 3
  CHECK(in->outputs[6] == bits(16.0f));
  CHECK(in->outputs[8] == 4u);
}

TEST_CASE("embed: a context on the host's device runs programs like the engine's own") {
  Host host;
  auto external = host.external();
  CHECK(external->external());
  CHECK_FALSE(context()->external());
  CHECK(external->device().name == context()->device().name);
  auto module = compile_module(kCollatzChain);
  const Batch batch = int_batch(300);
  auto program = VulkanProgram::compile(external, module);
  REQUIRE(program.ok());
  auto gpu = run_vulkan((*program)->program(), batch, {}, {}, nullptr, external);
  REQUIRE_MESSAGE(gpu.ok(), gpu.error());
  expect_same(*module, *gpu, interp(*module, batch));
  external.reset();  // the host's device goes on
  auto again = run_vulkan((*program)->program(), batch, {}, {}, nullptr, context());
  REQUIRE(again.ok());
  check_no_validation_messages();
}

TEST_CASE("embed: create_external refuses incomplete devices and queue families without compute") {
  Host host;
  ExternalDevice device = host.device();
  device.queue = VK_NULL_HANDLE;
  auto missing = VulkanContext::create_external(device);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().find("ExternalDevice needs") == 0);
  device = host.device();
  device.queue_family = 999;
  auto family = VulkanContext::create_external(device);
  REQUIRE_FALSE(family.ok());
  CHECK(family.error().find("queue family 999") == 0);
  CHECK(family.error().find("does not exist") != std::string::npos);
  check_no_validation_messages();
}

TEST_CASE("embed: a run recorded into the host's command buffers finishes on the GPU's word") {
  Host host;
  auto module = compile_module(kCollatzChain);
  const Batch batch = int_batch(1000);
  VulkanOptions vulkan;
  vulkan.local_steps_per_dispatch = 64;  // many rounds, so frames matter
  auto run = make_run(host.external(), module, batch, {}, vulkan);
  CHECK_FALSE(run->done());
  const int frames = host.run_in_frames(*run, 2);
  CHECK(frames > 1);  // 64 steps per round cannot finish collatz in one frame
  CHECK(run->done());
  CHECK(run->stats().group_steps > 0);
  auto gpu = run->result();
  REQUIRE(gpu.ok());
  expect_same(*module, *gpu, interp(*module, batch));
  // Rounds recorded after the end run no group: nothing changes.
  const uint64_t steps = run->stats().group_steps;
  CHECK(host.run_in_frames(*run, 3) == 1);
  CHECK(run->stats().group_steps == steps);
  auto after = run->result();
  REQUIRE(after.ok());
  CHECK(after->outputs == gpu->outputs);
  check_no_validation_messages();
}

TEST_CASE("embed: poll, run and result follow the run's states, never a stale readback") {
  Host host;
  auto module = compile_module(kCollatzChain);
  Batch batch = int_batch(300, 5);
  auto run = make_run(host.external(), module, batch);
  auto contains = [](const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
  };

  // Created: no round has been recorded, so poll() has nothing to read and there is no result.
  auto early = run->poll();
  REQUIRE_FALSE(early.ok());
  CHECK(contains(early.error(), "poll: nothing has been recorded yet"));
  CHECK_FALSE(run->done());
  auto none = run->result();
  REQUIRE_FALSE(none.ok());
  CHECK(contains(none.error(), "result: the run has not started"));
  REQUIRE(run->run().ok());  // the refused poll changed nothing: run() still runs the batch
  auto ran = run->result();
  REQUIRE_MESSAGE(ran.ok(), ran.error());
  expect_same(*module, *ran, interp(*module, batch));
  auto after_run = run->poll();  // nothing recorded since run(): what run() knew
  REQUIRE(after_run.ok());
  CHECK(*after_run);

  // Finished, then a command buffer holding only a restart: the readback still says finished,
  // but every lane waits at the entry again.
  host.submit([&](VkCommandBuffer cmd) {
    REQUIRE(run->record_restart(cmd, {run->buffers().output}).ok());
  });
  auto restarted = run->poll();
  REQUIRE_MESSAGE(restarted.ok(), restarted.error());
  CHECK_FALSE(*restarted);
  CHECK_FALSE(run->done());
  CHECK(run->stats().group_steps == 0);
  auto stale = run->result();
  REQUIRE_FALSE(stale.ok());
  CHECK(contains(stale.error(), "restarted"));
  REQUIRE(run->run().ok());  // runs the restarted batch: the first run's outputs as inputs
  batch.inputs[0] = ran->outputs;
  auto chained = run->result();
  REQUIRE_MESSAGE(chained.ok(), chained.error());
  expect_same(*module, *chained, interp(*module, batch));

  // Recorded: rounds in a command buffer are known only after poll().
  host.submit([&](VkCommandBuffer cmd) {
    REQUIRE(run->record_restart(cmd).ok());
    REQUIRE(run->record(cmd, 1).ok());
  });
  auto unpolled = run->result();
  REQUIRE_FALSE(unpolled.ok());
  CHECK(contains(unpolled.error(), "poll()"));
  CHECK_FALSE(run->result_so_far().ok());
  host.run_in_frames(*run, 4);
  auto polled = run->result();
  REQUIRE_MESSAGE(polled.ok(), polled.error());
  expect_same(*module, *polled, interp(*module, int_batch(300, 5)));
  check_no_validation_messages();
}

TEST_CASE("embed: result_so_far shows finished lanes' outputs and faults before the end") {
  auto module = compile_module(R"(
fn main(n: int) -> int {
    if n == 3 { return 10 / (n - 3); }
    if n < 2 { return n * 10 + 1; }
    var i = 0;
    while i < n { i += 1; }
    return i;
}
)");
  Batch batch;
  batch.lanes = 8;
  batch.inputs = {{0, 3, 50, 1, 60, 2, 70, 0}};
  VulkanOptions vulkan;
  vulkan.schedule = Schedule::Global;
  vulkan.fuse_small_batches = false;
  auto run = make_run(context(), module, batch, {}, vulkan);
  auto steps = run->step(10);  // past the early returns and the fault, far from the loops' end
  REQUIRE(steps.ok());
  REQUIRE_FALSE(*steps);
  CHECK_FALSE(run->result().ok());
  auto partial = run->result_so_far();
  REQUIRE_MESSAGE(partial.ok(), partial.error());
  REQUIRE(partial->errors.size() == 1);  // lane 1 divided by zero
  CHECK(partial->errors[0].lane == 1);
  auto lanes = run->lane_state();
  REQUIRE(lanes.ok());
  REQUIRE(run->run().ok());
  auto full = run->result();
  REQUIRE(full.ok());
  CHECK(full->outputs == interp(*module, batch).outputs);
  int finished = 0;
  for (uint32_t l = 0; l < batch.lanes; ++l) {
    const bool exited = lanes->pc[l] == static_cast<int32_t>(run->buffers().exit_pc);
    finished += exited;
    CHECK(partial->outputs[l] == (exited ? full->outputs[l] : 0u));
  }
  CHECK(finished >= 3);  // lanes 0, 3 and 7 (n < 2) returned early
  CHECK(lanes->pc[4] != static_cast<int32_t>(run->buffers().exit_pc));
  check_no_validation_messages();
}

TEST_CASE("embed: a stack depth of 0 is refused on Vulkan with the CPU backends' message") {
  auto module = compile_module(kCollatzChain);
  auto program = VulkanProgram::compile(context(), module);
  REQUIRE(program.ok());
  RunOptions options;
  options.stack_depth = 0;
  auto run = VulkanRun::create(*program, int_batch(8), options);
  REQUIRE_FALSE(run.ok());
  CHECK(run.error() == "the stack depth must be at least 1 (it counts the entry function's frame)");
  for (CpuBackend backend : {CpuBackend::Interpreter, CpuBackend::Vm}) {
    auto cpu = module->run_cpu(int_batch(8), options, backend);
    REQUIRE_FALSE(cpu.ok());
    CHECK(cpu.error() == run.error());
  }
  check_no_validation_messages();
}

TEST_CASE("embed: a split program is recorded part by part") {
  Host host;
  auto module = compile_module(kCollatzChain);
  VulkanOptions vulkan;
  vulkan.max_part_cost = 8;  // several parts
  const Batch batch = int_batch(200, 7);
  auto run = make_run(host.external(), module, batch, {}, vulkan);
  CHECK(run->stats().parts > 1);
  host.run_in_frames(*run, 1);
  auto gpu = run->result();
  REQUIRE(gpu.ok());
  expect_same(*module, *gpu, interp(*module, batch));
  check_no_validation_messages();
}

TEST_CASE("embed: recorded rounds run the product kernel after the parts (docs/engine.md)") {
  // Products with a uniform on each side, a lane's count of them: lanes wait at products in
  // different rounds, and each recorded round's product dispatches move them on.
  Host host;
  auto module = compile_module(R"(
uniform X: float[40][70];
fn main(w: float[70], n: int) -> float {
    var v = w;
    var s = 0.0;
    for i in 0..n { let z = X @ v; v = (z @ X) * 0.001; s = s + sum(z); }
    return s;
}
)");
  Batch batch;
  batch.lanes = 100;
  batch.inputs.resize(2);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    for (uint32_t i = 0; i < 70; ++i)
      batch.inputs[0].push_back(float_bits(static_cast<float>((lane + i) % 9) * 0.125f - 0.5f));
    batch.inputs[1].push_back(lane % 5);
  }
  std::vector<uint32_t> x;
  for (uint32_t i = 0; i < 40 * 70; ++i)
    x.push_back(float_bits(static_cast<float>(i % 13) * 0.0625f - 0.375f));
  batch.uniforms = {x};
  auto run = make_run(host.external(), module, batch);
  CHECK(host.run_in_frames(*run, 1) > 1);  // a round per product at least
  auto gpu = run->result();
  REQUIRE(gpu.ok());
  expect_same(*module, *gpu, interp(*module, batch));
  check_no_validation_messages();
}

TEST_CASE("embed: buffers() shows each lane's output where it lies, structure of arrays") {
  Host host;
  auto module = compile_module(R"(
struct P { a: int, b: int }
fn main(n: int) -> P {
    var s = 0;
    var i = 0;
    while i < n { s += i; i += 1; }
    return P { a: s, b: n * 3 };
}
)");
  const uint32_t lanes = 70;  // more than one workgroup
  Batch batch;
  batch.lanes = lanes;
  batch.inputs = {{}};
  for (uint32_t l = 0; l < lanes; ++l)
    batch.inputs[0].push_back(l % 13);
  auto run = make_run(host.external(), module, batch);
  host.run_in_frames(*run, 1);
  const RunBuffers buffers = run->buffers();
  CHECK(buffers.lanes == lanes);
  REQUIRE(buffers.output.words == 2);
  CHECK(buffers.output.size == 2ull * lanes * 4);
  REQUIRE(buffers.inputs.size() == 1);
  CHECK(buffers.inputs[0].words == 1);
  // The host copies the output region into a buffer of its own (on the GPU) and reads it.
  auto copy = DeviceBuffer::create(host.ctx, buffers.output.size, true);
  REQUIRE(copy.ok());
  host.submit([&](VkCommandBuffer cmd) {
    VkBufferCopy region{buffers.output.offset, 0, buffers.output.size};
    host.ctx.api.vkCmdCopyBuffer(cmd, buffers.output.buffer, copy->handle(), 1, &region);
  });
  const auto* words = static_cast<const uint32_t*>(copy->mapped());
  const RunResult expected = interp(*module, batch);
  for (uint32_t l = 0; l < lanes; ++l)
    for (uint32_t k = 0; k < 2; ++k)
      CHECK(words[k * lanes + l] == expected.outputs[l * 2 + k]);
  // Every lane has finished: its PC is the exit PC.
  auto pcs = DeviceBuffer::create(host.ctx, buffers.pc.size, true);
  REQUIRE(pcs.ok());
  host.submit([&](VkCommandBuffer cmd) {
    VkBufferCopy region{buffers.pc.offset, 0, buffers.pc.size};
    host.ctx.api.vkCmdCopyBuffer(cmd, buffers.pc.buffer, pcs->handle(), 1, &region);
  });
  const auto* pc = static_cast<const uint32_t*>(pcs->mapped());
  for (uint32_t l = 0; l < lanes; ++l)
    CHECK(pc[l] == buffers.exit_pc);
  check_no_validation_messages();
}

TEST_CASE("embed: restarts fed with the run's own outputs chain runs without the host") {
  Host host;
  auto module = compile_module(kCollatzChain);
  Batch batch = int_batch(500, 3);
  auto run = make_run(host.external(), module, batch);
  host.run_in_frames(*run, 4);
  for (int k = 0; k < 3; ++k) {
    batch.inputs[0] = interp(*module, batch).outputs;
    host.submit([&](VkCommandBuffer cmd) {
      auto restarted = run->record_restart(cmd, {run->buffers().output});
      REQUIRE_MESSAGE(restarted.ok(), restarted.error());
    });
    CHECK_FALSE(run->done());
    host.run_in_frames(*run, 4);
    auto gpu = run->result();
    REQUIRE(gpu.ok());
    expect_same(*module, *gpu, interp(*module, batch));
  }
  // A restart with no region runs the batch the run was created with again.
  host.submit([&](VkCommandBuffer cmd) { REQUIRE(run->record_restart(cmd).ok()); });
  host.run_in_frames(*run, 4);
  auto first = run->result();
  REQUIRE(first.ok());
  expect_same(*module, *first, interp(*module, int_batch(500, 3)));
  check_no_validation_messages();
}

TEST_CASE("embed: a restart with a new seed equals a fresh run with that seed") {
  Host host;
  auto module = compile_module(R"(
fn main(n: int) -> float {
    var s = 0.0;
    var i = 0;
    while i < n { s += uniform(); i += 1; }
    return s;
}
)");
  Batch batch;
  batch.lanes = 100;
  batch.inputs = {{}};
  for (uint32_t l = 0; l < batch.lanes; ++l)
    batch.inputs[0].push_back(l % 9);
  RunOptions options;
  options.seed = 1;
  auto run = make_run(host.external(), module, batch, options);
  host.run_in_frames(*run, 1);
  const uint64_t seed = 42;
  host.submit([&](VkCommandBuffer cmd) { REQUIRE(run->record_restart(cmd, {}, &seed).ok()); });
  host.run_in_frames(*run, 1);
  auto gpu = run->result();
  REQUIRE(gpu.ok());
  options.seed = seed;
  const RunResult expected = interp(*module, batch, options);
  CHECK(gpu->outputs == expected.outputs);
  options.seed = 1;
  CHECK(expected.outputs != interp(*module, batch, options).outputs);  // the seed matters
  check_no_validation_messages();
}

TEST_CASE("embed: recording refuses what it cannot do, with a reason") {
  Host host;
  auto module = compile_module(kCollatzChain);
  const Batch batch = int_batch(10);
  VulkanOptions global;
  global.schedule = Schedule::Global;
  auto run = make_run(host.external(), module, batch, {}, global);
  host.submit([&](VkCommandBuffer cmd) {
    auto refused = run->record(cmd, 1);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().find("only the local schedule") == 0);
  });
  auto emitting = compile_module("fn main(n: int) -> int { emit(n); return n; }");
  auto emit_run = make_run(host.external(), emitting, batch);
  host.submit([&](VkCommandBuffer cmd) {
    auto refused = emit_run->record(cmd, 1);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().find("a program that emits") == 0);
  });
  auto local = make_run(host.external(), module, batch);
  const RunBuffers own = local->buffers();
  host.submit([&](VkCommandBuffer cmd) {
    DeviceRegion short_region = own.output;
    short_region.size -= 4;
    auto wrong = local->record_restart(cmd, {short_region});
    REQUIRE_FALSE(wrong.ok());
    CHECK(wrong.error().find("input 0 needs a region of 40 bytes") != std::string::npos);
    auto overlap = local->record_restart(cmd, {own.inputs[0]});
    REQUIRE_FALSE(overlap.ok());
    CHECK(overlap.error().find("overlaps its own storage") != std::string::npos);
    auto too_many = local->record_restart(cmd, {own.output, own.output});
    REQUIRE_FALSE(too_many.ok());
  });
  check_no_validation_messages();
}

// A loop that lane l runs n_l times: the lowered blocks are the entry, the loop test, the body
// and the return, and the lane scope's sweep is the entry, then the loop {test, body} as one
// component, then the return.
const char* kCountedLoop = R"(
fn main(n: int) -> int {
    var i = 0;
    while i < n { i += 1; }
    return i;
}
)";

// The lane scope's utilization of kCountedLoop, counted by hand. The loop is rotated
// (rotate_loops): the entry ends in the test, the body in the test again. A lane's loop
// iterations (the subgroup's AB_ITERATION): one for the outer loop, in which it runs the entry,
// then the n of the body's component, the return running in the same iteration as the last of
// them (in the first, when n = 0): n + 1. A subgroup takes as many iterations as its busiest
// lane, and its slots are those iterations times its lanes in the batch.
double counted_loop_lane_utilization(const std::vector<uint32_t>& n, uint32_t subgroup) {
  uint64_t busy = 0, slots = 0;
  for (size_t first = 0; first < n.size(); first += subgroup) {
    const size_t end = std::min(n.size(), first + subgroup);
    uint64_t most = 0;
    for (size_t l = first; l < end; ++l) {
      busy += n[l] + 1;
      most = std::max<uint64_t>(most, n[l] + 1);
    }
    slots += most * (end - first);
  }
  return static_cast<double>(busy) / static_cast<double>(slots);
}

TEST_CASE("embed: VulkanStats reports the run's utilization as RunStats defines it") {
  auto module = compile_module(kCountedLoop);
  const uint32_t subgroup = context()->device().subgroup_size;
  REQUIRE(subgroup > 0);

  // n = 0 .. 22, in a scrambled order
  auto loop_batch = [](uint32_t lanes) {
    Batch batch = int_batch(lanes, 11);
    for (uint32_t& n : batch.inputs[0])
      n %= 23;
    return batch;
  };

  SUBCASE("global: the VM's figure, after every few steps") {
    const Batch batch = loop_batch(50);
    for (GlobalMode mode : {GlobalMode::Masked, GlobalMode::Compacted}) {
      VulkanOptions vulkan;
      vulkan.schedule = Schedule::Global;
      vulkan.global_mode = mode;
      vulkan.fuse_small_batches = false;
      auto run = make_run(context(), module, batch, {}, vulkan);
      VmRun vm(module->impl().lowered, batch, {});
      while (!vm.done()) {
        REQUIRE(run->step(3).ok());
        vm.step(3);
        CHECK(run->stats().utilization ==
              doctest::Approx(vm.result().stats.utilization).epsilon(1e-5));
      }
      CHECK(run->done());
      auto gpu = run->result();
      REQUIRE(gpu.ok());
      CHECK(gpu->stats.utilization == run->stats().utilization);
    }
  }

  SUBCASE("local subgroup and workgroup: one group's min-PC loop is the VM's schedule") {
    // A batch inside one group steps as the VM does with the min-PC rule: the group's steps are
    // the VM's steps and the lanes that ran a block are the VM's lane steps; the denominator
    // counts every lane of the group, also those past the batch's end.
    for (LocalScope scope : {LocalScope::Subgroup, LocalScope::Workgroup}) {
      const uint32_t width = scope == LocalScope::Subgroup ? subgroup : 64;
      const Batch small = loop_batch(std::min(width, 40u));
      VulkanOptions vulkan;
      vulkan.local_scope = scope;
      auto run = make_run(context(), module, small, {}, vulkan);
      REQUIRE(run->run().ok());
      const RunStats vm = run_vm(module->impl().lowered, small, {}).stats;
      CHECK(run->stats().group_steps == vm.steps);
      const double expected = static_cast<double>(vm.lane_steps) /
                              (static_cast<double>(vm.steps) * static_cast<double>(width));
      CHECK(run->stats().utilization == doctest::Approx(expected).epsilon(1e-12));
      auto gpu = run->result();
      REQUIRE(gpu.ok());
      CHECK(gpu->stats.utilization == run->stats().utilization);
    }
  }

  SUBCASE("local lane: counted by hand, from run() and from poll() after a recorded round") {
    Batch batch;
    batch.lanes = 2 * subgroup + 3;  // a partial last subgroup
    batch.inputs = {{}};
    for (uint32_t l = 0; l < batch.lanes; ++l)
      batch.inputs[0].push_back((l * 7) % 11);
    const double expected = counted_loop_lane_utilization(batch.inputs[0], subgroup);
    // The hand count's block structure, checked against the interpreter: a lane runs the entry
    // (with the first test), n bodies (each with the next test) and the return.
    uint64_t blocks = 0;
    for (uint32_t n : batch.inputs[0])
      blocks += n + 2;
    CHECK(interp(*module, batch).stats.lane_steps == blocks);

    auto run = make_run(context(), module, batch);
    REQUIRE(run->run().ok());
    CHECK(run->stats().utilization == doctest::Approx(expected).epsilon(1e-12));

    // (A dispatch's step budget splits a lane's loop over rounds and adds iterations: the
    // default budget lets every lane finish in the first round, as the hand count assumes.)
    Host host;
    auto recorded = make_run(host.external(), module, batch);
    CHECK(recorded->stats().utilization == 0);
    CHECK(host.run_in_frames(*recorded, 1) == 1);
    CHECK(recorded->stats().utilization == doctest::Approx(expected).epsilon(1e-12));
  }
  check_no_validation_messages();
}

TEST_CASE("embed: programs and runs of one context work from several threads at once") {
  auto module = compile_module(kCollatzChain);
  auto shared_program = VulkanProgram::compile(context(), module);
  REQUIRE(shared_program.ok());
  std::vector<std::string> failures(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        // Thread 0 compiles modules and programs of its own; the others share one program.
        std::shared_ptr<VulkanProgram> program = *shared_program;
        std::shared_ptr<const Module> own = module;
        if (t == 0) {
          auto m = Module::compile(kCollatzChain, {"thread.ab", "main"});
          if (!m) return void(failures[t] = m.error());
          own = *m;
          auto p = VulkanProgram::compile(context(), own);
          if (!p) return void(failures[t] = p.error());
          program = *p;
        }
        const Batch batch = int_batch(128, static_cast<uint32_t>(t * 10 + i));
        auto run = VulkanRun::create(program, batch, {});
        if (!run) return void(failures[t] = run.error());
        if (auto s = (*run)->run(); !s) return void(failures[t] = s.error());
        auto gpu = (*run)->result();
        auto cpu = own->run_cpu(batch, {}, CpuBackend::Vm);
        if (!gpu || !cpu || gpu->outputs != cpu->outputs)
          return void(failures[t] = fmt::format("thread {} run {} differs", t, i));
      }
    });
  for (auto& th : threads)
    th.join();
  for (const std::string& f : failures)
    CHECK_MESSAGE(f.empty(), f);
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab
