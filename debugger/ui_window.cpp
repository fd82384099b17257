#include "debugger/ui_window.h"

#define GLFW_INCLUDE_NONE
#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>
#include <imgui.h>

#include <fmt/format.h>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "autobatch/context.h"
#include "debugger/debugger.h"
#include "debugger/script.h"
#include "debugger/ui_panels.h"
#include "debugger/ui_raster.h"

namespace ab::debugger {
namespace {

Status check(VkResult r, const char* what) {
  if (r != VK_SUCCESS)
    return Error{fmt::format("Vulkan: {} failed ({})", what, static_cast<int>(r))};
  return Ok{};
}

// Prints a failure the window cannot go on after; the exit code.
int report(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 1;
}

void check_imgui(VkResult r) {
  if (r < 0)
    std::cerr << fmt::format("error: Vulkan call in Dear ImGui failed ({})\n", static_cast<int>(r));
}

// The lane grid's texture: a device image, a host staging buffer, and the descriptor set that
// Dear ImGui's Vulkan backend binds for it (ImTextureID is a VkDescriptorSet there).
struct GridTexture {
  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory image_memory = VK_NULL_HANDLE;
  VkImageView view = VK_NULL_HANDLE;
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  VkDescriptorSet set = VK_NULL_HANDLE;
  uint32_t width = 0, height = 0;
  uint64_t uploaded_version = 0;
  bool needs_layout = true;
};

// Validation messages of the window's own instance (WindowOptions::validation), printed as they
// come; any one makes the exit status 1.
int g_validation_messages = 0;
VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                             VkDebugUtilsMessageTypeFlagsEXT,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void*) {
  std::cerr << "validation: " << data->pMessage << "\n";
  ++g_validation_messages;
  return VK_FALSE;
}

class Window {
 public:
  explicit Window(const WindowOptions& options) : options_(options) {}
  ~Window() { shutdown(); }

  // Opens the window and its device, then the session on that device.
  Status open(const SessionOpener& open_session);
  int run();

 private:
  // Allocates `req` from a memory type with `flags`.
  Status allocate(const VkMemoryRequirements& req, VkMemoryPropertyFlags flags,
                  VkDeviceMemory& memory) const;
  Status create_instance();
  Status create_device();
  // A context of the engine's on the window's device, or null (with the reason on stderr) when
  // that device cannot host the engine: a session then runs on a device of the engine's own.
  std::shared_ptr<VulkanContext> engine_context();
  Status create_grid_texture(uint32_t width, uint32_t height);
  void destroy_grid_texture();
  void upload_grid(VkCommandBuffer cb);
  // Builds one ImGui frame and presents it; false when the window should close.
  Expected<bool> frame();
  Status render(ImDrawData* data);
  Status present();
  Status screenshot(const std::string& path);
  void shutdown();

  WindowOptions options_;
  // Destroyed before the device: its runs live on it.
  std::unique_ptr<Session> session_;
  std::optional<Panels> panels_;
  GLFWwindow* window_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout grid_layout_ = VK_NULL_HANDLE;
  VkSampler sampler_ = VK_NULL_HANDLE;
  VkSurfaceKHR surface_ = VK_NULL_HANDLE;
  ImGui_ImplVulkanH_Window wd_;
  bool imgui_ready_ = false;
  bool rebuild_swapchain_ = false;
  GridTexture grid_;
  int fb_width_ = 0, fb_height_ = 0;
};

Status Window::allocate(const VkMemoryRequirements& req, VkMemoryPropertyFlags flags,
                        VkDeviceMemory& memory) const {
  VkPhysicalDeviceMemoryProperties props;
  vkGetPhysicalDeviceMemoryProperties(physical_, &props);
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (props.memoryTypes[i].propertyFlags & flags) == flags) {
      VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
      mai.allocationSize = req.size;
      mai.memoryTypeIndex = i;
      return check(vkAllocateMemory(device_, &mai, nullptr, &memory), "vkAllocateMemory");
    }
  return Error{"Vulkan: no suitable memory type"};
}

