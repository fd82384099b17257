// The samples' windows' frame helpers (window_frame.h).
#include "window_frame.h"

#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>
#include <imgui.h>

namespace agents {

ab::ExternalDevice external_device(const WindowDevice& gpu) {
  ab::ExternalDevice external;
  external.get_instance_proc_addr = vkGetInstanceProcAddr;
  external.instance = gpu.instance;
  external.physical_device = gpu.physical;
  external.device = gpu.device;
  external.queue_family = gpu.family;
  external.queue = gpu.queue;
  return external;
}

VkDescriptorPool init_imgui(const WindowDevice& gpu, const Swapchain& sc) {
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 8};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
  dpi.maxSets = 8;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &size;
  vk_check(vkCreateDescriptorPool(gpu.device, &dpi, nullptr, &pool), "vkCreateDescriptorPool");
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForVulkan(gpu.window, true);
  ImGui_ImplVulkan_InitInfo info{};
  info.Instance = gpu.instance;
  info.PhysicalDevice = gpu.physical;
  info.Device = gpu.device;
  info.QueueFamily = gpu.family;
  info.Queue = gpu.queue;
  info.DescriptorPool = pool;
  info.MinImageCount = 2;
  info.ImageCount = static_cast<uint32_t>(sc.images.size());
  info.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
  ImGui_ImplVulkan_Init(&info, sc.render_pass);
  // The font texture, uploaded once with a blocking submission of our own.
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(gpu.cmd, &bi), "vkBeginCommandBuffer");
  ImGui_ImplVulkan_CreateFontsTexture(gpu.cmd);
  vk_check(vkEndCommandBuffer(gpu.cmd), "vkEndCommandBuffer");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &gpu.cmd;
  vk_check(vkQueueSubmit(gpu.queue, 1, &si, gpu.fence), "vkQueueSubmit");
  vk_check(vkWaitForFences(gpu.device, 1, &gpu.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vk_check(vkResetFences(gpu.device, 1, &gpu.fence), "vkResetFences");
  ImGui_ImplVulkan_DestroyFontUploadObjects();
  return pool;
}

void shutdown_imgui() {
  ImGui_ImplVulkan_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
}

uint32_t acquire_image(const WindowDevice& gpu, const Swapchain& sc) {
  uint32_t image = 0;
  const VkResult acquired = vkAcquireNextImageKHR(gpu.device, sc.swapchain, UINT64_MAX,
                                                  gpu.acquired, VK_NULL_HANDLE, &image);
  if (acquired != VK_SUCCESS && acquired != VK_SUBOPTIMAL_KHR)
    vk_check(acquired, "vkAcquireNextImageKHR");
  return image;
}

void submit_present_and_wait(const WindowDevice& gpu, const Swapchain& sc, uint32_t image) {
  const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &gpu.acquired;
  si.pWaitDstStageMask = &wait_stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &gpu.cmd;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &sc.render_done[image];
  vk_check(vkQueueSubmit(gpu.queue, 1, &si, gpu.fence), "vkQueueSubmit");
  VkPresentInfoKHR pi{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
  pi.waitSemaphoreCount = 1;
  pi.pWaitSemaphores = &sc.render_done[image];
  pi.swapchainCount = 1;
  pi.pSwapchains = &sc.swapchain;
  pi.pImageIndices = &image;
  const VkResult presented = vkQueuePresentKHR(gpu.queue, &pi);
  if (presented != VK_SUCCESS && presented != VK_SUBOPTIMAL_KHR)
    vk_check(presented, "vkQueuePresentKHR");
  vk_check(vkWaitForFences(gpu.device, 1, &gpu.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vk_check(vkResetFences(gpu.device, 1, &gpu.fence), "vkResetFences");
}

}  // namespace agents
