// The game sample's graphics pipeline (agents_pipeline.cpp): a vertex shader that reads the agents
// straight from the run's output region (a storage buffer bound from an aligned offset below it)
// and draws each as a quad, and its fragment shader.
#pragma once

#include <autobatch/autobatch.h>

#include "swapchain.h"

namespace agents {

struct AgentsPipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t base_word = 0;  // the output region's first word within the bound range

  void create(const WindowDevice& gpu, const Swapchain& sc, const ab::DeviceRegion& output);
  void destroy(VkDevice device);
  // The agents' draw, inside the render pass.
  void record_draw(VkCommandBuffer cmd, uint32_t agents, VkExtent2D extent) const;

 private:
  void bind_output(VkDevice device, VkBuffer buffer, uint64_t offset, uint64_t range);
  void create_layout_and_pipeline(VkDevice device, const Swapchain& sc);
};

}  // namespace agents
