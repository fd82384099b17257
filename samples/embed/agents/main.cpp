// The game sample (issue 12, docs/embedding.md "The game sample"): a GLFW + Vulkan window that
// animates tens of thousands of agents whose per-frame decision is agents.ab, one lane per agent.
// The app owns the instance, device, queue and swapchain; autobatch runs on them. Each frame's
// command buffer holds the run's restart (its inputs copied on the GPU from the previous frame's
// outputs), its rounds, a barrier, and a render pass whose vertex shader reads the agents straight
// from the run's output region; an ImGui overlay shows the frame and autobatch times (timestamp
// queries), the run's group steps and utilization. Only <autobatch/...> headers are used, the
// .abtrace capture (ab::write_trace) included.
#include <autobatch/autobatch.h>

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>
#include <imgui.h>
// Our own private copy of the PNG writer (static: no clash with other users of stb in the link).
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const uint32_t kVertSpirv[] =
#include "agents.vert.inc"
    ;
const uint32_t kFragSpirv[] =
#include "agents.frag.inc"
    ;

constexpr uint32_t kAgentWords = 9;  // struct Agent in agents.ab
constexpr int kWidth = 1280, kHeight = 800;

const char* kUsage =
    "usage: embed_agents [options]\n"
    "  Animates agents whose per-frame decision is agents.ab, run by autobatch on the window's\n"
    "  own Vulkan device; each frame's outputs are the next frame's inputs, on the GPU.\n"
    "options:\n"
    "  --agents N          number of agents (lanes), default 10000\n"
    "  --frames N          exit 0 after N frames (default: run until the window is closed)\n"
    "  --rounds N          autobatch rounds recorded per frame, default 2\n"
    "  --program FILE      the agents program (default: agents.ab next to the sources)\n"
    "  --screenshot FILE   write the window's last frame as a PNG (needs --frames)\n"
    "  --capture FILE      where C (and the end of a --frames run) writes the current batch as an\n"
    "                      .abtrace for `autobatch debug FILE` (default for C: agents.abtrace)\n"
    "  --check             after the last frame, compare every agent with the CPU interpreter\n"
    "                      chaining as many runs (use a small --agents); exit 1 if any differs\n"
    "  --validation        require the Khronos validation layer (else it is used when installed);\n"
    "                      any validation message makes the exit status 1\n"
    "  --no-validation     do not use the validation layer (for timings)\n"
    "  --help              this text\n"
    "keys: C capture, Esc quit\n";

struct Args {
  uint32_t agents = 10000;
  uint64_t frames = 0;  // 0: until closed
  uint32_t rounds = 2;
  std::string program = AB_AGENTS_PROGRAM;
  std::string screenshot, capture;
  bool check = false, validation = false, no_validation = false;
};

bool parse_uint(const std::string& s, uint64_t max, uint64_t& out) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoull(s);
  return out >= 1 && out <= max;
}

// Returns -1 to go on, else the exit status (0 for --help, 2 for a bad flag).
int parse_args(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag == "--check") {
      a.check = true;
      continue;
    }
    if (flag == "--validation" || flag == "--no-validation") {
      (flag == "--validation" ? a.validation : a.no_validation) = true;
      continue;
    }
    const bool takes_value = flag == "--agents" || flag == "--frames" || flag == "--rounds" ||
                             flag == "--program" || flag == "--screenshot" || flag == "--capture";
    if (!takes_value) {
      std::fprintf(stderr, "error: unknown option '%s' (see --help)\n", flag.c_str());
      return 2;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "error: %s needs a value (see --help)\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    uint64_t n = 0;
    if (flag == "--agents" || flag == "--frames" || flag == "--rounds") {
      const uint64_t max = flag == "--agents" ? 4'000'000 : flag == "--rounds" ? 64 : 1'000'000'000;
      if (!parse_uint(value, max, n)) {
        std::fprintf(stderr, "error: %s takes a whole number from 1 to %llu, not '%s'\n",
                     flag.c_str(), static_cast<unsigned long long>(max), value.c_str());
        return 2;
      }
      if (flag == "--agents") a.agents = static_cast<uint32_t>(n);
      if (flag == "--frames") a.frames = n;
      if (flag == "--rounds") a.rounds = static_cast<uint32_t>(n);
    } else if (flag == "--program") {
      a.program = value;
    } else if (flag == "--screenshot") {
      a.screenshot = value;
    } else {
      a.capture = value;
    }
  }
  if (!a.screenshot.empty() && a.frames == 0) {
    std::fprintf(stderr, "error: --screenshot needs --frames N (it is taken after the last one)\n");
    return 2;
  }
  if (a.validation && a.no_validation) {
    std::fprintf(stderr, "error: --validation and --no-validation exclude each other\n");
    return 2;
  }
  if (a.check && a.frames == 0) {
    std::fprintf(stderr, "error: --check needs --frames N\n");
    return 2;
  }
  return -1;
}

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void vk_check(VkResult r, const char* what) {
  if (r != VK_SUCCESS)
    throw Failure(std::string(what) + " failed (VkResult " + std::to_string(r) + ")");
}