// Vulkan 1.2, which the engine needs (the window itself would do with 1.1), and with
// options_.validation the Khronos layer and a messenger that prints what it reports.
Status Window::create_instance() {
  uint32_t ext_count = 0;
  const char** glfw_exts = glfwGetRequiredInstanceExtensions(&ext_count);
  if (!glfw_exts) return Error{"GLFW: this display cannot present Vulkan images"};
  std::vector<const char*> exts(glfw_exts, glfw_exts + ext_count);
  const char* layer = "VK_LAYER_KHRONOS_validation";
  if (options_.validation) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> layers(n);
    vkEnumerateInstanceLayerProperties(&n, layers.data());
    bool found = false;
    for (const VkLayerProperties& l : layers)
      found = found || std::strcmp(l.layerName, layer) == 0;
    if (!found)
      return Error{
          "validation requested but VK_LAYER_KHRONOS_validation is not installed (install "
          "vulkan-validationlayers)"};
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkDebugUtilsMessengerCreateInfoEXT messenger{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = on_validation;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "autobatch debugger";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ici.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  ici.ppEnabledExtensionNames = exts.data();
  if (options_.validation) {
    ici.enabledLayerCount = 1;
    ici.ppEnabledLayerNames = &layer;
    ici.pNext = &messenger;  // also reports instance creation
  }
  if (Status s = check(vkCreateInstance(&ici, nullptr, &instance_), "vkCreateInstance"); !s)
    return s;
  if (!options_.validation) return Ok{};
  auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
  if (!create) return Error{"Vulkan: no vkCreateDebugUtilsMessengerEXT"};
  return check(create(instance_, &messenger, nullptr, &messenger_),
               "vkCreateDebugUtilsMessengerEXT");
}

// One device for the window and the engine: a queue family that draws, presents and computes
// (what VulkanContext::create_external checks), on a Vulkan 1.2 device; ContextOptions's
// device_index, when given, picks the device, else the engine's order of device types does
// (device_type_rank), as for a run without a window.
Status Window::create_device() {
  if (Status s = create_instance(); !s) return s;
  if (Status s = check(glfwCreateWindowSurface(instance_, window_, nullptr, &surface_),
                       "glfwCreateWindowSurface");
      !s)
    return s;

  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  if (!count) return Error{"Vulkan: no device found"};
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  int best_rank = INT_MAX;
  for (size_t i = 0; i < devices.size(); ++i) {
    const VkPhysicalDevice d = devices[i];
    if (options_.device_index >= 0 && static_cast<size_t>(options_.device_index) != i) continue;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(d, &props);
    if (VK_API_VERSION_MAJOR(props.apiVersion) == 1 && VK_API_VERSION_MINOR(props.apiVersion) < 2)
      continue;
    if (device_type_rank(props.deviceType) >= best_rank) continue;
    uint32_t qcount = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d, &qcount, nullptr);
    std::vector<VkQueueFamilyProperties> families(qcount);
    vkGetPhysicalDeviceQueueFamilyProperties(d, &qcount, families.data());
    for (uint32_t q = 0; q < qcount; ++q) {
      VkBool32 present = VK_FALSE;
      vkGetPhysicalDeviceSurfaceSupportKHR(d, q, surface_, &present);
      const VkQueueFlags needed = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
      if ((families[q].queueFlags & needed) == needed && present) {
        physical_ = d;
        queue_family_ = q;
        best_rank = device_type_rank(props.deviceType);
        break;
      }
    }
  }
  if (!physical_)
    return Error{
        options_.device_index >= 0
            ? fmt::format("Vulkan: device {} cannot draw to this window", options_.device_index)
            : std::string("Vulkan: no Vulkan 1.2 device can draw to this window")};

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  const char* device_exts[] = {VK_KHR_SWAPCHAIN_EXTENSION_NAME};
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = 1;
  dci.ppEnabledExtensionNames = device_exts;
  if (Status s = check(vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice"); !s)
    return s;
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

  VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 64}};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
  pci.maxSets = 64;
  pci.poolSizeCount = 1;
  pci.pPoolSizes = sizes;
  if (Status s =
          check(vkCreateDescriptorPool(device_, &pci, nullptr, &pool_), "vkCreateDescriptorPool");
      !s)
    return s;

  // Nearest filtering: every lane stays one crisp cell however the grid is scaled.
  VkSamplerCreateInfo sci{VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO};
  sci.magFilter = sci.minFilter = VK_FILTER_NEAREST;
  sci.mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST;
  sci.addressModeU = sci.addressModeV = sci.addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
  sci.maxLod = 0;
  if (Status s = check(vkCreateSampler(device_, &sci, nullptr, &sampler_), "vkCreateSampler"); !s)
    return s;
  // Same shape as the backend's own layout (one combined image sampler for the fragment stage).
  VkDescriptorSetLayoutBinding binding{};
  binding.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
  binding.descriptorCount = 1;
  binding.stageFlags = VK_SHADER_STAGE_FRAGMENT_BIT;
  VkDescriptorSetLayoutCreateInfo lci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  lci.bindingCount = 1;
  lci.pBindings = &binding;
  if (Status s = check(vkCreateDescriptorSetLayout(device_, &lci, nullptr, &grid_layout_),
                       "vkCreateDescriptorSetLayout");
      !s)
    return s;
  return Ok{};
}

