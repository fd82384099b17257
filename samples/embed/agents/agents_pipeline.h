// The game sample's graphics pipeline (agents_pipeline.cpp): a vertex shader that reads the agents
// straight from the run's output region (a storage buffer bound from an aligned offset below it)
// and draws each as a quad, and its fragment shader. The ray tracer's window (samples/raytrace/
// window) makes the same pipeline with its own shaders, which read the region in the fragment
// stage.
#pragma once

#include <autobatch/autobatch.h>

#include "swapchain.h"

namespace agents {

// A pipeline's shaders (SPIR-V), the stages that read the output region and the push constants,
// and the push constants' size.
struct PipelineShaders {
  const uint32_t* vert = nullptr;
  size_t vert_bytes = 0;
  const uint32_t* frag = nullptr;
  size_t frag_bytes = 0;
  VkShaderStageFlags stages = VK_SHADER_STAGE_VERTEX_BIT;
  uint32_t push_bytes = 16;
};

struct AgentsPipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t base_word = 0;  // the output region's first word within the bound range

  // With the agents' shaders, or with `shaders`.
  void create(const WindowDevice& gpu, const Swapchain& sc, const ab::DeviceRegion& output);
  void create(const WindowDevice& gpu, const Swapchain& sc, const ab::DeviceRegion& output,
              const PipelineShaders& shaders);
  void destroy(VkDevice device);
  // The agents' draw, inside the render pass.
  void record_draw(VkCommandBuffer cmd, uint32_t agents, VkExtent2D extent) const;

 private:
  void bind_output(VkDevice device, VkBuffer buffer, uint64_t offset, uint64_t range,
                   VkShaderStageFlags stages);
  void create_layout_and_pipeline(VkDevice device, const Swapchain& sc,
                                  const PipelineShaders& shaders);
};

}  // namespace agents