int g_validation_messages = 0;
VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                             VkDebugUtilsMessageTypeFlagsEXT,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void*) {
  std::fprintf(stderr, "validation: %s\n", data->pMessage);
  ++g_validation_messages;
  return VK_FALSE;
}

bool validation_layer_installed() {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0) return true;
  return false;
}

// The initial agents: spread over the world, the four kinds interleaved so that neighbouring lanes
// (one subgroup) run different code.
ab::Batch initial_batch(uint32_t agents) {
  ab::Batch batch;
  batch.lanes = agents;
  std::vector<uint32_t> words;
  words.reserve(size_t{agents} * kAgentWords);
  uint32_t h = 12345;
  auto next = [&] {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    return h;
  };
  for (uint32_t l = 0; l < agents; ++l) {
    const int32_t x = static_cast<int32_t>(next() % 65536),
                  y = static_cast<int32_t>(next() % 65536);
    const int32_t vx = static_cast<int32_t>(next() % 401) - 200;
    const int32_t vy = static_cast<int32_t>(next() % 401) - 200;
    const int32_t kind = static_cast<int32_t>(l % 4), mood = static_cast<int32_t>(next() % 32);
    const int32_t energy = static_cast<int32_t>(next() % 1001);
    const uint32_t seed = next();
    const int32_t t = static_cast<int32_t>(next() % 1000);
    for (int32_t v : {x, y, vx, vy, kind, mood, energy})
      words.push_back(static_cast<uint32_t>(v));
    words.push_back(seed);
    words.push_back(static_cast<uint32_t>(t));
  }
  batch.inputs = {std::move(words)};
  return batch;
}

class App {
 public:
  explicit App(const Args& args) : args_(args) {}
  ~App() { destroy(); }
  int run();

 private:
  void create_window_and_device();
  void create_swapchain();
  void create_pipeline();
  void create_autobatch();
  void init_imgui();
  void frame(bool last);
  void record_frame(VkCommandBuffer cmd, uint32_t image, bool screenshot);
  void write_screenshot();
  bool capture(const std::string& path);
  bool check();
  void destroy();
  uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags props);

  Args args_;
  GLFWwindow* window_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkSurfaceKHR surface_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  bool validation_ = false;
  float timestamp_period_ns_ = 0;  // 0: no timestamps on this queue family

  VkSwapchainKHR swapchain_ = VK_NULL_HANDLE;
  VkFormat format_ = VK_FORMAT_UNDEFINED;
  VkExtent2D extent_{};
  std::vector<VkImage> images_;
  std::vector<VkImageView> views_;
  std::vector<VkFramebuffer> framebuffers_;
  std::vector<VkSemaphore> render_done_;  // one per swapchain image
  VkRenderPass render_pass_ = VK_NULL_HANDLE;
  bool can_copy_swapchain_ = false;

  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE, imgui_pool_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  uint32_t base_word_ = 0;  // the output region's first word within the bound range

  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkSemaphore acquired_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  VkBuffer shot_buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory shot_memory_ = VK_NULL_HANDLE;
  bool imgui_ready_ = false;

  ab::Batch batch_;
  ab::RunOptions options_;
  std::shared_ptr<const ab::Module> module_;
  std::shared_ptr<ab::VulkanContext> context_;
  std::shared_ptr<ab::VulkanProgram> program_;
  std::unique_ptr<ab::VulkanRun> run_;

  // Per-frame figures for the overlay and the summary.
  uint64_t frames_ = 0, runs_completed_ = 0, unfinished_frames_ = 0;
  bool last_run_finished_ = true;
  uint64_t group_steps_ = 0;
  double utilization_ = 0;  // the last finished frame's (VulkanStats::utilization after poll())
  double frame_ms_ = 0, autobatch_ms_ = 0, gpu_frame_ms_ = 0;
  double sum_frame_ms_ = 0, sum_autobatch_ms_ = 0, sum_gpu_frame_ms_ = 0;
  uint64_t timed_frames_ = 0;
  std::chrono::steady_clock::time_point last_frame_end_;
  std::string status_line_;
};

uint32_t App::memory_type(uint32_t bits, VkMemoryPropertyFlags props) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(physical_, &mp);
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & props) == props) return i;
  throw Failure("no suitable memory type");
}

