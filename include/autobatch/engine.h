// The autobatch Vulkan engine: run a lowered (Figure 4) program for a batch of lanes on a Vulkan
// device. Three objects, each usable on its own:
//
//   VulkanContext (context.h)  the device; share one between programs and runs.
//   VulkanProgram              a LoweredProgram compiled to GLSL -> SPIR-V -> compute pipelines.
//   VulkanRun                  one batch's state on the device: step it, run it, read it back.
//
// run_vulkan() does all three and returns the same RunResult as the CPU backends.
// Every call returns errors as values (Expected / Status) with a clear message; none throws or
// crashes on bad input, a missing device or a batch too large for the device.
//
// Host applications compile a Module (module.h) and pass it to VulkanProgram::compile; a run can
// be recorded into the host's own command buffers and its data read and written where it lies on
// the device (VulkanRun::record, record_restart, buffers(); docs/embedding.md). The CLI, the
// debugger and the benchmark compile through a Module too; the overloads taking a LoweredProgram
// remain for the engine's own tests, which build IR-level programs (they need the ir/ headers).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/context.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab {

struct LoweredProgram;  // ir/ir.h: the program-counter form a Module holds

enum class Schedule : uint8_t {
  Global,  // Algorithm 2 for the whole batch; the scheduler runs on the GPU
  Local,   // each subgroup, workgroup or lane (LocalScope) runs its own PC loop in a dispatch
};
enum class GlobalMode : uint8_t {
  Masked,     // every step dispatches all lanes; each tests its PC
  Compacted,  // every step lists the active lanes and dispatches only those (indirect)
};
// Who runs a PC loop in the local schedule: each subgroup or workgroup (its lanes run the block
// with the smallest PC among them, as Algorithm 2 does for a batch), or each lane (it visits the
// blocks in a fixed order, looping over cycles, and runs the one it waits at; lanes of a subgroup
// at the same block run it together).
enum class LocalScope : uint8_t { Subgroup, Workgroup, Lane };

const char* schedule_name(Schedule s);       // "global", "local"
const char* global_mode_name(GlobalMode m);  // "masked", "compacted"
const char* local_scope_name(LocalScope s);  // "subgroup", "workgroup", "lane"
// The names above read back, for the CLI, the bench and Python alike. Another name is an Error
// that lists them: "schedule must be 'global' or 'local', not 'x'".
Expected<Schedule> parse_schedule(std::string_view name);
Expected<GlobalMode> parse_global_mode(std::string_view name);
Expected<LocalScope> parse_local_scope(std::string_view name);

