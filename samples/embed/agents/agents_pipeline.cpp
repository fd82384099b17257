// The game sample's graphics pipeline (agents_pipeline.h).
#include "agents_pipeline.h"

namespace agents {
namespace {

const uint32_t kVertSpirv[] =
#include "agents.vert.inc"
    ;
const uint32_t kFragSpirv[] =
#include "agents.frag.inc"
    ;

}  // namespace

void AgentsPipeline::create(const WindowDevice& gpu, const Swapchain& sc,
                            const ab::DeviceRegion& output) {
  create(gpu, sc, output, {kVertSpirv, sizeof kVertSpirv, kFragSpirv, sizeof kFragSpirv});
}

// The output region, bound from the largest aligned offset at or below it.
void AgentsPipeline::create(const WindowDevice& gpu, const Swapchain& sc,
                            const ab::DeviceRegion& output, const PipelineShaders& shaders) {
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(gpu.physical, &props);
  const uint64_t align = props.limits.minStorageBufferOffsetAlignment;
  const uint64_t bind_offset = output.offset / align * align;
  const uint64_t bind_range = output.offset + output.size - bind_offset;
  if (bind_range > props.limits.maxStorageBufferRange)
    throw Failure("the run's output region is larger than maxStorageBufferRange");
  base_word = static_cast<uint32_t>((output.offset - bind_offset) / 4);

  bind_output(gpu.device, output.buffer, bind_offset, bind_range, shaders.stages);
  create_layout_and_pipeline(gpu.device, sc, shaders);
}

void AgentsPipeline::bind_output(VkDevice device, VkBuffer buffer, uint64_t offset, uint64_t range,
                                 VkShaderStageFlags stages) {
  VkDescriptorSetLayoutBinding binding{};
  binding.binding = 0;
  binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  binding.descriptorCount = 1;
  binding.stageFlags = stages;
  VkDescriptorSetLayoutCreateInfo dli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dli.bindingCount = 1;
  dli.pBindings = &binding;
  vk_check(vkCreateDescriptorSetLayout(device, &dli, nullptr, &set_layout),
           "vkCreateDescriptorSetLayout");
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &size;
  vk_check(vkCreateDescriptorPool(device, &dpi, nullptr, &pool), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dai.descriptorPool = pool;
  dai.descriptorSetCount = 1;
  dai.pSetLayouts = &set_layout;
  vk_check(vkAllocateDescriptorSets(device, &dai, &set), "vkAllocateDescriptorSets");
  VkDescriptorBufferInfo info{buffer, offset, range};
  VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  write.dstSet = set;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  write.pBufferInfo = &info;
  vkUpdateDescriptorSets(device, 1, &write, 0, nullptr);
}

void AgentsPipeline::create_layout_and_pipeline(VkDevice device, const Swapchain& sc,
                                                const PipelineShaders& shaders) {
  VkPushConstantRange push{shaders.stages, 0, shaders.push_bytes};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &push;
  vk_check(vkCreatePipelineLayout(device, &pli, nullptr, &layout), "vkCreatePipelineLayout");

  auto shader = [&](const uint32_t* code, size_t bytes) {
    VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = bytes;
    smi.pCode = code;
    VkShaderModule m;
    vk_check(vkCreateShaderModule(device, &smi, nullptr, &m), "vkCreateShaderModule");
    return m;
  };
  VkShaderModule vert = shader(shaders.vert, shaders.vert_bytes);
  VkShaderModule frag = shader(shaders.frag, shaders.frag_bytes);
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
  VkViewport viewport{0, 0, float(sc.extent.width), float(sc.extent.height), 0, 1};
  VkRect2D scissor{{0, 0}, sc.extent};
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
  gpi.layout = layout;
  gpi.renderPass = sc.render_pass;
  const VkResult r = vkCreateGraphicsPipelines(device, VK_NULL_HANDLE, 1, &gpi, nullptr, &pipeline);
  vkDestroyShaderModule(device, vert, nullptr);
  vkDestroyShaderModule(device, frag, nullptr);
  vk_check(r, "vkCreateGraphicsPipelines");
}

void AgentsPipeline::record_draw(VkCommandBuffer cmd, uint32_t agents, VkExtent2D extent) const {
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, layout, 0, 1, &set, 0, nullptr);
  struct {
    uint32_t base, lanes;
    float size, aspect;
  } push{base_word, agents, 2.5f / float(extent.height),
         float(extent.width) / float(extent.height)};
  vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof push, &push);
  vkCmdDraw(cmd, agents * 6, 1, 0, 0);
}

void AgentsPipeline::destroy(VkDevice device) {
  if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
  if (layout) vkDestroyPipelineLayout(device, layout, nullptr);
  if (pool) vkDestroyDescriptorPool(device, pool, nullptr);
  if (set_layout) vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
}

}  // namespace agents
