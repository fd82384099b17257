// VulkanProgram (program_impl.h): the layouts, the pipeline cache (loaded from disk only after
// the checks of docs/engine.md "The disk cache", saved atomically on release) and the pipelines,
// created on first use.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <thread>

#include "engine/device/cache_file.h"
#include "engine/device/shader_compiler.h"
#include "engine/run/program_impl.h"
#include "engine/schedules/entry_texts.h"
#include "engine/schedules/schedule_entries.h"
#include "shaders/ab_layout.h"

namespace ab {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The saved pipeline cache's key: the device and driver it belongs to. A file copied from
// another device or left by another driver version reads as absent.
CacheKey pipeline_cache_key(const VkPhysicalDeviceProperties& p) {
  CacheKeyBuilder key;
  key.add("autobatch VkPipelineCache");
  key.add(&p.vendorID, sizeof p.vendorID).add(&p.deviceID, sizeof p.deviceID);
  key.add(&p.driverVersion, sizeof p.driverVersion);
  key.add(p.pipelineCacheUUID, VK_UUID_SIZE);
  return key.finish();
}

// The Vulkan spec's own header of pipeline cache data (VkPipelineCacheHeaderVersionOne, each
// field least significant byte first whatever the host's order) must name this device. Data that
// vkGetPipelineCacheData did not return breaks a valid-usage rule of vkCreatePipelineCache, so
// what a driver does with it is undefined; the outer hash and this check keep it from the driver.
bool pipeline_cache_header_matches(const std::vector<char>& data,
                                   const VkPhysicalDeviceProperties& p) {
  constexpr size_t kHeaderOneSize = 16 + VK_UUID_SIZE;
  if (data.size() < kHeaderOneSize) return false;
  auto field = [&](size_t offset) {
    const auto* b = reinterpret_cast<const uint8_t*>(data.data()) + offset;
    return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  };
  const uint32_t header_size = field(0);
  return header_size >= kHeaderOneSize && header_size <= data.size() &&
         field(4) == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && field(8) == p.vendorID &&
         field(12) == p.deviceID &&
         std::memcmp(data.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

std::string check_private_sizes(const LoweredProgram& program,
                                const std::vector<ProductBlock>& apart = {});
std::string check_loop_cap(const LoweredProgram& program, const StateLayout& layout, uint32_t limit,
                           const std::vector<ProductBlock>& apart, uint32_t register_words);

}  // namespace

std::string format_bytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

namespace {

// `apart`: product blocks whose uniform reads no kernel holds (the product kernel reads them in
// place), so their variables are not checked.
std::string check_private_sizes(const LoweredProgram& program,
                                const std::vector<ProductBlock>& apart) {
  // A value this large would make a source of hundreds of megabytes and a kernel no driver
  // compiles (the issue this answers spent 97 s before running out of memory).
  const Types& types = program.types();
  std::vector<bool> skip(program.vars.size(), false);
  for (const ProductBlock& p : apart) {
    const auto& ops = program.blocks[p.block].ops;
    for (size_t i = 0; i + 1 < ops.size(); ++i)
      skip[ops[i].dst] = true;
  }
  for (size_t id = 0; id < program.vars.size(); ++id) {
    const LoweredVar& v = program.vars[id];
    const uint32_t words = types.words(v.type);
    if (skip[id]) continue;
    if (words > kMaxPrivateWords)
      return fmt::format(
          "'{}' holds {} words ({}) per lane; the Vulkan kernels keep a lane's values in private "
          "memory, at most {} words ({}) per value: use a smaller array, or --backend vm",
          v.name, words, format_bytes(uint64_t{words} * 4), kMaxPrivateWords,
          format_bytes(uint64_t{kMaxPrivateWords} * 4));
  }
  return {};
}

// On a device that ends a shader's loops silently after `limit` iterations (lavapipe), the
// kernels end a dispatch in time only between steps (docs/engine.md, "lavapipe's loop cap"): a
// block whose own loops could pass the cap in one step would leave values cut short, wrong with
// no error, so such a program is refused. Product blocks are the product kernel's, which slices
// its work under the cap.
std::string check_loop_cap(const LoweredProgram& program, const StateLayout& layout, uint32_t limit,
                           const std::vector<ProductBlock>& apart, uint32_t register_words) {
  for (int32_t b = 0; b < static_cast<int32_t>(program.blocks.size()); ++b) {
    if (std::any_of(apart.begin(), apart.end(),
                    [&](const ProductBlock& p) { return p.block == b; }))
      continue;
    const uint64_t iterations = step_loop_iterations(program, layout, b, register_words);
    if (iterations <= limit) continue;
    const LoweredBlock& block = program.blocks[b];
    return fmt::format(
        "{}:{}:{}: block '{}' runs up to {} loop iterations in one step, and this device ends a "
        "shader's loops silently after {} (lavapipe's cap: docs/engine.md), which would cut its "
        "values short; use smaller arrays, or --backend vm",
        program.source ? program.source->file : "", block.loc.line, block.loc.col, block.name,
        iterations, limit);
  }
  return {};
}

// On a device that caps shader loops: refuses the program (impl.unfit) when a step could pass
// the cap; with automatic residency (`may_move`) first tries long values in the state buffer,
// where the lane kernels' ab_load/ab_store do not loop over them.
void fit_loop_cap(VulkanProgram::Impl& impl, bool may_move) {
  if (!impl.unfit.empty()) return;
  const LoweredProgram& program = *impl.program;
  impl.unfit =
      check_loop_cap(program, impl.layout, kShaderLoopLimit, impl.products, impl.register_words);
  if (impl.unfit.empty() || !may_move || impl.register_words <= kLargeProgramRegisterWords) return;
  const std::string moved = check_loop_cap(program, impl.layout, kShaderLoopLimit, impl.products,
                                           kLargeProgramRegisterWords);
  if (!moved.empty()) return;
  impl.unfit.clear();
  impl.register_words = kLargeProgramRegisterWords;
}

// Whether a product block's lane operand or result has more than kLargeProgramRegisterWords words.
bool has_long_product_value(const LoweredProgram& program,
                            const std::vector<ProductBlock>& products) {
  for (const ProductBlock& p : products) {
    const Op& product = program.blocks[p.block].ops.back();
    for (VarId v : {product.dst, product.args[0], product.args[1]})
      if (program.types().words(program.vars[v].type) > kLargeProgramRegisterWords &&
          (v == product.dst || (v == product.args[0] ? !p.a.uniform : !p.b.uniform)))
        return true;
  }
  return false;
}

}  // namespace

const char* schedule_name(Schedule s) {
  return s == Schedule::Global ? "global" : "local";
}
const char* global_mode_name(GlobalMode m) {
  return m == GlobalMode::Masked ? "masked" : "compacted";
}
const char* local_scope_name(LocalScope s) {
  switch (s) {
    case LocalScope::Subgroup:
      return "subgroup";
    case LocalScope::Workgroup:
      return "workgroup";
    case LocalScope::Lane:
      return "lane";
  }
  return "";
}

namespace {

// `name` as one of `values` by their names; else "WHAT must be 'a', 'b' or 'c', not 'x'".
template <class Enum>
Expected<Enum> parse_enum_name(std::string_view name, std::initializer_list<Enum> values,
                               const char* (*spelling)(Enum), const char* what) {
  std::string names;
  size_t k = 0;
  for (Enum v : values) {
    if (name == spelling(v)) return v;
    names += fmt::format("{}'{}'",
                         k == 0                   ? ""
                         : k + 1 == values.size() ? " or "
                                                  : ", ",
                         spelling(v));
    ++k;
  }
  return Error{fmt::format("{} must be {}, not '{}'", what, names, name)};
}

}  // namespace

Expected<Schedule> parse_schedule(std::string_view name) {
  return parse_enum_name(name, {Schedule::Global, Schedule::Local}, schedule_name, "schedule");
}
Expected<GlobalMode> parse_global_mode(std::string_view name) {
  return parse_enum_name(name, {GlobalMode::Masked, GlobalMode::Compacted}, global_mode_name,
                         "global mode");
}
Expected<LocalScope> parse_local_scope(std::string_view name) {
  return parse_enum_name(name, {LocalScope::Subgroup, LocalScope::Workgroup, LocalScope::Lane},
                         local_scope_name, "local scope");
}

std::string VulkanProgram::Impl::pipeline_cache_path() const {
  if (cache_dir.empty()) return {};
  std::string uuid;
  for (uint8_t b : ctx->properties.pipelineCacheUUID)
    uuid += fmt::format("{:02x}", b);
  return (std::filesystem::path(cache_dir) / ("pipelines-" + uuid + ".bin")).string();
}

std::vector<char> VulkanProgram::Impl::load_pipeline_cache() const {
  const std::string path = pipeline_cache_path();
  if (path.empty()) return {};
  const VkPhysicalDeviceProperties& p = ctx->properties;
  auto data = read_cache_file(path, CacheFileKind::PipelineCache, pipeline_cache_key(p));
  if (!data || !pipeline_cache_header_matches(*data, p)) return {};
  return std::move(*data);
}

// Replaces the file atomically, so a concurrent run reads either the old cache or this one.
void VulkanProgram::Impl::save_pipeline_cache() const {
  const std::string path = pipeline_cache_path();
  auto& api = ctx->api;
  size_t size = 0;
  if (path.empty() ||
      api.vkGetPipelineCacheData(ctx->device, pipeline_cache, &size, nullptr) != VK_SUCCESS ||
      size == 0)
    return;
  std::vector<char> data(size);
  if (api.vkGetPipelineCacheData(ctx->device, pipeline_cache, &size, data.data()) != VK_SUCCESS)
    return;
  write_cache_file(path, CacheFileKind::PipelineCache, pipeline_cache_key(ctx->properties),
                   data.data(), size);
}

Expected<VkPipeline> VulkanProgram::Impl::build(
    const PipelineKey& key, std::string name,
    const std::function<Expected<CompiledShader>()>& make_spirv, const VkSpecializationInfo* spec) {
  using Clock = std::chrono::steady_clock;
  {
    std::lock_guard lock(mutex);
    if (auto it = pipelines.find(key); it != pipelines.end()) return it->second;
    if (!unfit.empty()) return Error{unfit};
    if (builds_in_flight++ == 0) building_since = Clock::now();
  }
  KernelCompile timing;
  timing.kernel = std::move(name);
  const auto start = Clock::now();
  auto built = [&]() -> Expected<VkPipeline> {
    auto spirv = make_spirv();
    if (!spirv) return Error{spirv.error()};
    timing.spirv_from_cache = spirv->from_cache;
    const auto compiled = Clock::now();
    timing.source_seconds = std::chrono::duration<double>(compiled - start).count();
    auto p = create_compute_pipeline(*ctx, pipeline_layout, pipeline_cache, spirv->spirv, spec);
    if (!p) return p;
    timing.create_seconds = seconds_since(compiled);
    if (auto s = warm_up(*p, timing.first_dispatch_seconds); !s) {
      ctx->api.vkDestroyPipeline(ctx->device, *p, nullptr);
      return Error{s.error()};
    }
    return p;
  }();
  std::lock_guard lock(mutex);
  if (--builds_in_flight == 0) compile_seconds += seconds_since(building_since);
  if (!built) return built;
  spirv_from_cache = spirv_from_cache && timing.spirv_from_cache;
  kernel_compiles.push_back(std::move(timing));
  // Another thread may have built the same kernel meanwhile: keep the first.
  auto [it, inserted] = pipelines.emplace(key, *built);
  if (!inserted) ctx->api.vkDestroyPipeline(ctx->device, *built, nullptr);
  return it->second;
}

Status VulkanProgram::Impl::warm_up(VkPipeline p, double& seconds) {
  auto& api = ctx->api;
  std::lock_guard lock(warm_mutex);
  const auto start = std::chrono::steady_clock::now();
  if (!warm_set) {
    // Large enough for every word an empty dispatch may touch (the control header).
    auto buffer = DeviceBuffer::create(*ctx, 1024 * 4);
    if (!buffer) return Error{buffer.error()};
    warm_buffer = std::move(*buffer);
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, bindings};
    VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pci.maxSets = 1;
    pci.poolSizeCount = 1;
    pci.pPoolSizes = &size;
    VkResult r = api.vkCreateDescriptorPool(ctx->device, &pci, nullptr, &warm_pool);
    if (r != VK_SUCCESS) return Error{vk_error("vkCreateDescriptorPool", r)};
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = warm_pool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &set_layout;
    r = api.vkAllocateDescriptorSets(ctx->device, &ai, &warm_set);
    if (r != VK_SUCCESS) return Error{vk_error("vkAllocateDescriptorSets", r)};
    const VkDescriptorBufferInfo info{warm_buffer.handle(), 0, VK_WHOLE_SIZE};
    std::vector<VkWriteDescriptorSet> writes;
    for (uint32_t b = 0; b < bindings; ++b) {
      VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w.dstSet = warm_set;
      w.dstBinding = b;
      w.descriptorCount = 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = &info;
      writes.push_back(w);
    }
    api.vkUpdateDescriptorSets(ctx->device, static_cast<uint32_t>(writes.size()), writes.data(), 0,
                               nullptr);
  }
  // All push constants zero: no lanes, no blocks, no budget, so every kernel returns at once
  // (and the control words it may still write are the scratch buffer's).
  struct {
    PushConstants common;
    ProductPush product;
  } none;
  static_assert(sizeof(none) == AB_PUSH_RANGE_BYTES);
  auto done = submit_and_wait(*ctx, [&](VkCommandBuffer cmd) {
    api.vkCmdFillBuffer(cmd, warm_buffer.handle(), 0, VK_WHOLE_SIZE, 0);
    compute_barrier(*ctx, cmd);
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout, 0, 1,
                                &warm_set, 0, nullptr);
    api.vkCmdPushConstants(cmd, pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(none),
                           &none);
    api.vkCmdDispatch(cmd, 1, 1, 1);
  });
  seconds = seconds_since(start);
  return done;
}

