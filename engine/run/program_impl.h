// The inside of VulkanProgram: the state layout, how the kernels are split, the generated GLSL
// and the pipelines (each created on first use) that every run of the program shares.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "autobatch/engine.h"
#include "codegen/glsl_codegen.h"
#include "codegen/kernel_split.h"
#include "codegen/product_blocks.h"
#include "codegen/state_layout.h"
#include "core/module_impl.h"
#include "engine/device/buffers.h"
#include "engine/device/context_impl.h"
#include "engine/device/kernels.h"
#include "engine/device/shader_compiler.h"
#include "ir/run.h"

namespace ab {

// "256 MiB", "64 KiB", "12 bytes" (whole units, rounded down).
std::string format_bytes(uint64_t bytes);

struct VulkanProgram::Impl {
  std::shared_ptr<VulkanContext> context;
  VulkanContext::Impl* ctx = nullptr;
  const LoweredProgram* program = nullptr;
  std::shared_ptr<const Module> module;  // keeps `program` alive when compiled from a Module
  StateLayout layout;
  GlslTarget target;
  KernelSplit split;  // one part unless the program is too large for one kernel
  // Register residency keeps values of at most this many words in registers
  // (VulkanOptions::register_value_words, SourcePart::register_words).
  uint32_t register_words = kRegisterWords;
  std::string cache_dir;  // empty: no disk cache
  // The set layout's bindings: AB_BINDINGS, or fewer on a device that binds fewer storage
  // buffers per stage (maxPerStageDescriptorStorageBuffers), which then has fewer banks.
  uint32_t bindings = AB_BINDINGS;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  // Sources by (residency, part, private stack depth, banks, products apart), generated when a
  // kernel first needs them.
  std::map<std::tuple<Residency, size_t, uint32_t, Banks, bool>, std::string> sources;
  // Generated kernels by (kernel, part, private stack depth, banks); hand-written ones by
  // (100 + id, 0, 0, one bank); a kernel specialized to one block (block_pipeline) by
  // (200 + kernel, block, 0, banks).
  using PipelineKey = std::tuple<int, size_t, uint32_t, Banks>;
  std::map<PipelineKey, VkPipeline> pipelines;
  // Where a new pipeline's first (empty) dispatch runs: drivers such as lavapipe compile the
  // shader there rather than in vkCreateComputePipelines.
  DeviceBuffer warm_buffer;
  VkDescriptorPool warm_pool = VK_NULL_HANDLE;
  VkDescriptorSet warm_set = VK_NULL_HANDLE;
  // Wall time during which at least one kernel was being built: kernels built on several threads
  // at once (VulkanRun::prepare) count once, so that a run's time less this is its own.
  double compile_seconds = 0;
  int builds_in_flight = 0;
  std::chrono::steady_clock::time_point building_since;
  std::vector<KernelCompile> kernel_compiles;  // in the order they finished (VulkanStats::kernels)
  bool spirv_from_cache = true;
  bool pipeline_cache_from_disk = false;  // a verified pipelines-<uuid>.bin seeded pipeline_cache
  std::string unfit;  // why no kernel can be generated (a value too large), or empty
  // The product blocks (codegen/product_blocks.h), which the local kernels leave to the product
  // kernel; why a kernel holding them inline cannot be generated (a uniform operand too large to
  // copy into a lane's private memory), or empty.
  std::vector<ProductBlock> products;
  std::string unfit_inline_products;
  // Guards what is made on first use (sources, pipelines, the statistics), so that runs of one
  // program may live on different threads. Not held while a kernel compiles: prepare() builds
  // several at once.
  std::recursive_mutex mutex;
  std::mutex warm_mutex;  // warm_buffer, warm_pool and warm_set, made by the first warm_up

  size_t parts(Residency r) const { return split.parts(r).size(); }
  // private_depth: SourcePart::private_stack_depth (ignored by the Memory residency kernels).
  // banks: the run's (plan_banks).
  Expected<VkPipeline> pipeline(Kernel k, size_t part, uint32_t private_depth, const Banks& banks);
  Expected<VkPipeline> pipeline(HandKernel k);
  // Kernel k of a program in one part with its specialization constant AB_ONLY_BLOCK set to
  // `block`: the driver keeps only that block's code (ab_entry_global_compacted.glsl).
  Expected<VkPipeline> block_pipeline(Kernel k, uint32_t block, const Banks& banks);
  ~Impl();

  // The pipeline `key` if built, else builds it: `make_spirv` (GLSL generation and glslang, or
  // the disk cache), pipeline creation and the first dispatch (warm_up). Safe to call from
  // several threads at once for different keys; only the map and the statistics are locked.
  Expected<VkPipeline> build(const PipelineKey& key, std::string name,
                             const std::function<Expected<CompiledShader>()>& make_spirv,
                             const VkSpecializationInfo* spec = nullptr);
  // Makes the driver finish compiling `p` now: one dispatch in which every invocation returns at
  // once (no lanes, no steps, no blocks) over a scratch buffer. `seconds`: the dispatch's time,
  // waiting for another kernel's first dispatch (there is one queue) not counted.
  Status warm_up(VkPipeline p, double& seconds);
  // `apart`: the part's blocks less the product blocks (products_apart).
  const std::string& source(Residency r, size_t part, uint32_t private_depth = 0,
                            const Banks& banks = {}, bool apart = false);
  const std::string& glsl_for(Kernel k, size_t part, uint32_t private_depth = 0,
                              const Banks& banks = {}) {
    const Residency r = residency_of(k);
    return source(r, part, r == Residency::Registers ? private_depth : 0, banks,
                  products_apart(k, banks));
  }
  // Whether kernel k of a run with `banks` leaves the product blocks to the product kernel: every
  // kernel but the global fused one, where the product kernel reaches every slot (one state
  // bank). The others keep them inline (docs/engine.md, "Matrix products").
  bool products_apart(Kernel k, const Banks& banks) const;
  // The product kernel (shaders/ab_product.glsl): one source for every program on a device.
  Expected<VkPipeline> product_pipeline();
  std::string pipeline_cache_path() const;
  // The saved VkPipelineCache data if the file is intact and was made by this device and driver.
  std::vector<char> load_pipeline_cache() const;
  void save_pipeline_cache() const;
};

// Runs `jobs` (kernel builds) on `threads` host threads (0: one per hardware thread), calling
// `progress(done, total)` on the calling thread at the start, as each finishes, and at the end.
// After a failure no new job starts; the first failure's message is returned.
Status build_all(const std::vector<std::function<Expected<VkPipeline>()>>& jobs, uint32_t threads,
                 const std::function<void(size_t done, size_t total)>& progress);

}  // namespace ab