struct VulkanOptions {
  ContextOptions context;  // used when run_vulkan creates the context
  // The default is local/lane (why: docs/performance.md). Only the global schedule records the
  // batch-wide step trace (RunOptions::record_trace), and it equals the VM's.
  Schedule schedule = Schedule::Local;
  GlobalMode global_mode = GlobalMode::Compacted;
  LocalScope local_scope = LocalScope::Lane;
  uint32_t steps_per_submission = 32;  // global: scheduler steps recorded per submission
  // global, batches that fit one subgroup (DeviceInfo::subgroup_size lanes): run up to
  // local_steps_per_dispatch scheduler steps in one dispatch, the pick done with subgroup
  // operations (the same steps and trace) instead of two or three dispatches per step.
  bool fuse_small_batches = true;
  // global/compacted, programs of at most this many blocks: keep a list of the lanes waiting at
  // each block (the step kernel appends each lane it runs to its next block's list) instead of
  // listing the chosen block's lanes with a pass over every lane each step; a step is then one
  // dispatch (its last subgroup picks the next block). Needs (blocks + 1) x lanes words; lists
  // that would not fit the device (maxStorageBufferRange, a quarter of the largest heap) use the
  // pass. The limit is for global_block_kernels' pipelines, which come with the lists (0.2-0.5 s
  // each on lavapipe), and because without them the lists' lane order, scrambled as lanes move,
  // made nuts_tree's steps slower than the pass's ordered list (docs/performance.md). 0: never.
  uint32_t global_lane_list_limit = 32;
  // With lane lists, a program in one part: a step kernel per block (a specialization of one
  // kernel), each step dispatching every block's with only the chosen one's non-empty, instead
  // of one kernel holding every block. On lavapipe, which runs every branch of a kernel, a step
  // then costs its block's code rather than the whole program's.
  bool global_block_kernels = true;
  // local (and fused global): steps per dispatch. On lavapipe, which ends any shader loop
  // silently after 65,535 iterations, a run refuses more than 60,000; other devices take any
  // value. Completion is always confirmed through a flag, never assumed.
  uint32_t local_steps_per_dispatch = 4096;
  bool disk_cache = true;  // cache SPIR-V (and the pipeline cache) on disk
  std::string cache_dir;   // empty: $XDG_CACHE_HOME/autobatch or ~/.cache/autobatch
  // A program whose blocks' estimated code (rough GLSL statements) exceeds four times this is
  // split into parts of at most this size, each a contiguous range of blocks compiled into
  // kernels of its own, so that compile time grows linearly with the program (a driver's compile
  // time of one kernel can grow faster: docs/performance.md, "Compile time"). A run dispatches
  // every part in turn; a lane runs in the part holding its block. 0: never split. Every sample
  // program stays one part.
  uint32_t max_part_cost = 3000;
  // The kernels that keep a lane's state in registers for a dispatch (local, fused global) keep
  // there only the fixed slots and the values of at most this many words; longer values (a
  // model's points and gradients, a NUTS tree) stay in the state buffer, read and written by the
  // blocks that use them, so that a kernel's code does not grow with the values' size. Results
  // are the same for any value. 0 (the default): 16 for a program too large for one kernel with
  // every value in registers (max_part_cost), every value in registers otherwise. On lavapipe
  // the state buffer made a large program (the sampler over eight schools, 6 parts) 3.7x
  // cheaper to compile and 2.3x faster to run, and a small one (nuts_tree, one kernel) 4.8x
  // dearer to compile and 10x slower to run (docs/engine.md, "Residency by size").
  uint32_t register_value_words = 0;
  // VulkanRun::prepare builds a run's kernels on this many host threads at once (GLSL, glslang,
  // pipeline creation; the empty first dispatch that makes lavapipe compile goes through the one
  // queue in turn). 0: one on a CPU device (lavapipe: the threads gained nothing there), one per
  // hardware thread on others.
  uint32_t compile_threads = 0;
  // Programs that emit: records each lane's output stream holds on the device between two
  // drains (after every submission). A lane with a full stream waits (parks) until the host has
  // drained it. Capped so that the stream fits maxStorageBufferRange; at least 1.
  uint32_t stream_records = 64;
  // The most bytes one storage-buffer binding of the lane state or of a stack arena covers; 0:
  // the device's maxStorageBufferRange. A larger buffer spans several bindings ("banks": up to
  // 4 for the lane state, 3 per arena; docs/engine.md, "Banks"), which changes the generated
  // code, so a smaller value is for tests (several banks on a small program) and for trying a
  // small device's limit on a large one.
  uint64_t bank_bytes = 0;
  // The most storage buffers a kernel binds; 0: the device's maxPerStageDescriptorStorageBuffers,
  // up to the 32 of shaders/ab_layout.h. Fewer leave fewer banks for a large buffer (13 bind no
  // bank past the first; fewer than 13 are refused). For tests, and for trying a small device's
  // limit on a large one.
  uint32_t max_bindings = 0;
};

// The largest value (variable) the Vulkan kernels hold for one lane, in 32-bit words: a lane's
// values live in the kernel's private memory. A larger one is refused before any code is
// generated (the language allows values up to 64 MiB; the CPU backends run them).
inline constexpr uint32_t kMaxPrivateWords = 65536;

// One kernel's build (VulkanStats::kernels).
struct KernelCompile {
  std::string kernel;         // "local_lane part 2", "global_compacted block 7", "global_pick"
  double source_seconds = 0;  // GLSL generation and glslang, or reading the SPIR-V disk cache
  double create_seconds = 0;  // vkCreateComputePipelines
  // The empty first dispatch, where drivers such as lavapipe compile the shader
  double first_dispatch_seconds = 0;
  bool spirv_from_cache = false;
};