void App::create_window_and_device() {
  glfwSetErrorCallback([](int, const char* msg) { std::fprintf(stderr, "GLFW: %s\n", msg); });
  if (!glfwInit()) throw Failure("no display (set DISPLAY, or run under `xvfb-run -a`)");
  if (!glfwVulkanSupported()) throw Failure("GLFW finds no Vulkan loader or driver");
  glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
  glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
  window_ = glfwCreateWindow(kWidth, kHeight, "autobatch agents", nullptr, nullptr);
  if (!window_) throw Failure("GLFW cannot create the window");

  validation_ = !args_.no_validation && validation_layer_installed();
  if (args_.validation && !validation_)
    throw Failure("--validation: VK_LAYER_KHRONOS_validation is not installed");
  uint32_t n_ext = 0;
  const char** glfw_ext = glfwGetRequiredInstanceExtensions(&n_ext);
  std::vector<const char*> extensions(glfw_ext, glfw_ext + n_ext);
  const char* layer = "VK_LAYER_KHRONOS_validation";
  VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mci.pfnUserCallback = on_validation;
  if (validation_) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "autobatch agents";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ici.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  if (validation_) {
    ici.enabledLayerCount = 1;
    ici.ppEnabledLayerNames = &layer;
    ici.pNext = &mci;
  }
  vk_check(vkCreateInstance(&ici, nullptr, &instance_), "vkCreateInstance");
  if (validation_) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (!create) throw Failure("vkCreateDebugUtilsMessengerEXT is missing");
    vk_check(create(instance_, &mci, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
  }
  vk_check(glfwCreateWindowSurface(instance_, window_, nullptr, &surface_),
           "glfwCreateWindowSurface");

  // The first device with a queue family that does graphics, compute and presents to the window.
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance_, &n, nullptr);
  std::vector<VkPhysicalDevice> devices(n);
  vkEnumeratePhysicalDevices(instance_, &n, devices.data());
  bool found = false;
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(d, &props);
    if (props.apiVersion < VK_API_VERSION_1_2) continue;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> families(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, families.data());
    for (uint32_t i = 0; i < nq && !found; ++i) {
      VkBool32 present = VK_FALSE;
      vkGetPhysicalDeviceSurfaceSupportKHR(d, i, surface_, &present);
      const VkQueueFlags need = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
      if ((families[i].queueFlags & need) == need && present) {
        physical_ = d;
        family_ = i;
        found = true;
        if (families[i].timestampValidBits) timestamp_period_ns_ = props.limits.timestampPeriod;
      }
    }
    if (found) break;
  }
  if (!found) throw Failure("no Vulkan 1.2 device with a graphics+compute queue that presents");

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  const char* swapchain_ext = VK_KHR_SWAPCHAIN_EXTENSION_NAME;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = 1;
  dci.ppEnabledExtensionNames = &swapchain_ext;
  vk_check(vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, family_, 0, &queue_);

  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = family_;
  vk_check(vkCreateCommandPool(device_, &pci, nullptr, &cmd_pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = cmd_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  vk_check(vkAllocateCommandBuffers(device_, &ai, &cmd_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  vk_check(vkCreateFence(device_, &fci, nullptr, &fence_), "vkCreateFence");
  VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  vk_check(vkCreateSemaphore(device_, &sci, nullptr, &acquired_), "vkCreateSemaphore");
  if (timestamp_period_ns_ > 0) {
    VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpi.queryCount = 3;  // frame start, after the autobatch part, frame end
    vk_check(vkCreateQueryPool(device_, &qpi, nullptr, &queries_), "vkCreateQueryPool");
  }
}

void App::create_swapchain() {
  VkSurfaceCapabilitiesKHR caps;
  vk_check(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(physical_, surface_, &caps),
           "vkGetPhysicalDeviceSurfaceCapabilitiesKHR");
  uint32_t n = 0;
  vkGetPhysicalDeviceSurfaceFormatsKHR(physical_, surface_, &n, nullptr);
  std::vector<VkSurfaceFormatKHR> formats(n);
  vkGetPhysicalDeviceSurfaceFormatsKHR(physical_, surface_, &n, formats.data());
  VkSurfaceFormatKHR chosen = formats.at(0);
  for (const auto& f : formats)
    if ((f.format == VK_FORMAT_B8G8R8A8_UNORM || f.format == VK_FORMAT_R8G8B8A8_UNORM) &&
        f.colorSpace == VK_COLOR_SPACE_SRGB_NONLINEAR_KHR)
      chosen = f;
  format_ = chosen.format;
  // Immediate presentation where available: frame times measure the work, not vsync.
  vkGetPhysicalDeviceSurfacePresentModesKHR(physical_, surface_, &n, nullptr);
  std::vector<VkPresentModeKHR> modes(n);
  vkGetPhysicalDeviceSurfacePresentModesKHR(physical_, surface_, &n, modes.data());
  VkPresentModeKHR mode = VK_PRESENT_MODE_FIFO_KHR;
  for (auto m : modes)
    if (m == VK_PRESENT_MODE_IMMEDIATE_KHR) mode = m;
  extent_ = caps.currentExtent;
  if (extent_.width == UINT32_MAX) extent_ = {kWidth, kHeight};
  can_copy_swapchain_ = (caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_SRC_BIT) != 0;
  if (!args_.screenshot.empty() && !can_copy_swapchain_)
    throw Failure("--screenshot: this surface's images cannot be copied (no TRANSFER_SRC usage)");

  VkSwapchainCreateInfoKHR sci{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
  sci.surface = surface_;
  sci.minImageCount = std::max(caps.minImageCount, 2u);
  if (caps.maxImageCount) sci.minImageCount = std::min(sci.minImageCount, caps.maxImageCount);
  sci.imageFormat = chosen.format;
  sci.imageColorSpace = chosen.colorSpace;
  sci.imageExtent = extent_;
  sci.imageArrayLayers = 1;
  sci.imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT |
                   (can_copy_swapchain_ ? VK_IMAGE_USAGE_TRANSFER_SRC_BIT : 0);
  sci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
  sci.preTransform = caps.currentTransform;
  sci.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
  sci.presentMode = mode;
  sci.clipped = VK_TRUE;
  vk_check(vkCreateSwapchainKHR(device_, &sci, nullptr, &swapchain_), "vkCreateSwapchainKHR");
  vkGetSwapchainImagesKHR(device_, swapchain_, &n, nullptr);
  images_.resize(n);
  vkGetSwapchainImagesKHR(device_, swapchain_, &n, images_.data());

  VkAttachmentDescription color{};
  color.format = format_;
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
  vk_check(vkCreateRenderPass(device_, &rpi, nullptr, &render_pass_), "vkCreateRenderPass");

  VkSemaphoreCreateInfo semi{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  for (VkImage image : images_) {
    VkImageViewCreateInfo vci{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vci.image = image;
    vci.viewType = VK_IMAGE_VIEW_TYPE_2D;
    vci.format = format_;
    vci.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    VkImageView view;
    vk_check(vkCreateImageView(device_, &vci, nullptr, &view), "vkCreateImageView");
    views_.push_back(view);
    VkFramebufferCreateInfo fbi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fbi.renderPass = render_pass_;
    fbi.attachmentCount = 1;
    fbi.pAttachments = &view;
    fbi.width = extent_.width;
    fbi.height = extent_.height;
    fbi.layers = 1;
    VkFramebuffer fb;
    vk_check(vkCreateFramebuffer(device_, &fbi, nullptr, &fb), "vkCreateFramebuffer");
    framebuffers_.push_back(fb);
    VkSemaphore s;
    vk_check(vkCreateSemaphore(device_, &semi, nullptr, &s), "vkCreateSemaphore");
    render_done_.push_back(s);
  }

  if (!args_.screenshot.empty()) {
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = VkDeviceSize{extent_.width} * extent_.height * 4;
    bci.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    vk_check(vkCreateBuffer(device_, &bci, nullptr, &shot_buffer_), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device_, shot_buffer_, &req);
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                              VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    vk_check(vkAllocateMemory(device_, &mai, nullptr, &shot_memory_), "vkAllocateMemory");
    vk_check(vkBindBufferMemory(device_, shot_buffer_, shot_memory_, 0), "vkBindBufferMemory");
  }
}

void App::create_autobatch() {
  std::vector<ab::SourceDiagnostic> diagnostics;
  // Under its absolute path: a capture names the module's file, which `autobatch debug` then
  // opens from any directory.
  ab::CompileOptions compile;
  compile.file = std::filesystem::absolute(args_.program).string();
  auto module = ab::Module::load(args_.program, compile, &diagnostics);
  if (!module) throw Failure(module.error());
  module_ = *module;
  if (module_->inputs().size() != 1 || module_->inputs()[0].words != kAgentWords ||
      module_->output().words != kAgentWords)
    throw Failure(args_.program + ": main must take and return one Agent of " +
                  std::to_string(kAgentWords) + " words");

  ab::ExternalDevice external;
  external.get_instance_proc_addr = vkGetInstanceProcAddr;
  external.instance = instance_;
  external.physical_device = physical_;
  external.device = device_;
  external.queue_family = family_;
  external.queue = queue_;
  auto context = ab::VulkanContext::create_external(external);
  if (!context) throw Failure(context.error());
  context_ = *context;
  auto program = ab::VulkanProgram::compile(context_, module_);
  if (!program) throw Failure(program.error());
  program_ = *program;
  batch_ = initial_batch(args_.agents);
  options_.seed = 7;
  // agents.ab calls at most 6 deep (main, decide x4, hash): a small stack keeps the run's stack
  // arena within maxStorageBufferRange at 50,000 agents (the default, 1024, does not fit).
  options_.stack_depth = 16;
  auto run = ab::VulkanRun::create(program_, batch_, options_);
  if (!run) throw Failure(run.error());
  run_ = std::move(*run);
  if (auto s = run_->prepare(); !s) throw Failure(s.error());
}

void App::create_pipeline() {
  // The output region, bound from the largest aligned offset at or below it.
  const ab::RunBuffers buffers = run_->buffers();
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical_, &props);
  const uint64_t align = props.limits.minStorageBufferOffsetAlignment;
  const uint64_t bind_offset = buffers.output.offset / align * align;
  const uint64_t bind_range = buffers.output.offset + buffers.output.size - bind_offset;
  if (bind_range > props.limits.maxStorageBufferRange)
    throw Failure("the agents' output region is larger than maxStorageBufferRange");
  base_word_ = static_cast<uint32_t>((buffers.output.offset - bind_offset) / 4);

  VkDescriptorSetLayoutBinding binding{};
  binding.binding = 0;
  binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  binding.descriptorCount = 1;
  binding.stageFlags = VK_SHADER_STAGE_VERTEX_BIT;
  VkDescriptorSetLayoutCreateInfo dli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dli.bindingCount = 1;
  dli.pBindings = &binding;
  vk_check(vkCreateDescriptorSetLayout(device_, &dli, nullptr, &set_layout_),
           "vkCreateDescriptorSetLayout");
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &size;
  vk_check(vkCreateDescriptorPool(device_, &dpi, nullptr, &pool_), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dai.descriptorPool = pool_;
  dai.descriptorSetCount = 1;
  dai.pSetLayouts = &set_layout_;
  vk_check(vkAllocateDescriptorSets(device_, &dai, &set_), "vkAllocateDescriptorSets");
  VkDescriptorBufferInfo info{buffers.output.buffer, bind_offset, bind_range};
  VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  write.dstSet = set_;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  write.pBufferInfo = &info;
  vkUpdateDescriptorSets(device_, 1, &write, 0, nullptr);

  VkPushConstantRange push{VK_SHADER_STAGE_VERTEX_BIT, 0, 16};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &set_layout_;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &push;
  vk_check(vkCreatePipelineLayout(device_, &pli, nullptr, &layout_), "vkCreatePipelineLayout");

  auto shader = [&](const uint32_t* code, size_t bytes) {
    VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = bytes;
    smi.pCode = code;
    VkShaderModule m;
    vk_check(vkCreateShaderModule(device_, &smi, nullptr, &m), "vkCreateShaderModule");
    return m;
  };
  VkShaderModule vert = shader(kVertSpirv, sizeof kVertSpirv);
  VkShaderModule frag = shader(kFragSpirv, sizeof kFragSpirv);
  VkPipelineShaderStageCreateInfo stages[2] = {
      {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO},
      {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO}};
  stages[0].stage = VK_SHADER_STAGE_VERTEX_BIT;
  stages[0].module = vert;
  stages[0].pName = "main";
  stages[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT;
  stages[1].module = frag;
  stages[1].pName = "main";
  VkPipelineVertexInputStateCreateInfo vin{
      VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
  VkPipelineInputAssemblyStateCreateInfo ia{
      VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
  ia.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
  VkViewport viewport{0, 0, float(extent_.width), float(extent_.height), 0, 1};
  VkRect2D scissor{{0, 0}, extent_};
  VkPipelineViewportStateCreateInfo vp{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
  vp.viewportCount = 1;
  vp.pViewports = &viewport;
  vp.scissorCount = 1;
  vp.pScissors = &scissor;
  VkPipelineRasterizationStateCreateInfo rs{
      VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
  rs.polygonMode = VK_POLYGON_MODE_FILL;
  rs.cullMode = VK_CULL_MODE_NONE;
  rs.lineWidth = 1.0f;
  VkPipelineMultisampleStateCreateInfo ms{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
  ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
  VkPipelineColorBlendAttachmentState blend{};
  blend.colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
                         VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
  VkPipelineColorBlendStateCreateInfo cb{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
  cb.attachmentCount = 1;
  cb.pAttachments = &blend;
  VkGraphicsPipelineCreateInfo gpi{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
  gpi.stageCount = 2;
  gpi.pStages = stages;
  gpi.pVertexInputState = &vin;
  gpi.pInputAssemblyState = &ia;
  gpi.pViewportState = &vp;
  gpi.pRasterizationState = &rs;
  gpi.pMultisampleState = &ms;
  gpi.pColorBlendState = &cb;
  gpi.layout = layout_;
  gpi.renderPass = render_pass_;
  const VkResult r =
      vkCreateGraphicsPipelines(device_, VK_NULL_HANDLE, 1, &gpi, nullptr, &pipeline_);
  vkDestroyShaderModule(device_, vert, nullptr);
  vkDestroyShaderModule(device_, frag, nullptr);
  vk_check(r, "vkCreateGraphicsPipelines");
}

void App::init_imgui() {
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 8};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
  dpi.maxSets = 8;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &size;
  vk_check(vkCreateDescriptorPool(device_, &dpi, nullptr, &imgui_pool_), "vkCreateDescriptorPool");
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForVulkan(window_, true);
  ImGui_ImplVulkan_InitInfo info{};
  info.Instance = instance_;
  info.PhysicalDevice = physical_;
  info.Device = device_;
  info.QueueFamily = family_;
  info.Queue = queue_;
  info.DescriptorPool = imgui_pool_;
  info.MinImageCount = 2;
  info.ImageCount = static_cast<uint32_t>(images_.size());
  info.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
  ImGui_ImplVulkan_Init(&info, render_pass_);
  imgui_ready_ = true;
  // The font texture, uploaded once with a blocking submission of our own.
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
  ImGui_ImplVulkan_CreateFontsTexture(cmd_);
  vk_check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd_;
  vk_check(vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
  vk_check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vk_check(vkResetFences(device_, 1, &fence_), "vkResetFences");
  ImGui_ImplVulkan_DestroyFontUploadObjects();
}

void App::record_frame(VkCommandBuffer cmd, uint32_t image, bool screenshot) {
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  if (queries_) {
    vkCmdResetQueryPool(cmd, queries_, 0, 3);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);
  }
  // The agents' decision: a restart from the previous frame's outputs (copied on the GPU), then
  // the rounds. A run that did not finish in its frame goes on (no restart) in the next.
  if (frames_ > 0 && last_run_finished_) {
    if (auto s = run_->record_restart(cmd, {run_->buffers().output}); !s)
      throw Failure("record_restart: " + s.error());
  }
  if (auto s = run_->record(cmd, args_.rounds); !s) throw Failure("record: " + s.error());
  if (queries_) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, queries_, 1);

  // The run's writes to its output region, before the vertex shader reads it.
  const ab::DeviceRegion out = run_->buffers().output;
  VkBufferMemoryBarrier barrier{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  barrier.srcQueueFamilyIndex = barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  barrier.buffer = out.buffer;
  barrier.offset = out.offset;
  barrier.size = out.size;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_VERTEX_SHADER_BIT, 0, 0, nullptr, 1, &barrier, 0, nullptr);

  VkClearValue clear{};
  clear.color = {{0.02f, 0.02f, 0.05f, 1.0f}};
  VkRenderPassBeginInfo rbi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  rbi.renderPass = render_pass_;
  rbi.framebuffer = framebuffers_[image];
  rbi.renderArea = {{0, 0}, extent_};
  rbi.clearValueCount = 1;
  rbi.pClearValues = &clear;
  vkCmdBeginRenderPass(cmd, &rbi, VK_SUBPASS_CONTENTS_INLINE);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline_);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, layout_, 0, 1, &set_, 0, nullptr);
  struct {
    uint32_t base, lanes;
    float size, aspect;
  } push{base_word_, args_.agents, 2.5f / float(extent_.height),
         float(extent_.width) / float(extent_.height)};
  vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof push, &push);
  vkCmdDraw(cmd, args_.agents * 6, 1, 0, 0);
  ImGui_ImplVulkan_RenderDrawData(ImGui::GetDrawData(), cmd);
  vkCmdEndRenderPass(cmd);

  if (screenshot) {
    VkImageMemoryBarrier to_src{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    to_src.srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
    to_src.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    to_src.oldLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
    to_src.newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    to_src.srcQueueFamilyIndex = to_src.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    to_src.image = images_[image];
    to_src.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0, nullptr, 1, &to_src);
    VkBufferImageCopy region{};
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {extent_.width, extent_.height, 1};
    vkCmdCopyImageToBuffer(cmd, images_[image], VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, shot_buffer_,
                           1, &region);
    VkImageMemoryBarrier to_present = to_src;
    to_present.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    to_present.dstAccessMask = 0;
    to_present.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    to_present.newLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
    VkBufferMemoryBarrier to_host{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    to_host.srcQueueFamilyIndex = to_host.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    to_host.buffer = shot_buffer_;
    to_host.size = VK_WHOLE_SIZE;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 0,
                         nullptr, 1, &to_host, 1, &to_present);
  }
  if (queries_) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 2);
  vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
}

void App::frame(bool last) {
  const auto start = std::chrono::steady_clock::now();
  glfwPollEvents();

  // The overlay shows the figures of the frames before this one.
  ImGui_ImplVulkan_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_Always);
  ImGui::SetNextWindowBgAlpha(0.75f);
  ImGui::Begin("autobatch agents", nullptr,
               ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings);
  ImGui::Text("agents       %u (lanes)", args_.agents);
  ImGui::Text("FPS          %.1f", frame_ms_ > 0 ? 1000.0 / frame_ms_ : 0.0);
  ImGui::Text("frame        %.2f ms (wall)", frame_ms_);
  if (queries_) {
    ImGui::Text("GPU frame    %.2f ms", gpu_frame_ms_);
    ImGui::Text("autobatch    %.2f ms (restart + %u rounds)", autobatch_ms_, args_.rounds);
  }
  ImGui::Text("group steps  %llu this frame", static_cast<unsigned long long>(group_steps_));
  ImGui::Text("utilization  %.1f%%", utilization_ * 100);
  ImGui::Text("runs         %llu finished, %llu frames continued",
              static_cast<unsigned long long>(runs_completed_),
              static_cast<unsigned long long>(unfinished_frames_));
  if (!status_line_.empty()) ImGui::TextUnformatted(status_line_.c_str());
  ImGui::TextDisabled("C: capture .abtrace   Esc: quit");
  ImGui::End();
  ImGui::Render();

  uint32_t image = 0;
  const VkResult acquired =
      vkAcquireNextImageKHR(device_, swapchain_, UINT64_MAX, acquired_, VK_NULL_HANDLE, &image);
  if (acquired != VK_SUCCESS && acquired != VK_SUBOPTIMAL_KHR)
    vk_check(acquired, "vkAcquireNextImageKHR");
  const bool screenshot = last && !args_.screenshot.empty();
  vk_check(vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer");
  record_frame(cmd_, image, screenshot);

  const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &acquired_;
  si.pWaitDstStageMask = &wait_stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd_;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &render_done_[image];
  vk_check(vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
  VkPresentInfoKHR pi{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
  pi.waitSemaphoreCount = 1;
  pi.pWaitSemaphores = &render_done_[image];
  pi.swapchainCount = 1;
  pi.pSwapchains = &swapchain_;
  pi.pImageIndices = &image;
  const VkResult presented = vkQueuePresentKHR(queue_, &pi);
  if (presented != VK_SUCCESS && presented != VK_SUBOPTIMAL_KHR)
    vk_check(presented, "vkQueuePresentKHR");

  // After the frame's fence: the run's completion and statistics, the timestamps.
  vk_check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vk_check(vkResetFences(device_, 1, &fence_), "vkResetFences");
  auto finished = run_->poll();
  if (!finished) throw Failure("poll: " + finished.error());
  last_run_finished_ = *finished;
  if (*finished)
    ++runs_completed_;
  else
    ++unfinished_frames_;
  group_steps_ = run_->stats().group_steps;
  if (queries_) {
    uint64_t t[3] = {};
    if (vkGetQueryPoolResults(device_, queries_, 0, 3, sizeof t, t, sizeof t[0],
                              VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
      autobatch_ms_ = double(t[1] - t[0]) * timestamp_period_ns_ * 1e-6;
      gpu_frame_ms_ = double(t[2] - t[0]) * timestamp_period_ns_ * 1e-6;
    }
  }
  ++frames_;
  if (screenshot) write_screenshot();

  const auto end = std::chrono::steady_clock::now();
  frame_ms_ = std::chrono::duration<double, std::milli>(end - start).count();
  // The first frames compile and upload: leave them out of the means.
  if (frames_ > 3) {
    sum_frame_ms_ += frame_ms_;
    sum_autobatch_ms_ += autobatch_ms_;
    sum_gpu_frame_ms_ += gpu_frame_ms_;
    ++timed_frames_;
  }
  // poll() read the run's counters: no readback of the lanes' state.
  if (*finished) utilization_ = run_->stats().utilization;
}

void App::write_screenshot() {
  void* mapped = nullptr;
  vk_check(vkMapMemory(device_, shot_memory_, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
  std::vector<uint8_t> rgba(size_t{extent_.width} * extent_.height * 4);
  std::memcpy(rgba.data(), mapped, rgba.size());
  vkUnmapMemory(device_, shot_memory_);
  const bool bgr = format_ == VK_FORMAT_B8G8R8A8_UNORM || format_ == VK_FORMAT_B8G8R8A8_SRGB;
  for (size_t i = 0; i < rgba.size(); i += 4) {
    if (bgr) std::swap(rgba[i], rgba[i + 2]);
    rgba[i + 3] = 255;
  }
  if (!stbi_write_png(args_.screenshot.c_str(), int(extent_.width), int(extent_.height), 4,
                      rgba.data(), int(extent_.width) * 4))
    throw Failure("cannot write " + args_.screenshot);
  std::printf("screenshot: %s (%ux%u)\n", args_.screenshot.c_str(), extent_.width, extent_.height);
}

// The batch the next frame will run: the agents as they are now (the last finished run's outputs,
// a blocking readback), or the initial batch before the first frame.
bool App::capture(const std::string& path) {
  ab::Batch batch;
  batch.lanes = args_.agents;
  if (frames_ == 0) {
    batch = batch_;
  } else {
    if (!last_run_finished_) {
      status_line_ = "capture: the run is still going; try again next frame";
      return false;
    }
    auto r = run_->result();
    if (!r) {
      status_line_ = "capture: " + r.error();
      return false;
    }
    batch.inputs = {r->outputs};
  }
  // The CPU VM's run of the current agents (the next frame's decision), as the debugger replays it.
  const ab::Status written = ab::write_trace(path, *module_, batch, options_);
  const std::string error = written ? std::string() : written.error();
  status_line_ = error.empty() ? "captured " + path : "capture: " + error;
  std::printf("%s\n", status_line_.c_str());
  if (error.empty()) std::printf("open it with: autobatch debug %s\n", path.c_str());
  return error.empty();
}

// The agents after the frames so far must equal the CPU interpreter chaining as many runs.
bool App::check() {
  if (!last_run_finished_) {
    std::printf("check: FAILED (the last frame's run had not finished)\n");
    return false;
  }
  auto gpu = run_->result();
  if (!gpu) {
    std::printf("check: FAILED (%s)\n", gpu.error().c_str());
    return false;
  }
  ab::Batch chained = batch_;
  std::vector<uint32_t> cpu;
  for (uint64_t k = 0; k < runs_completed_; ++k) {
    auto step = module_->run_cpu(chained, options_, ab::CpuBackend::Interpreter);
    if (!step || !step->errors.empty()) {
      std::printf("check: FAILED (the interpreter: %s)\n",
                  step ? "a lane faulted" : step.error().c_str());
      return false;
    }
    chained.inputs[0] = step->outputs;
  }
  const std::vector<uint32_t>& want = chained.inputs[0];
  size_t differ = 0;
  for (uint32_t l = 0; l < args_.agents; ++l)
    for (uint32_t k = 0; k < kAgentWords; ++k)
      if (gpu->outputs[size_t{l} * kAgentWords + k] != want[size_t{l} * kAgentWords + k]) {
        ++differ;
        break;
      }
  const bool ok = differ == 0 && gpu->errors.empty();
  std::printf(
      "check: %s: %u agents after %llu runs (%llu frames), %zu differ from the CPU "
      "interpreter, %zu faulted\n",
      ok ? "ok" : "FAILED", args_.agents, static_cast<unsigned long long>(runs_completed_),
      static_cast<unsigned long long>(frames_), differ, gpu->errors.size());
  return ok;
}

int App::run() {
  create_window_and_device();
  create_swapchain();
  create_autobatch();
  create_pipeline();
  init_imgui();
  std::printf("device: %s; validation layer: %s; %u agents\n", context_->device().name.c_str(),
              validation_ ? "on" : "off", args_.agents);

  bool c_was_down = false;
  bool captured_ok = true;
  while (!glfwWindowShouldClose(window_)) {
    const bool last = args_.frames && frames_ + 1 == args_.frames;
    frame(last);
    if (glfwGetKey(window_, GLFW_KEY_ESCAPE) == GLFW_PRESS) glfwSetWindowShouldClose(window_, 1);
    const bool c_down = glfwGetKey(window_, GLFW_KEY_C) == GLFW_PRESS;
    if (c_down && !c_was_down) capture(args_.capture.empty() ? "agents.abtrace" : args_.capture);
    c_was_down = c_down;
    if (last) break;
  }
  vk_check(vkDeviceWaitIdle(device_), "vkDeviceWaitIdle");

  if (timed_frames_)
    std::printf(
        "frames: %llu; mean frame %.2f ms (wall), GPU frame %.2f ms, autobatch %.2f ms "
        "per frame (over frames 4..%llu); group steps last frame %llu\n",
        static_cast<unsigned long long>(frames_), sum_frame_ms_ / timed_frames_,
        sum_gpu_frame_ms_ / timed_frames_, sum_autobatch_ms_ / timed_frames_,
        static_cast<unsigned long long>(frames_), static_cast<unsigned long long>(group_steps_));
  bool ok = true;
  if (args_.frames && !args_.capture.empty()) captured_ok = capture(args_.capture);
  ok = ok && captured_ok;
  if (args_.check) ok = check() && ok;
  destroy();  // so that messages about the teardown count too
  std::printf("validation messages: %d\n", g_validation_messages);
  return ok && g_validation_messages == 0 ? 0 : 1;
}

void App::destroy() {
  if (device_) vkDeviceWaitIdle(device_);
  if (imgui_ready_) {
    ImGui_ImplVulkan_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    imgui_ready_ = false;
  }
  run_.reset();
  program_.reset();
  context_.reset();
  if (device_) {
    if (shot_buffer_) vkDestroyBuffer(device_, shot_buffer_, nullptr);
    if (shot_memory_) vkFreeMemory(device_, shot_memory_, nullptr);
    if (queries_) vkDestroyQueryPool(device_, queries_, nullptr);
    if (pipeline_) vkDestroyPipeline(device_, pipeline_, nullptr);
    if (layout_) vkDestroyPipelineLayout(device_, layout_, nullptr);
    if (pool_) vkDestroyDescriptorPool(device_, pool_, nullptr);
    if (imgui_pool_) vkDestroyDescriptorPool(device_, imgui_pool_, nullptr);
    if (set_layout_) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
    for (auto s : render_done_)
      vkDestroySemaphore(device_, s, nullptr);
    for (auto f : framebuffers_)
      vkDestroyFramebuffer(device_, f, nullptr);
    for (auto v : views_)
      vkDestroyImageView(device_, v, nullptr);
    if (render_pass_) vkDestroyRenderPass(device_, render_pass_, nullptr);
    if (swapchain_) vkDestroySwapchainKHR(device_, swapchain_, nullptr);
    if (acquired_) vkDestroySemaphore(device_, acquired_, nullptr);
    if (fence_) vkDestroyFence(device_, fence_, nullptr);
    if (cmd_pool_) vkDestroyCommandPool(device_, cmd_pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
    device_ = VK_NULL_HANDLE;
  }
  if (surface_) vkDestroySurfaceKHR(instance_, surface_, nullptr);
  surface_ = VK_NULL_HANDLE;
  if (messenger_) {
    auto destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy_messenger) destroy_messenger(instance_, messenger_, nullptr);
    messenger_ = VK_NULL_HANDLE;
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
  instance_ = VK_NULL_HANDLE;
  if (window_) glfwDestroyWindow(window_);
  window_ = nullptr;
  glfwTerminate();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (int status = parse_args(argc, argv, args); status >= 0) return status;
  try {
    App app(args);
    const int status = app.run();
    return status;
  } catch (const Failure& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