const std::string& VulkanProgram::Impl::source(Residency r, size_t part, uint32_t private_depth,
                                               const Banks& banks, bool apart) {
  const auto key = std::make_tuple(r, part, private_depth, banks, apart);
  {
    std::lock_guard lock(mutex);
    if (auto it = sources.find(key); it != sources.end()) return it->second;
  }
  // Generated without the lock (kernels of different parts are generated at once); a source
  // another thread stored meanwhile is the same text.
  const BlockSet& blocks = split.parts(r).at(part);
  // The local kernels leave the product blocks out (a lane waits at one for the round's product
  // dispatch); the global step kernels keep each as a jump after the step's product dispatch.
  const bool jump_only = apart && r == Residency::Memory;
  SourcePart what{apart && !jump_only ? without_blocks(blocks, products) : blocks,
                  split.copy_callees,
                  r == Residency::Memory && parts(r) > 1,
                  parts(r) > 1,
                  private_depth,
                  register_words,
                  banks};
  if (jump_only)
    for (const ProductBlock& p : products)
      if (blocks.contains(p.block)) what.ops_apart.push_back(p.block);
  std::string text = generate_glsl(*program, layout, r, target, what, schedule_entries());
  std::lock_guard lock(mutex);
  return sources.emplace(key, std::move(text)).first->second;
}