// What the CPU backends' RunStats do not hold.
struct VulkanStats {
  std::string device;
  std::string schedule;  // "global/compacted", "local/subgroup", ...
  uint64_t submissions = 0;
  uint64_t dispatches = 0;
  uint64_t group_steps = 0;  // local: steps summed over groups
  // The run's utilization so far, the figure RunStats::utilization reports at the end (one
  // definition). Global schedule: the VM's, the mean over scheduler steps of active / live lanes.
  // Local: the lanes busy in a group's step over the group's lanes, summed over all group steps
  // (subgroup and workgroup scopes: the lanes that ran the step's block, over the subgroup size or
  // workgroup size; lane scope: the lanes inside the subgroup's loop iteration, over its lanes in
  // the batch). Kept up to date by step(), run(), poll(), restore() and result() from the control
  // words they read anyway, so it costs no readback.
  double utilization = 0;
  // GLSL generation, glslang (or the cache), pipeline creation and the driver's own compile
  // (forced at pipeline creation by an empty first dispatch), for every kernel built so far
  // (wall time: kernels built at once on several threads, VulkanOptions::compile_threads, count
  // once)
  double compile_seconds = 0;
  std::vector<KernelCompile> kernels;  // every kernel built so far, in the order they finished
  double run_seconds = 0;  // creation to completion, uploads included, compilation excluded
  bool spirv_from_cache = false;
  // The program's VkPipelineCache started from the one saved on disk (pipelines-<uuid>.bin).
  bool pipeline_cache_from_disk = false;
  size_t parts = 1;  // the run's step kernels: more than one when the program was split
  // Where a run's time goes, compilation excluded: VulkanRun::create (allocating the buffers and
  // uploading inputs and initial state), step()/run() summed (the PC loop: recording,
  // submissions, waits, stream drains) and result() (downloading the state, unpacking outputs).
  double upload_seconds = 0;
  double loop_seconds = 0;
  double readback_seconds = 0;
};

// A lowered program compiled for one context. Kernels are generated and compiled on first use
// (VulkanRun::prepare compiles a run's ahead of it); compile() itself plans the state layout and
// checks the program's sizes against the device.
class VulkanProgram {
 public:
  struct Impl;
  // The program keeps `module` alive.
  static Expected<std::shared_ptr<VulkanProgram>> compile(std::shared_ptr<VulkanContext> context,
                                                          std::shared_ptr<const Module> module,
                                                          const VulkanOptions& options = {});
  // `program` (and its source Program) must outlive the VulkanProgram.
  static Expected<std::shared_ptr<VulkanProgram>> compile(std::shared_ptr<VulkanContext> context,
                                                          const LoweredProgram& program,
                                                          const VulkanOptions& options = {});
  ~VulkanProgram();

  const LoweredProgram& program() const;
  // The generated GLSL of the global kernels (blocks read and write the state buffer); the local
  // kernels' source differs only in keeping a lane's state in registers during a dispatch.
  const std::string& glsl() const;
  // The SPIR-V of every module this program can use: the six generated kernel variants (global
  // masked, compacted and fused; local subgroup, workgroup and lane; compiled now if no run has
  // needed them yet, without creating pipelines) for each part, then the four hand-written
  // kernels, then the product kernel if the program has matrix products (docs/engine.md,
  // "Matrix products"; a variant that would hold a too large uniform operand inline is left out).
  Expected<std::vector<std::vector<uint32_t>>> all_spirv();
  double compile_seconds() const;
  // How many parts the program's kernels are split into (VulkanOptions::max_part_cost): 1 for
  // most programs; the global masked and compacted kernels, whose blocks read and write the state
  // buffer, may have more parts than the others.
  size_t parts() const;
  Impl& impl() { return *impl_; }