Status Window::create_grid_texture(uint32_t width, uint32_t height) {
  GridTexture& g = grid_;
  g.width = width;
  g.height = height;
  VkImageCreateInfo ici{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ici.imageType = VK_IMAGE_TYPE_2D;
  ici.format = VK_FORMAT_R8G8B8A8_UNORM;
  ici.extent = {width, height, 1};
  ici.mipLevels = ici.arrayLayers = 1;
  ici.samples = VK_SAMPLE_COUNT_1_BIT;
  ici.tiling = VK_IMAGE_TILING_OPTIMAL;
  ici.usage = VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  if (Status s = check(vkCreateImage(device_, &ici, nullptr, &g.image), "vkCreateImage"); !s)
    return s;
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(device_, g.image, &req);
  if (Status s = allocate(req, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, g.image_memory); !s) return s;
  vkBindImageMemory(device_, g.image, g.image_memory, 0);
  VkImageViewCreateInfo vci{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  vci.image = g.image;
  vci.viewType = VK_IMAGE_VIEW_TYPE_2D;
  vci.format = ici.format;
  vci.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  if (Status s = check(vkCreateImageView(device_, &vci, nullptr, &g.view), "vkCreateImageView"); !s)
    return s;

  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = VkDeviceSize{width} * height * 4;
  bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  if (Status s = check(vkCreateBuffer(device_, &bci, nullptr, &g.staging), "vkCreateBuffer"); !s)
    return s;
  vkGetBufferMemoryRequirements(device_, g.staging, &req);
  if (Status s =
          allocate(req, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                   g.staging_memory);
      !s)
    return s;
  vkBindBufferMemory(device_, g.staging, g.staging_memory, 0);
  if (Status s =
          check(vkMapMemory(device_, g.staging_memory, 0, bci.size, 0, &g.mapped), "vkMapMemory");
      !s)
    return s;

  VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dai.descriptorPool = pool_;
  dai.descriptorSetCount = 1;
  dai.pSetLayouts = &grid_layout_;
  if (Status s = check(vkAllocateDescriptorSets(device_, &dai, &g.set), "vkAllocateDescriptorSets");
      !s)
    return s;
  VkDescriptorImageInfo info{sampler_, g.view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
  VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  write.dstSet = g.set;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
  write.pImageInfo = &info;
  vkUpdateDescriptorSets(device_, 1, &write, 0, nullptr);
  g.needs_layout = true;
  g.uploaded_version = 0;
  return Ok{};
}

void Window::destroy_grid_texture() {
  GridTexture& g = grid_;
  if (!device_ || !g.image) return;
  vkDeviceWaitIdle(device_);
  vkFreeDescriptorSets(device_, pool_, 1, &g.set);
  vkDestroyImageView(device_, g.view, nullptr);
  vkDestroyImage(device_, g.image, nullptr);
  vkFreeMemory(device_, g.image_memory, nullptr);
  vkDestroyBuffer(device_, g.staging, nullptr);
  vkFreeMemory(device_, g.staging_memory, nullptr);
  g = GridTexture{};
}

void Window::upload_grid(VkCommandBuffer cb) {
  LaneGridImage& img = panels_->grid();
  if (!img.columns || img.version == grid_.uploaded_version) return;
  std::memcpy(grid_.mapped, img.rgba.data(), img.rgba.size() * 4);
  VkImageMemoryBarrier to_dst{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  to_dst.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  to_dst.newLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
  to_dst.srcAccessMask = VK_ACCESS_SHADER_READ_BIT;
  to_dst.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_dst.srcQueueFamilyIndex = to_dst.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  to_dst.image = grid_.image;
  to_dst.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  vkCmdPipelineBarrier(cb,
                       VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0, nullptr, 1, &to_dst);
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {grid_.width, grid_.height, 1};
  vkCmdCopyBufferToImage(cb, grid_.staging, grid_.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1,
                         &region);
  VkImageMemoryBarrier to_read = to_dst;
  to_read.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
  to_read.newLayout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
  to_read.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_read.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, 0,
                       0, nullptr, 0, nullptr, 1, &to_read);
  grid_.uploaded_version = img.version;
}

std::shared_ptr<VulkanContext> Window::engine_context() {
  ExternalDevice host;
  host.get_instance_proc_addr = vkGetInstanceProcAddr;
  host.instance = instance_;
  host.physical_device = physical_;
  host.device = device_;
  host.queue_family = queue_family_;
  host.queue = queue_;
  auto context = VulkanContext::create_external(host);
  if (!context) {
    std::cerr << "note: the engine runs on a device of its own: " << context.error() << "\n";
    return nullptr;
  }
  return *context;
}

Status Window::open(const SessionOpener& open_session) {
  glfwSetErrorCallback([](int, const char*) {});
  if (!glfwInit())
    return Error{
        "no display: the debugger window needs one (set DISPLAY, or run under `xvfb-run -a`); "
        "a --script without `screenshot` or `frames` runs without a window"};
  if (!glfwVulkanSupported()) return Error{"no Vulkan loader or driver for the window"};
  glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
  window_ =
      glfwCreateWindow(options_.width, options_.height, "autobatch debugger", nullptr, nullptr);
  if (!window_) return Error{"GLFW: cannot create the window"};
  if (Status s = create_device(); !s) return s;
  auto session = open_session(options_.engine ? engine_context() : nullptr);
  if (!session) return Error{session.error()};
  session_ = std::move(*session);
  glfwSetWindowTitle(window_, session_->title().c_str());
  panels_.emplace(session_->model(), session_->title());

  glfwGetFramebufferSize(window_, &fb_width_, &fb_height_);
  wd_.Surface = surface_;
  const VkFormat formats[] = {VK_FORMAT_B8G8R8A8_UNORM, VK_FORMAT_R8G8B8A8_UNORM};
  wd_.SurfaceFormat = ImGui_ImplVulkanH_SelectSurfaceFormat(physical_, surface_, formats, 2,
                                                            VK_COLORSPACE_SRGB_NONLINEAR_KHR);
  // Immediate presentation where available, so frame times measure our work, not vsync.
  const VkPresentModeKHR modes[] = {VK_PRESENT_MODE_IMMEDIATE_KHR, VK_PRESENT_MODE_FIFO_KHR};
  wd_.PresentMode = ImGui_ImplVulkanH_SelectPresentMode(physical_, surface_, modes, 2);
  ImGui_ImplVulkanH_CreateOrResizeWindow(instance_, physical_, device_, &wd_, queue_family_,
                                         nullptr, fb_width_, fb_height_, 2);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui::GetStyle().WindowRounding = 0;
  const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
  if (std::filesystem::exists(font)) io.Fonts->AddFontFromFileTTF(font, 15.0f);
  ImGui_ImplGlfw_InitForVulkan(window_, true);
  ImGui_ImplVulkan_InitInfo info{};
  info.Instance = instance_;
  info.PhysicalDevice = physical_;
  info.Device = device_;
  info.QueueFamily = queue_family_;
  info.Queue = queue_;
  info.DescriptorPool = pool_;
  info.MinImageCount = 2;
  info.ImageCount = wd_.ImageCount;
  info.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
  info.CheckVkResultFn = check_imgui;
  ImGui_ImplVulkan_Init(&info, wd_.RenderPass);
  imgui_ready_ = true;

  // Upload the font atlas once.
  VkCommandPool pool = wd_.Frames[wd_.FrameIndex].CommandPool;
  VkCommandBuffer cb = wd_.Frames[wd_.FrameIndex].CommandBuffer;
  if (Status s = check(vkResetCommandPool(device_, pool, 0), "vkResetCommandPool"); !s) return s;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (Status s = check(vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer"); !s) return s;
  ImGui_ImplVulkan_CreateFontsTexture(cb);
  if (Status s = check(vkEndCommandBuffer(cb), "vkEndCommandBuffer"); !s) return s;
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb;
  if (Status s = check(vkQueueSubmit(queue_, 1, &submit, VK_NULL_HANDLE), "vkQueueSubmit"); !s)
    return s;
  if (Status s = check(vkDeviceWaitIdle(device_), "vkDeviceWaitIdle"); !s) return s;
  ImGui_ImplVulkan_DestroyFontUploadObjects();
  return Ok{};
}

Status Window::render(ImDrawData* data) {
  ImGui_ImplVulkanH_Frame* fd = &wd_.Frames[wd_.FrameIndex];
  VkSemaphore acquired = wd_.FrameSemaphores[wd_.SemaphoreIndex].ImageAcquiredSemaphore;
  VkSemaphore finished = wd_.FrameSemaphores[wd_.SemaphoreIndex].RenderCompleteSemaphore;
  VkResult r = vkAcquireNextImageKHR(device_, wd_.Swapchain, UINT64_MAX, acquired, VK_NULL_HANDLE,
                                     &wd_.FrameIndex);
  if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) {
    rebuild_swapchain_ = true;
    if (r == VK_ERROR_OUT_OF_DATE_KHR) return Ok{};
  } else {
    if (Status s = check(r, "vkAcquireNextImageKHR"); !s) return s;
  }
  fd = &wd_.Frames[wd_.FrameIndex];
  if (Status s =
          check(vkWaitForFences(device_, 1, &fd->Fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
      !s)
    return s;
  if (Status s = check(vkResetFences(device_, 1, &fd->Fence), "vkResetFences"); !s) return s;
  if (Status s = check(vkResetCommandPool(device_, fd->CommandPool, 0), "vkResetCommandPool"); !s)
    return s;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (Status s = check(vkBeginCommandBuffer(fd->CommandBuffer, &begin), "vkBeginCommandBuffer"); !s)
    return s;
  upload_grid(fd->CommandBuffer);
  VkRenderPassBeginInfo rp{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  rp.renderPass = wd_.RenderPass;
  rp.framebuffer = fd->Framebuffer;
  rp.renderArea.extent = {static_cast<uint32_t>(wd_.Width), static_cast<uint32_t>(wd_.Height)};
  VkClearValue clear{};
  clear.color = {{0.08f, 0.08f, 0.1f, 1.0f}};
  rp.clearValueCount = 1;
  rp.pClearValues = &clear;
  vkCmdBeginRenderPass(fd->CommandBuffer, &rp, VK_SUBPASS_CONTENTS_INLINE);
  ImGui_ImplVulkan_RenderDrawData(data, fd->CommandBuffer);
  vkCmdEndRenderPass(fd->CommandBuffer);
  if (Status s = check(vkEndCommandBuffer(fd->CommandBuffer), "vkEndCommandBuffer"); !s) return s;
  VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.waitSemaphoreCount = 1;
  submit.pWaitSemaphores = &acquired;
  submit.pWaitDstStageMask = &wait_stage;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &fd->CommandBuffer;
  submit.signalSemaphoreCount = 1;
  submit.pSignalSemaphores = &finished;
  if (Status s = check(vkQueueSubmit(queue_, 1, &submit, fd->Fence), "vkQueueSubmit"); !s) return s;
  return present();
}

Status Window::present() {
  if (rebuild_swapchain_) return Ok{};
  VkSemaphore finished = wd_.FrameSemaphores[wd_.SemaphoreIndex].RenderCompleteSemaphore;
  VkPresentInfoKHR info{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
  info.waitSemaphoreCount = 1;
  info.pWaitSemaphores = &finished;
  info.swapchainCount = 1;
  info.pSwapchains = &wd_.Swapchain;
  info.pImageIndices = &wd_.FrameIndex;
  const VkResult r = vkQueuePresentKHR(queue_, &info);
  if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) {
    rebuild_swapchain_ = true;
    return Ok{};
  }
  if (Status s = check(r, "vkQueuePresentKHR"); !s) return s;
  wd_.SemaphoreIndex = (wd_.SemaphoreIndex + 1) % wd_.ImageCount;
  return Ok{};
}

Expected<bool> Window::frame() {
  const auto start = std::chrono::steady_clock::now();
  glfwPollEvents();
  if (glfwWindowShouldClose(window_)) return false;
  if (rebuild_swapchain_) {
    glfwGetFramebufferSize(window_, &fb_width_, &fb_height_);
    if (fb_width_ > 0 && fb_height_ > 0) {
      ImGui_ImplVulkan_SetMinImageCount(2);
      ImGui_ImplVulkanH_CreateOrResizeWindow(instance_, physical_, device_, &wd_, queue_family_,
                                             nullptr, fb_width_, fb_height_, 2);
      wd_.FrameIndex = 0;
      rebuild_swapchain_ = false;
    }
  }
  panels_->tick();
  ImGui_ImplVulkan_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  const ImVec2 size = ImGui::GetIO().DisplaySize;
  panels_->draw(size.x, size.y);
  ImGui::Render();
  // The grid's pixels are known after draw(); make sure its texture has the right shape.
  LaneGridImage& img = panels_->grid();
  if (img.columns && (img.columns != grid_.width || img.rows != grid_.height)) {
    destroy_grid_texture();
    if (Status s = create_grid_texture(img.columns, img.rows); !s) return Error{s.error()};
  }
  img.texture = reinterpret_cast<ImTextureID>(grid_.set);
  ImDrawData* data = ImGui::GetDrawData();
  if (data->DisplaySize.x > 0 && data->DisplaySize.y > 0)
    if (Status s = render(data); !s) return Error{s.error()};
  panels_->last_frame_ms =
      std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
  return true;
}

Status Window::screenshot(const std::string& path) {
  // A few frames let auto-sized items settle and the texture catch up with the state.
  if (Expected<bool> f = frame(); !f) return Error{f.error()};
  panels_->settle();
  for (int i = 0; i < 3; ++i)
    if (Expected<bool> f = frame(); !f) return Error{f.error()};
  ImGuiIO& io = ImGui::GetIO();
  unsigned char* font_pixels = nullptr;
  int fw = 0, fh = 0;
  io.Fonts->GetTexDataAsRGBA32(&font_pixels, &fw, &fh);
  const LaneGridImage& img = panels_->grid();
  const CpuImage shot = rasterize(
      *ImGui::GetDrawData(), static_cast<int>(io.DisplaySize.x), static_cast<int>(io.DisplaySize.y),
      [&](ImTextureID id) -> CpuTexture {
        if (id == io.Fonts->TexID) return {reinterpret_cast<const uint32_t*>(font_pixels), fw, fh};
        if (id && id == img.texture)
          return {img.rgba.data(), static_cast<int>(img.columns), static_cast<int>(img.rows)};
        return {};
      });
  return write_png(path, shot);
}

int Window::run() {
  if (options_.script.empty()) {
    for (;;) {
      const Expected<bool> f = frame();
      if (!f) return report(f.error());
      if (!*f) return 0;
    }
  }
  ScriptHooks hooks;
  hooks.screenshot = [&](const std::string& path) { return screenshot(path); };
  hooks.save_trace = [&](const std::string& path, uint64_t first, uint64_t last) {
    return session_->save_trace(path, first, last);
  };
  hooks.frames = [&](uint64_t n) -> std::string {
    // Warm up: texture creation and first upload are not steady-state.
    if (Expected<bool> f = frame(); !f) return "error: " + f.error();
    panels_->settle();
    if (Expected<bool> f = frame(); !f) return "error: " + f.error();
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i)
      if (Expected<bool> f = frame(); !f) return "error: " + f.error();
    vkDeviceWaitIdle(device_);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return fmt::format(
        "frames {}: mean frame time {:.2f} ms with {} lanes (lane grid views built in {:.1f} ms "
        "on {}; counts and legend in {:.1f} ms)",
        n, ms / n, session_->model().source().lanes(), panels_->views_ms(),
        session_->model().source().lanes() >= 65536 ? "a worker" : "the UI thread",
        panels_->refresh_ms);
  };
  panels_->hover_enabled = false;
  if (Expected<bool> f = frame(); !f) return report(f.error());
  return run_script(session_->model(), options_.script, options_.script_name, hooks, std::cout,
                    std::cerr);
}

void Window::shutdown() {
  if (device_) vkDeviceWaitIdle(device_);
  panels_.reset();
  session_.reset();
  destroy_grid_texture();
  if (imgui_ready_) {
    ImGui_ImplVulkan_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    imgui_ready_ = false;
  }
  if (device_) {
    ImGui_ImplVulkanH_DestroyWindow(instance_, device_, &wd_, nullptr);
    surface_ = VK_NULL_HANDLE;  // destroyed with the ImGui window
    if (sampler_) vkDestroySampler(device_, sampler_, nullptr);
    if (grid_layout_) vkDestroyDescriptorSetLayout(device_, grid_layout_, nullptr);
    if (pool_) vkDestroyDescriptorPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
    device_ = VK_NULL_HANDLE;
  }
  if (surface_) vkDestroySurfaceKHR(instance_, surface_, nullptr);
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
    messenger_ = VK_NULL_HANDLE;
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
  instance_ = VK_NULL_HANDLE;
  if (window_) glfwDestroyWindow(window_);
  window_ = nullptr;
  glfwTerminate();
}

}  // namespace

int run_window(const SessionOpener& open_session, const WindowOptions& options) {
  g_validation_messages = 0;
  int code = 0;
  {
    Window window(options);
    if (Status opened = window.open(open_session); !opened)
      code = report(opened.error());
    else
      code = window.run();
  }  // the messenger reports until the instance is gone
  if (g_validation_messages > 0) {
    std::cerr << fmt::format("error: {} validation message(s)\n", g_validation_messages);
    return 1;
  }
  return code;
}

}  // namespace ab::debugger