namespace {

// "local_lane", from the kernel's macro "AB_LOCAL_LANE".
std::string kernel_name(Kernel k) {
  std::string name = std::string(kernel_macro(k)).substr(3);
  for (char& c : name)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

const char* hand_kernel_name(HandKernel k) {
  switch (k) {
    case HandKernel::GlobalCount:
      return "global_count";
    case HandKernel::GlobalPick:
      return "global_pick";
    case HandKernel::GlobalCompact:
      return "global_compact";
    case HandKernel::LocalRound:
      return "local_round";
  }
  return "";
}

}  // namespace

Expected<VkPipeline> VulkanProgram::Impl::pipeline(Kernel k, size_t part, uint32_t private_depth,
                                                   const Banks& banks) {
  if (residency_of(k) == Residency::Memory) private_depth = 0;
  if (!products_apart(k, banks) && !unfit_inline_products.empty())
    return Error{unfit_inline_products};
  const PipelineKey key{static_cast<int>(k), part, private_depth, banks};
  return build(key, fmt::format("{} part {}", kernel_name(k), part), [&] {
    return compile_glsl(glsl_for(k, part, private_depth, banks), kernel_macro(k), cache_dir);
  });
}

Expected<VkPipeline> VulkanProgram::Impl::block_pipeline(Kernel k, uint32_t block,
                                                         const Banks& banks) {
  if (!products_apart(k, banks) && !unfit_inline_products.empty())
    return Error{unfit_inline_products};
  const PipelineKey key{200 + static_cast<int>(k), size_t{block}, uint32_t{0}, banks};
  const VkSpecializationMapEntry entry{AB_SPEC_ONLY_BLOCK, 0, sizeof(uint32_t)};
  const VkSpecializationInfo spec{1, &entry, sizeof(uint32_t), &block};
  return build(
      key, fmt::format("{} block {}", kernel_name(k), block),
      [&] { return compile_glsl(glsl_for(k, 0, 0, banks), kernel_macro(k), cache_dir); }, &spec);
}

Expected<VkPipeline> VulkanProgram::Impl::pipeline(HandKernel k) {
  const PipelineKey key{100 + static_cast<int>(k), size_t{0}, uint32_t{0}, Banks{}};
  return build(key, hand_kernel_name(k), [&]() -> Expected<CompiledShader> {
    return CompiledShader{hand_kernel_spirv(k), true, 0};
  });
}

bool VulkanProgram::Impl::products_apart(Kernel k, const Banks& banks) const {
  // The fused kernel runs every step in one dispatch: no product dispatch can come between.
  return k != Kernel::GlobalFused && !products.empty() && banks.state == 1;
}

Expected<VkPipeline> VulkanProgram::Impl::product_pipeline() {
  const PipelineKey key{300, size_t{0}, uint32_t{0}, Banks{}};
  return build(key, "product", [&] {
    return compile_glsl(product_kernel_glsl(target, kAbProductText), "", cache_dir);
  });
}

VulkanProgram::Impl::~Impl() {
  if (!ctx) return;
  auto& api = ctx->api;
  if (pipeline_cache) {
    save_pipeline_cache();
    api.vkDestroyPipelineCache(ctx->device, pipeline_cache, nullptr);
  }
  for (auto& [key, p] : pipelines)
    api.vkDestroyPipeline(ctx->device, p, nullptr);
  if (warm_pool) api.vkDestroyDescriptorPool(ctx->device, warm_pool, nullptr);
  if (pipeline_layout) api.vkDestroyPipelineLayout(ctx->device, pipeline_layout, nullptr);
  if (set_layout) api.vkDestroyDescriptorSetLayout(ctx->device, set_layout, nullptr);
}

VulkanProgram::VulkanProgram(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VulkanProgram::~VulkanProgram() = default;

Expected<std::shared_ptr<VulkanProgram>> VulkanProgram::compile(
    std::shared_ptr<VulkanContext> context, std::shared_ptr<const Module> module,
    const VulkanOptions& options) {
  if (!module) return Error{"no module"};
  if (!module->has_entry())
    return Error{
        fmt::format("'{}' was compiled without an entry function: it cannot run", module->file())};
  auto compiled = compile(std::move(context), module->impl().lowered, options);
  if (compiled) (*compiled)->impl().module = std::move(module);
  return compiled;
}

Expected<std::shared_ptr<VulkanProgram>> VulkanProgram::compile(
    std::shared_ptr<VulkanContext> context, const LoweredProgram& program,
    const VulkanOptions& options) {
  if (!context) return Error{"no Vulkan context"};
  if (!program.source) return Error{"the lowered program has no source program"};
  const auto start = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  impl->context = context;
  impl->ctx = &context->impl();
  impl->program = &program;
  impl->layout = plan_state(program);
  // Reported by VulkanRun::create after the batch's own sizes (a batch too large for the device
  // is the first thing to say), and by anything that would generate code.
  impl->products = product_blocks(program, impl->layout);
  impl->unfit = check_private_sizes(program, impl->products);
  impl->unfit_inline_products = check_private_sizes(program);
  const DeviceInfo& device = impl->ctx->info;
  impl->target = {device.subgroup_ballot, device.float_specials_preserved,
                  device.denorms_preserved};
  // GLSL is generated per kernel when a run first needs it (Impl::source), after the run's sizes
  // have been checked: a program is compiled only into the kernels its schedule uses.
  // Automatic residency: long values leave the registers only in a program too large for one
  // kernel (docs/engine.md, "Residency by size").
  impl->register_words = options.register_value_words;
  if (impl->register_words == 0)
    impl->register_words = automatic_register_words(program, options.max_part_cost);
  // A long value the product kernel reads or writes lives in the state buffer, where that kernel
  // finds it, rather than in a private array of every lane kernel (z = X @ w: 10,000 words).
  if (options.register_value_words == 0 && has_long_product_value(program, impl->products))
    impl->register_words = std::min(impl->register_words, kLargeProgramRegisterWords);
  if (caps_shader_loops(device)) {
    impl->target.loop_limit = kShaderLoopLimit;
    impl->target.loop_lanes = std::max<uint32_t>(device.subgroup_size, 1);
    fit_loop_cap(*impl, options.register_value_words == 0);
  }
  impl->split = split_kernels(program, options.max_part_cost, impl->register_words);
  if (options.disk_cache)
    impl->cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  auto& ctx = *impl->ctx;

  // Every kernel's layout holds the bindings of shaders/ab_layout.h, the banks' as far as the
  // device binds them: without banks a kernel needs those below AB_BIND_STATE_BANK1.
  const uint32_t device_limit = ctx.properties.limits.maxPerStageDescriptorStorageBuffers;
  const bool capped = options.max_bindings != 0 && options.max_bindings < device_limit;
  const uint32_t per_stage = capped ? options.max_bindings : device_limit;
  if (per_stage < AB_BIND_STATE_BANK1)
    return Error{fmt::format(
        "{} at most {} storage buffers per shader stage; the engine's kernels need {}{}",
        capped ? "VulkanOptions::max_bindings allows" : "this device binds", per_stage,
        AB_BIND_STATE_BANK1,
        capped ? "" : " (maxPerStageDescriptorStorageBuffers): use --backend vm")};
  impl->bindings = std::min<uint32_t>(AB_BINDINGS, per_stage);
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (uint32_t b = 0; b < impl->bindings; ++b)
    bindings.push_back(
        {b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dci.bindingCount = static_cast<uint32_t>(bindings.size());
  dci.pBindings = bindings.data();
  VkResult r = ctx.api.vkCreateDescriptorSetLayout(ctx.device, &dci, nullptr, &impl->set_layout);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateDescriptorSetLayout", r)};
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, AB_PUSH_RANGE_BYTES};
  VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  lci.setLayoutCount = 1;
  lci.pSetLayouts = &impl->set_layout;
  lci.pushConstantRangeCount = 1;
  lci.pPushConstantRanges = &range;
  r = ctx.api.vkCreatePipelineLayout(ctx.device, &lci, nullptr, &impl->pipeline_layout);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreatePipelineLayout", r)};

  // Data that fails any check never reaches the driver: the program starts with an empty cache,
  // and the file is replaced when the program is released.
  const std::vector<char> cache_data = impl->load_pipeline_cache();
  VkPipelineCacheCreateInfo cci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  cci.initialDataSize = cache_data.size();
  cci.pInitialData = cache_data.empty() ? nullptr : cache_data.data();
  r = ctx.api.vkCreatePipelineCache(ctx.device, &cci, nullptr, &impl->pipeline_cache);
  impl->pipeline_cache_from_disk = r == VK_SUCCESS && !cache_data.empty();
  if (r != VK_SUCCESS && !cache_data.empty()) {  // the driver refused it after all: start empty
    cci.initialDataSize = 0;
    cci.pInitialData = nullptr;
    r = ctx.api.vkCreatePipelineCache(ctx.device, &cci, nullptr, &impl->pipeline_cache);
  }
  if (r != VK_SUCCESS) return Error{vk_error("vkCreatePipelineCache", r)};
  impl->compile_seconds = seconds_since(start);
  return std::shared_ptr<VulkanProgram>(new VulkanProgram(std::move(impl)));
}

const LoweredProgram& VulkanProgram::program() const {
  return *impl_->program;
}
const std::string& VulkanProgram::glsl() const {
  static const std::string none;
  return impl_->unfit.empty() ? impl_->source(Residency::Memory, 0) : none;
}
size_t VulkanProgram::parts() const {
  return std::max(impl_->parts(Residency::Memory), impl_->parts(Residency::Registers));
}
double VulkanProgram::compile_seconds() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->compile_seconds;
}
Expected<std::vector<std::vector<uint32_t>>> VulkanProgram::all_spirv() {
  if (!impl_->unfit.empty()) return Error{impl_->unfit};
  std::vector<std::vector<uint32_t>> modules;
  for (Kernel k : {Kernel::GlobalMasked, Kernel::GlobalCompacted, Kernel::GlobalFused,
                   Kernel::LocalSubgroup, Kernel::LocalWorkgroup, Kernel::LocalLane})
    for (size_t part = 0; part < impl_->parts(residency_of(k)); ++part) {
      // A kernel that would hold a product's too large uniform operand inline is never built.
      if (!impl_->products_apart(k, {}) && !impl_->unfit_inline_products.empty()) continue;
      auto spirv = compile_glsl(impl_->glsl_for(k, part), kernel_macro(k), impl_->cache_dir);
      if (!spirv) return Error{spirv.error()};
      modules.push_back(std::move(spirv->spirv));
    }
  if (!impl_->products.empty()) {
    auto spirv =
        compile_glsl(product_kernel_glsl(impl_->target, kAbProductText), "", impl_->cache_dir);
    if (!spirv) return Error{spirv.error()};
    modules.push_back(std::move(spirv->spirv));
  }
  for (HandKernel k : {HandKernel::GlobalCount, HandKernel::GlobalPick, HandKernel::GlobalCompact,
                       HandKernel::LocalRound})
    modules.push_back(hand_kernel_spirv(k));
  return modules;
}

Status build_all(const std::vector<std::function<Expected<VkPipeline>()>>& jobs, uint32_t threads,
                 const std::function<void(size_t done, size_t total)>& progress) {
  const size_t total = jobs.size();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::mutex mutex;
  std::condition_variable finished_one;
  size_t next = 0, done = 0;
  std::string error;
  auto work = [&] {
    for (;;) {
      size_t i = 0;
      {
        std::lock_guard lock(mutex);
        if (next == total || !error.empty()) return;
        i = next++;
      }
      auto built = jobs[i]();
      {
        std::lock_guard lock(mutex);
        ++done;
        if (!built && error.empty()) error = built.error();
      }
      finished_one.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < std::min<size_t>(threads, total); ++t)
    pool.emplace_back(work);
  if (progress) progress(0, total);
  {
    // Every count is reported, in order, even when several builds finish at once.
    std::unique_lock lock(mutex);
    for (size_t shown = 0;;) {
      while (shown < done) {
        ++shown;
        lock.unlock();
        if (progress) progress(shown, total);
        lock.lock();
      }
      if (done == total || (!error.empty() && done == next)) break;
      finished_one.wait(lock, [&] { return done != shown; });
    }
  }
  for (std::thread& t : pool)
    t.join();
  if (!error.empty()) return Error{error};
  return Ok{};
}

std::string block_glsl(const LoweredProgram& program, int32_t block) {
  return generate_block_glsl(program, plan_state(program), block);
}

std::string block_glsl(const Module& module, int32_t block) {
  if (!module.has_entry()) return "";
  return block_glsl(module.impl().lowered, block);
}

}  // namespace ab