 private:
  explicit VulkanProgram(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A copy of a VulkanRun's whole state (control words, per-lane state, the live part of every
// stack) taken between steps; VulkanRun::restore continues from it exactly as the run did. Its
// contents are the engine's own; a checkpoint fits only the run that made it.
class RunCheckpoint {
 public:
  struct Data;
  explicit RunCheckpoint(std::unique_ptr<Data> data);
  ~RunCheckpoint();
  uint64_t steps() const;  // VulkanRun's step count (scheduler steps, or group steps for local)
  size_t bytes() const;    // host memory it holds
  const Data& data() const { return *data_; }

 private:
  std::unique_ptr<Data> data_;
};

// A range of a device buffer holding one value for every lane, structure of arrays: word k of
// lane l's value is the 32-bit word at byte offset + (k * lanes + l) * 4.
struct DeviceRegion {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;  // bytes
  uint64_t size = 0;    // bytes: words * lanes * 4; 0 for a value that has no storage
  uint32_t words = 0;   // words per lane
};

// Where a run's data lives on the device (VulkanRun::buffers()). The buffers are the engine's;
// they live as long as the run. Their usage: storage, transfer source and destination, indirect.
struct RunBuffers {
  uint32_t lanes = 0;
  // One per parameter of the entry function. A parameter the program never reads has no storage
  // (size 0). The run may change a parameter's words while it runs (parameters are variables).
  std::vector<DeviceRegion> inputs;
  // The entry function's result: final once the lane has finished; undefined for a faulted lane.
  DeviceRegion output;
  DeviceRegion pc;     // one word: the block the lane waits at; exit_pc once it has finished
  DeviceRegion fault;  // one word: the lane's Fault code, 0 while it has none
  uint32_t exit_pc = 0;
  // Every uniform's words, one after another in declaration order (not per lane).
  VkBuffer uniforms = VK_NULL_HANDLE;
  uint64_t uniforms_size = 0;  // bytes
};

// One batch on the device.
class VulkanRun {
 public:
  struct Impl;
  // Checks the batch (check_batch), allocates and uploads the state. The batch may be dropped
  // after this returns.
  static Expected<std::unique_ptr<VulkanRun>> create(std::shared_ptr<VulkanProgram> program,
                                                     const Batch& batch, const RunOptions& options,
                                                     const VulkanOptions& vulkan = {});
  ~VulkanRun();

  // Compiles every kernel this run will use that the program has not compiled yet, calling
  // `progress(done, total)` before each and once at the end, so that the run itself compiles
  // nothing (step() and run() otherwise compile on first use). The driver's own compile happens
  // here too (VulkanStats::compile_seconds).
  Status prepare(const std::function<void(size_t done, size_t total)>& progress = {});
  // Global: runs n more scheduler steps (fewer if every lane finishes). Local: lets every group
  // run up to n more steps (a split program: in each part's dispatch). Returns whether every lane
  // has finished.
  Expected<bool> step(uint64_t n);
  // Runs until every lane has finished or faulted.
  Status run();
  bool done() const;
  // Outputs, error records (sorted by lane, with function and line), statistics and, when
  // options.record_trace was set (global schedule only), the step trace. An Error until done()
  // (saying what to call first: run(), or poll() after the recorded rounds).
  Expected<RunResult> result();
  // result() between steps, before the end (a debugger's view): the error records and
  // statistics so far and the outputs of the lanes that have finished; a lane still running has
  // zero output words. An Error while rounds recorded since the last poll() may be in flight.
  Expected<RunResult> result_so_far();
  // Every lane's state now (between steps), in the shared BatchSnapshot form of ir/run.h, so it
  // compares directly with the VM's: PCs, PC stacks, every variable and every variable stack.
  // Temp variables live only inside a block on the GPU; their words read as zero. `step` is
  // the scheduler steps so far (global) or the group steps so far (local).
  Expected<BatchSnapshot> snapshot();
  // snapshot() without the stacks (pc_stack and stacks stay empty): one readback of the per-lane
  // state, cheap enough to take after every step (the debugger's lane views).
  Expected<BatchSnapshot> lane_state();
  // Saves the state between steps; stacks are copied only up to their deepest live entry.
  Expected<std::shared_ptr<const RunCheckpoint>> checkpoint();
  // Puts back a state this run saved with checkpoint(); the next step continues from it.
  Status restore(const RunCheckpoint& checkpoint);
  const VulkanStats& stats() const;

  // ---- Recording into the host's command buffers (local schedule; docs/embedding.md) ----
  // Records `rounds` rounds of the run into `cmd`, a command buffer the host has begun on the
  // context's queue family and will submit itself. In each round every group that still has a live
  // lane runs up to VulkanOptions::local_steps_per_dispatch steps; whether a round runs at all is
  // decided on the GPU (an indirect dispatch whose group count the round before wrote), so
  // rounds recorded after the run has finished cost only a tiny dispatch, and nothing is read
  // back between rounds. The recorded work starts and ends with barriers covering its own
  // buffers, and ends by copying the control words to host-visible memory (see poll()). It leaves
  // the compute bind point's pipeline, descriptor set 0 and push constants changed. Kernels not
  // yet compiled are compiled here (prepare() compiles them ahead). Refused for the global
  // schedule and for programs that emit (their streams need the host between submissions).
  Status record(VkCommandBuffer cmd, uint32_t rounds = 1);
  // Records a restart into `cmd`: every lane back at the entry with empty stacks, no fault and its
  // step, call and random-draw counts at zero, as if the run had just been created. Input i takes
  // its words from inputs[i] when that region is given (size > 0; the layout of
  // buffers().inputs[i]: it may be this run's own output region, as long as the two do not
  // overlap), else from the batch the run was created with. `seed`, when given, replaces the
  // random seed of the rounds recorded from now on. The first call uploads the run's initial
  // state to the device once (a blocking transfer on the context's queue).
  Status record_restart(VkCommandBuffer cmd, const std::vector<DeviceRegion>& inputs = {},
                        const uint64_t* seed = nullptr);
  // Reads the control words the last recorded round copied to host-visible memory and returns
  // whether every lane has finished (stats() and done() follow). Call it only once the host's own
  // synchronisation (a fence, a timeline semaphore) says that work completed: it never submits and
  // never waits. result() then reads the outputs (a blocking transfer). Before any round was
  // recorded it returns an Error; after a restart with no round recorded since, false (every lane
  // waits at the entry); after run() or step() with nothing recorded since, done().
  // docs/embedding.md, "A run's states", has the whole state machine.
  Expected<bool> poll();
  // Where the inputs, the outputs, the PCs, the faults and the uniforms live on the device.
  RunBuffers buffers() const;

  // Local schedule: lanes per group (the subgroup size, or the workgroup size); lane L belongs to
  // group L / group_width() and each group runs its own min-PC loop (lane scope: the subgroup whose
  // lanes run their loops side by side). 0 for the global schedule.
  uint32_t group_width() const;

 private:
  explicit VulkanRun(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The generated GLSL function of one block of `program` as the global kernels run it (the local
// kernels' version differs only in reading a lane's state from registers instead of the state
// buffer), for viewers such as the debugger; "" when `block` is not a block of the program.
// Needs no device.
std::string block_glsl(const LoweredProgram& program, int32_t block);
// The same for a block of `module` (Module::blocks()).
std::string block_glsl(const Module& module, int32_t block);

// `batch` on each of `contexts` in turn as one run (docs/embedding.md, "Sharding"): the lanes cut
// into one contiguous shard per context (autobatch/shards.h), each compiled for its context
// (one compile per device kind: the SPIR-V cache serves the next context of the same kind),
// created, prepared and stepped to its end on a host thread of its own, so every device's queue
// works at once. A context may be a device opened a second time (VulkanContext::create twice
// with one device_index), which is how a single GPU is tested as two. The result is the whole
// batch's, bit for bit as from one context: outputs, faults, emitted records (options.on_emit
// gets the batch's lane numbers, one call at a time) and statistics summed; no step trace. One
// context: that run, its Error returned as is. Several: a shard that fails (a lost device, a
// refused allocation) has its lanes faulted with Fault::ShardFailed and the reason, and the
// other shards come back. should_stop stops every shard at its next step boundary; the result
// is then `stopped` and has no outputs, like a stopped single run.
Expected<RunResult> run_on_contexts(const std::vector<std::shared_ptr<VulkanContext>>& contexts,
                                    const std::shared_ptr<const Module>& module, const Batch& batch,
                                    const RunOptions& options, const VulkanOptions& vulkan = {});

// Compile, run to completion, read back: what the CLI's `--backend vulkan` needs. Creates a
// context from vulkan.context unless one is given.
Expected<RunResult> run_vulkan(const LoweredProgram& program, const Batch& batch,
                               const RunOptions& options, const VulkanOptions& vulkan = {},
                               VulkanStats* stats = nullptr,
                               std::shared_ptr<VulkanContext> context = nullptr);

}  // namespace ab
