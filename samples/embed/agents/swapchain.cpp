// The game sample's swapchain (swapchain.h).
#include "swapchain.h"

// Our own private copy of the PNG writer (static: no clash with other users of stb in the link).
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace agents {

void Swapchain::create(const WindowDevice& gpu, bool screenshot) {
  VkSurfaceCapabilitiesKHR caps;
  vk_check(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(gpu.physical, gpu.surface, &caps),
           "vkGetPhysicalDeviceSurfaceCapabilitiesKHR");
  uint32_t n = 0;
  vkGetPhysicalDeviceSurfaceFormatsKHR(gpu.physical, gpu.surface, &n, nullptr);
  std::vector<VkSurfaceFormatKHR> formats(n);
  vkGetPhysicalDeviceSurfaceFormatsKHR(gpu.physical, gpu.surface, &n, formats.data());
  VkSurfaceFormatKHR chosen = formats.at(0);
  for (const auto& f : formats)
    if ((f.format == VK_FORMAT_B8G8R8A8_UNORM || f.format == VK_FORMAT_R8G8B8A8_UNORM) &&
        f.colorSpace == VK_COLOR_SPACE_SRGB_NONLINEAR_KHR)
      chosen = f;
  format = chosen.format;
  // Immediate presentation where available: frame times measure the work, not vsync.
  vkGetPhysicalDeviceSurfacePresentModesKHR(gpu.physical, gpu.surface, &n, nullptr);
  std::vector<VkPresentModeKHR> modes(n);
  vkGetPhysicalDeviceSurfacePresentModesKHR(gpu.physical, gpu.surface, &n, modes.data());
  VkPresentModeKHR mode = VK_PRESENT_MODE_FIFO_KHR;
  for (auto m : modes)
    if (m == VK_PRESENT_MODE_IMMEDIATE_KHR) mode = m;
  extent = caps.currentExtent;
  if (extent.width == UINT32_MAX) extent = {kWidth, kHeight};
  can_copy = (caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_SRC_BIT) != 0;
  if (screenshot && !can_copy)
    throw Failure("--screenshot: this surface's images cannot be copied (no TRANSFER_SRC usage)");

  VkSwapchainCreateInfoKHR sci{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
  sci.surface = gpu.surface;
  sci.minImageCount = std::max(caps.minImageCount, 2u);
  if (caps.maxImageCount) sci.minImageCount = std::min(sci.minImageCount, caps.maxImageCount);
  sci.imageFormat = chosen.format;
  sci.imageColorSpace = chosen.colorSpace;
  sci.imageExtent = extent;
  sci.imageArrayLayers = 1;
  sci.imageUsage =
      VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | (can_copy ? VK_IMAGE_USAGE_TRANSFER_SRC_BIT : 0);
  sci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
  sci.preTransform = caps.currentTransform;
  sci.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
  sci.presentMode = mode;
  sci.clipped = VK_TRUE;
  vk_check(vkCreateSwapchainKHR(gpu.device, &sci, nullptr, &swapchain), "vkCreateSwapchainKHR");
  vkGetSwapchainImagesKHR(gpu.device, swapchain, &n, nullptr);
  images.resize(n);
  vkGetSwapchainImagesKHR(gpu.device, swapchain, &n, images.data());
  create_render_pass(gpu.device);
  create_framebuffers(gpu.device);
  if (screenshot) create_shot_buffer(gpu);
}

void Swapchain::create_render_pass(VkDevice device) {
  VkAttachmentDescription color{};
  color.format = format;
  color.samples = VK_SAMPLE_COUNT_1_BIT;
  color.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
  color.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
  color.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
  color.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
  color.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  color.finalLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
  VkAttachmentReference ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
  VkSubpassDescription sub{};
  sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
  sub.colorAttachmentCount = 1;
  sub.pColorAttachments = &ref;
  // The acquired image is written only after the acquire semaphore's wait stage.
  VkSubpassDependency dep{};
  dep.srcSubpass = VK_SUBPASS_EXTERNAL;
  dep.dstSubpass = 0;
  dep.srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  dep.dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  dep.dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  VkRenderPassCreateInfo rpi{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
  rpi.attachmentCount = 1;
  rpi.pAttachments = &color;
  rpi.subpassCount = 1;
  rpi.pSubpasses = &sub;
  rpi.dependencyCount = 1;
  rpi.pDependencies = &dep;
  vk_check(vkCreateRenderPass(device, &rpi, nullptr, &render_pass), "vkCreateRenderPass");
}

void Swapchain::create_framebuffers(VkDevice device) {
  VkSemaphoreCreateInfo semi{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  for (VkImage image : images) {
    VkImageViewCreateInfo vci{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vci.image = image;
    vci.viewType = VK_IMAGE_VIEW_TYPE_2D;
    vci.format = format;
    vci.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    VkImageView view;
    vk_check(vkCreateImageView(device, &vci, nullptr, &view), "vkCreateImageView");
    views.push_back(view);
    VkFramebufferCreateInfo fbi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fbi.renderPass = render_pass;
    fbi.attachmentCount = 1;
    fbi.pAttachments = &view;
    fbi.width = extent.width;
    fbi.height = extent.height;
    fbi.layers = 1;
    VkFramebuffer fb;
    vk_check(vkCreateFramebuffer(device, &fbi, nullptr, &fb), "vkCreateFramebuffer");
    framebuffers.push_back(fb);
    VkSemaphore s;
    vk_check(vkCreateSemaphore(device, &semi, nullptr, &s), "vkCreateSemaphore");
    render_done.push_back(s);
  }
}

void Swapchain::create_shot_buffer(const WindowDevice& gpu) {
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = VkDeviceSize{extent.width} * extent.height * 4;
  bci.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  vk_check(vkCreateBuffer(gpu.device, &bci, nullptr, &shot_buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(gpu.device, shot_buffer, &req);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex =
      gpu.memory_type(req.memoryTypeBits,
                      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  vk_check(vkAllocateMemory(gpu.device, &mai, nullptr, &shot_memory), "vkAllocateMemory");
  vk_check(vkBindBufferMemory(gpu.device, shot_buffer, shot_memory, 0), "vkBindBufferMemory");
}

// The image's copy into the screenshot buffer, after the render pass, for write_png.
void Swapchain::record_copy(VkCommandBuffer cmd, uint32_t image) const {
  VkImageMemoryBarrier to_src{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  to_src.srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  to_src.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  to_src.oldLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
  to_src.newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  to_src.srcQueueFamilyIndex = to_src.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  to_src.image = images[image];
  to_src.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0, nullptr, 1, &to_src);
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {extent.width, extent.height, 1};
  vkCmdCopyImageToBuffer(cmd, images[image], VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, shot_buffer, 1,
                         &region);
  VkImageMemoryBarrier to_present = to_src;
  to_present.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  to_present.dstAccessMask = 0;
  to_present.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  to_present.newLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
  VkBufferMemoryBarrier to_host{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  to_host.srcQueueFamilyIndex = to_host.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  to_host.buffer = shot_buffer;
  to_host.size = VK_WHOLE_SIZE;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 0,
                       nullptr, 1, &to_host, 1, &to_present);
}

void Swapchain::write_png(VkDevice device, const std::string& path) const {
  void* mapped = nullptr;
  vk_check(vkMapMemory(device, shot_memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
  std::vector<uint8_t> rgba(size_t{extent.width} * extent.height * 4);
  std::memcpy(rgba.data(), mapped, rgba.size());
  vkUnmapMemory(device, shot_memory);
  const bool bgr = format == VK_FORMAT_B8G8R8A8_UNORM || format == VK_FORMAT_B8G8R8A8_SRGB;
  for (size_t i = 0; i < rgba.size(); i += 4) {
    if (bgr) std::swap(rgba[i], rgba[i + 2]);
    rgba[i + 3] = 255;
  }
  if (!stbi_write_png(path.c_str(), int(extent.width), int(extent.height), 4, rgba.data(),
                      int(extent.width) * 4))
    throw Failure("cannot write " + path);
  std::printf("screenshot: %s (%ux%u)\n", path.c_str(), extent.width, extent.height);
}

void Swapchain::destroy(VkDevice device) {
  if (shot_buffer) vkDestroyBuffer(device, shot_buffer, nullptr);
  if (shot_memory) vkFreeMemory(device, shot_memory, nullptr);
  for (auto s : render_done)
    vkDestroySemaphore(device, s, nullptr);
  for (auto f : framebuffers)
    vkDestroyFramebuffer(device, f, nullptr);
  for (auto v : views)
    vkDestroyImageView(device, v, nullptr);
  if (render_pass) vkDestroyRenderPass(device, render_pass, nullptr);
  if (swapchain) vkDestroySwapchainKHR(device, swapchain, nullptr);
}

}  // namespace agents
