// The minimal complete embedding of autobatch (docs/embedding.md): the app's own Vulkan device,
// a program compiled from source text, its runs recorded into the app's own command buffers and
// completed through the app's own fence, one run's outputs fed to the next on the GPU, and modules
// compiled on other threads meanwhile, and the sampler library on a normal model. Every run's
// result is checked against autobatch's CPU interpreter (the fit against the model's mean); the
// exit code is 0 only when all of them match and the validation layer (when installed) reported
// nothing.
#include <autobatch/autobatch.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "host_device.h"

namespace {

// Per lane: a data-dependent loop inside a recursive function, so lanes diverge everywhere.
const char* kSource = R"(
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

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// Records rounds into the app's command buffers, a few per "frame", until the run has finished.
bool run_in_frames(HostDevice& host, ab::VulkanRun& run, int& frames) {
  for (frames = 1; frames <= 10000; ++frames) {
    VkCommandBuffer cmd = host.begin();
    if (auto s = run.record(cmd, 2); !s) {
      std::printf("record: %s\n", s.error().c_str());
      return false;
    }
    if (auto err = host.submit_and_wait(cmd); !err.empty()) {
      std::printf("%s\n", err.c_str());
      return false;
    }
    auto done = run.poll();  // the fence has signalled: the copied control words are there
    if (!done) return false;
    if (*done) return true;
  }
  return false;
}

// Diagnostics are values: a bad program gives file:line:col.
void check_diagnostics() {
  std::vector<ab::SourceDiagnostic> diagnostics;
  auto bad = ab::Module::compile("fn main(n: int) -> int { return m; }\n", {"bad.ab", "main"},
                                 &diagnostics);
  check(!bad && diagnostics.size() == 1 && diagnostics[0].line == 1 &&
            bad.error().find("bad.ab:1:") == 0,
        "a bad program is reported as bad.ab:1:col");
}

// autobatch on the app's own device and queue.
ab::Expected<std::shared_ptr<ab::VulkanContext>> context_on(const HostDevice& host) {
  ab::ExternalDevice external;
  external.get_instance_proc_addr = vkGetInstanceProcAddr;
  external.instance = host.instance;
  external.physical_device = host.physical;
  external.device = host.device;
  external.queue_family = host.family;
  external.queue = host.queue;
  return ab::VulkanContext::create_external(external);
}

ab::Batch spread_batch(uint32_t lanes) {
  ab::Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(1);
  for (uint32_t l = 0; l < lanes; ++l)
    batch.inputs[0].push_back((l * 2654435761u) % 50000);
  return batch;
}

// The run recorded in frames while two threads compile modules, then its result against the CPU
// interpreter.
void check_frames(HostDevice& host, const std::shared_ptr<ab::VulkanContext>& context,
                  const ab::Module& module, ab::VulkanRun& run, const ab::Batch& batch,
                  const ab::RunOptions& options) {
  std::vector<int> compiled(2, 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto m = ab::Module::compile(kSource, {"thread.ab", "main"});
        if (!m) continue;
        if (ab::VulkanProgram::compile(context, *m)) ++compiled[t];
      }
    });
  int frames = 0;
  const bool finished = run_in_frames(host, run, frames);
  for (auto& w : workers)
    w.join();
  check(compiled[0] == 20 && compiled[1] == 20, "40 modules compiled on two threads meanwhile");
  check(finished, "the run finished after " + std::to_string(frames) + " frames");
  auto gpu = run.result();
  auto cpu = module.run_cpu(batch, options, ab::CpuBackend::Interpreter);
  check(gpu && cpu && gpu->outputs == cpu->outputs && gpu->errors.empty(),
        "4096 lanes equal the CPU interpreter");
}

// Three more runs, each taking the previous one's outputs as inputs without leaving the GPU.
bool check_chain(HostDevice& host, const ab::Module& module, ab::VulkanRun& run,
                 const ab::Batch& batch, const ab::RunOptions& options) {
  ab::Batch chained = batch;
  for (int k = 0; k < 4; ++k) {  // the first run's and the three chained runs'
    auto step = module.run_cpu(chained, options, ab::CpuBackend::Interpreter);
    if (!step) return false;
    chained.inputs[0] = step->outputs;
  }
  bool chain_ok = true;
  int frames = 0;
  for (int k = 0; k < 3 && chain_ok; ++k) {
    const ab::RunBuffers buffers = run.buffers();
    VkCommandBuffer cmd = host.begin();
    chain_ok = bool(run.record_restart(cmd, {buffers.output}));
    if (auto err = host.submit_and_wait(cmd); !err.empty()) chain_ok = false;
    chain_ok = chain_ok && run_in_frames(host, run, frames);
  }
  auto after = run.result();
  check(chain_ok && after && after->outputs == chained.inputs[0],
        "three runs chained on the GPU equal the interpreter's chain");
  return true;
}

// The sampler ships in the same library: two chains of NUTS on a normal with mean 3, on the CPU
// VM (ab::sample, sampler.h).
void check_sampler() {
  auto normal = ab::sample::Model::compile(
      "fn log_density(q: float[1]) -> float { return -0.5 * (q[0] - 3.0) * (q[0] - 3.0); }\n",
      "normal.ab");
  ab::sample::Options sampling;
  sampling.chains = 2;
  sampling.draws = 200;
  sampling.warmup = 150;
  auto fit =
      normal ? ab::sample::run(**normal, {}, sampling, ab::sample::cpu_runner(ab::CpuBackend::Vm))
             : ab::Expected<ab::sample::Fit>(normal.failure());
  check(fit && fit->received == 400 && fit->summary.size() == 1 &&
            std::abs(fit->summary[0].summary.mean - 3.0) < 0.5,
        "the sampler recovers a normal's mean");
}

}  // namespace

int main() {
  HostDevice host;
  if (auto err = host.create(); !err.empty()) {
    std::printf("cannot create the app's Vulkan device: %s\n", err.c_str());
    return 1;
  }
  std::printf("validation layer: %s\n", host.validation ? "on" : "not installed");
  check_diagnostics();
  auto module = ab::Module::compile(kSource, {"consumer.ab", "main"});
  if (!module) {
    std::printf("%s", module.error().c_str());
    return 1;
  }
  check((*module)->inputs().size() == 1 && (*module)->inputs()[0].type == "int" &&
            (*module)->output().words == 1,
        "the module describes main(n: int) -> int");
  auto context = context_on(host);
  if (!context) {
    std::printf("%s\n", context.error().c_str());
    return 1;
  }
  auto program = ab::VulkanProgram::compile(*context, *module);
  if (!program) {
    std::printf("%s\n", program.error().c_str());
    return 1;
  }
  const ab::Batch batch = spread_batch(4096);
  ab::RunOptions options;
  auto run = ab::VulkanRun::create(*program, batch, options);
  if (!run) {
    std::printf("%s\n", run.error().c_str());
    return 1;
  }
  if (auto s = (*run)->prepare(); !s) {
    std::printf("%s\n", s.error().c_str());
    return 1;
  }
  check_frames(host, *context, **module, **run, batch, options);
  if (!check_chain(host, **module, **run, batch, options)) return 1;
  check_sampler();
  run->reset();
  program->reset();
  context->reset();
  check(host.messages == 0, "no validation message");
  host.destroy();
  std::printf("%s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
