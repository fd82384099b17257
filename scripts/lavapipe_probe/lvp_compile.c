// lvp_compile: times lavapipe's compile of a compute SPIR-V module (engine layout: 32 storage
// buffers in set 0, 128 bytes of push constants): pipeline creation, then one dispatch of one
// workgroup with all push constants zero (the engine's empty first dispatch), where llvmpipe
// compiles. Usage: lvp_compile file.spv [file.spv ...]   (a .spv with the engine's 48-byte cache
// header is accepted)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <vulkan/vulkan.h>

#define CHECK(x)                                                       \
  do {                                                                 \
    VkResult r_ = (x);                                                 \
    if (r_ != VK_SUCCESS) {                                            \
      fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, r_); \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char** argv) {
  VkApplicationInfo app = {
      VK_STRUCTURE_TYPE_APPLICATION_INFO, 0, "lvp_compile", 1, 0, 0, VK_API_VERSION_1_2};
  VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, 0, 0, &app};
  VkInstance inst;
  CHECK(vkCreateInstance(&ici, 0, &inst));
  uint32_t n = 8;
  VkPhysicalDevice pds[8];
  CHECK(vkEnumeratePhysicalDevices(inst, &n, pds));
  VkPhysicalDevice pd = pds[0];
  float prio = 1;
  VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, 0, 0, 0, 1, &prio};
  VkPhysicalDeviceVulkan12Features f12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12};
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f2, 0, 1, &qci};
  VkDevice dev;
  CHECK(vkCreateDevice(pd, &dci, 0, &dev));
  VkQueue q;
  vkGetDeviceQueue(dev, 0, 0, &q);

  VkBufferCreateInfo bci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, 0, 0, 1 << 20,
                            VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
  VkBuffer buf;
  CHECK(vkCreateBuffer(dev, &bci, 0, &buf));
  VkMemoryRequirements mr;
  vkGetBufferMemoryRequirements(dev, buf, &mr);
  VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, 0, mr.size, 0};
  VkDeviceMemory mem;
  CHECK(vkAllocateMemory(dev, &mai, 0, &mem));
  CHECK(vkBindBufferMemory(dev, buf, mem, 0));

  enum { B = 32 };
  VkDescriptorSetLayoutBinding binds[B];
  for (int i = 0; i < B; ++i)
    binds[i] = (VkDescriptorSetLayoutBinding){i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                              VK_SHADER_STAGE_COMPUTE_BIT, 0};
  VkDescriptorSetLayoutCreateInfo dslci = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, 0,
                                           0, B, binds};
  VkDescriptorSetLayout dsl;
  CHECK(vkCreateDescriptorSetLayout(dev, &dslci, 0, &dsl));
  VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  VkPipelineLayoutCreateInfo plci = {
      VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, 0, 0, 1, &dsl, 1, &pcr};
  VkPipelineLayout pl;
  CHECK(vkCreatePipelineLayout(dev, &plci, 0, &pl));
  VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, B};
  VkDescriptorPoolCreateInfo dpci = {
      VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, 0, 0, 1, 1, &ps};
  VkDescriptorPool dp;
  CHECK(vkCreateDescriptorPool(dev, &dpci, 0, &dp));
  VkDescriptorSetAllocateInfo dsai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, 0, dp, 1,
                                      &dsl};
  VkDescriptorSet ds;
  CHECK(vkAllocateDescriptorSets(dev, &dsai, &ds));
  VkDescriptorBufferInfo dbi = {buf, 0, VK_WHOLE_SIZE};
  for (int i = 0; i < B; ++i) {
    VkWriteDescriptorSet w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, 0, ds,  i, 0, 1,
                              VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,      0, &dbi};
    vkUpdateDescriptorSets(dev, 1, &w, 0, 0);
  }
  VkCommandPoolCreateInfo cpci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, 0, 0, 0};
  VkCommandPool cp;
  CHECK(vkCreateCommandPool(dev, &cpci, 0, &cp));

  for (int a = 1; a < argc; ++a) {
    FILE* fp = fopen(argv[a], "rb");
    if (!fp) {
      perror(argv[a]);
      return 1;
    }
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char* data = malloc(size);
    if (fread(data, 1, size, fp) != (size_t)size) return 1;
    fclose(fp);
    unsigned char* code = data;
    if (size > 48 && memcmp(data, "abcache\n", 8) == 0) {
      code += 48;
      size -= 48;
    }
    VkShaderModuleCreateInfo smci = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, 0, 0, size,
                                     (uint32_t*)code};
    double w0 = now(), c0 = cpu();
    VkShaderModule sm;
    CHECK(vkCreateShaderModule(dev, &smci, 0, &sm));
    VkComputePipelineCreateInfo cpi = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                       0,
                                       0,
                                       {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, 0, 0,
                                        VK_SHADER_STAGE_COMPUTE_BIT, sm, "main", 0},
                                       pl,
                                       0,
                                       -1};
    VkPipeline p;
    CHECK(vkCreateComputePipelines(dev, 0, 1, &cpi, 0, &p));
    double w1 = now(), c1 = cpu();
    VkCommandBufferAllocateInfo cbai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, 0, cp,
                                        VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkCommandBuffer cb;
    CHECK(vkAllocateCommandBuffers(dev, &cbai, &cb));
    VkCommandBufferBeginInfo cbbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK(vkBeginCommandBuffer(cb, &cbbi));
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &ds, 0, 0);
    unsigned char zeros[128] = {0};
    vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 128, zeros);
    vkCmdDispatch(cb, 1, 1, 1);
    CHECK(vkEndCommandBuffer(cb));
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, 0, 0, 0, 0, 1, &cb};
    CHECK(vkQueueSubmit(q, 1, &si, 0));
    CHECK(vkQueueWaitIdle(q));
    double w2 = now(), c2 = cpu();
    printf("%s: %ld words, create %.2f s (cpu %.2f), first dispatch %.2f s (cpu %.2f)\n", argv[a],
           size / 4, w1 - w0, c1 - c0, w2 - w1, c2 - c1);
    fflush(stdout);
    vkDestroyPipeline(dev, p, 0);
    vkDestroyShaderModule(dev, sm, 0);
    free(data);
  }
  return 0;
}
