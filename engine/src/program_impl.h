// The inside of VulkanProgram: the state layout, the generated GLSL, and the pipelines (created on
// first use) that every run of the program shares.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autobatch/engine.h"
#include "engine/src/context_impl.h"
#include "engine/src/glsl_codegen.h"
#include "engine/src/kernels.h"
#include "engine/src/state_layout.h"

namespace ab {

struct VulkanProgram::Impl {
  std::shared_ptr<VulkanContext> context;
  VulkanContext::Impl* ctx = nullptr;
  const LoweredProgram* program = nullptr;
  StateLayout layout;
  std::string glsl;        // the global kernels' source (Residency::Memory)
  std::string local_glsl;  // the local and fused global kernels' source (Residency::Registers)
  std::string cache_dir;   // empty: no disk cache
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  std::map<int, VkPipeline> pipelines;  // generated kernels by Kernel, hand-written by 100 + id
  double compile_seconds = 0;
  bool spirv_from_cache = true;
  bool pipeline_cache_from_disk = false;  // a verified pipelines-<uuid>.bin seeded pipeline_cache

  Expected<VkPipeline> pipeline(Kernel k);
  Expected<VkPipeline> pipeline(HandKernel k);
  ~Impl();

  Expected<VkPipeline> create_pipeline(const std::vector<uint32_t>& spirv);
  const std::string& glsl_for(Kernel k) const {
    return residency_of(k) == Residency::Registers ? local_glsl : glsl;
  }
  std::string pipeline_cache_path() const;
  // The saved VkPipelineCache data if the file is intact and was made by this device and driver.
  std::vector<char> load_pipeline_cache() const;
  void save_pipeline_cache() const;
};

}  // namespace ab
