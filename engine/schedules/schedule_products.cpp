// The product kernel's dispatches (schedules.h, ProductDispatches; shaders/ab_product.glsl): for
// each product block, its (tile, summation block) pairs in as many dispatches as a device that
// caps a dispatch's loop iterations needs, each over every lane (a lane not waiting at the block
// returns at once).
#include <algorithm>

#include "engine/run/run_impl.h"
#include "engine/schedules/schedules.h"

namespace ab {

ProductDispatches::ProductDispatches(const VulkanRun::Impl& run, uint32_t lanes) {
  const VulkanProgram::Impl& prog = *run.prog;
  // What a dispatch may take under the device's loop cap (ab_common.glsl), with room for the
  // kernel's loops outside the pairs.
  const uint64_t per_dispatch =
      prog.target.loop_limit
          ? std::max<uint64_t>(1,
                               (prog.target.loop_limit - 2 * kProductPairLoops) / kProductPairLoops)
          : UINT64_MAX;
  for (const ProductBlock& p : prog.products) {
    ProductPush push;
    auto& w = push.words;
    w[AB_PRODUCT_BLOCK_ID] = static_cast<uint32_t>(p.block);
    w[AB_PRODUCT_NEXT] = static_cast<uint32_t>(p.next);
    w[AB_PRODUCT_M] = p.shape.m;
    w[AB_PRODUCT_K] = p.shape.k;
    w[AB_PRODUCT_P] = p.shape.p;
    w[AB_PRODUCT_A_BASE] = p.a.base;
    w[AB_PRODUCT_A_UNIFORM] = p.a.uniform;
    w[AB_PRODUCT_B_BASE] = p.b.base;
    w[AB_PRODUCT_B_UNIFORM] = p.b.uniform;
    w[AB_PRODUCT_DST] = p.dst_slot;
    w[AB_PRODUCT_TILE_B] = p.b.uniform && !p.a.uniform;
    w[AB_PRODUCT_LANES] = lanes;
    const uint64_t pairs = product_pairs(p);
    for (uint64_t first = 0; first < pairs; first += per_dispatch) {
      w[AB_PRODUCT_FIRST] = static_cast<uint32_t>(first);
      w[AB_PRODUCT_END] = static_cast<uint32_t>(std::min(pairs, first + per_dispatch));
      slices_.push_back(push);
    }
  }
}

void ProductDispatches::record(VulkanContext::Impl& ctx, VkCommandBuffer cmd,
                               VkPipelineLayout layout, VkPipeline kernel, uint32_t lanes,
                               VkBuffer indirect,
                               const std::function<VkDeviceSize(uint32_t)>& args_at) const {
  if (slices_.empty()) return;
  ctx.api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kernel);
  for (const ProductPush& push : slices_) {
    ctx.api.vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, AB_PUSH_PRODUCT,
                               sizeof(push), &push);
    if (indirect)
      ctx.api.vkCmdDispatchIndirect(cmd, indirect,
                                    args_at ? args_at(push.words[AB_PRODUCT_BLOCK_ID])
                                            : VkDeviceSize{AB_CTRL_INDIRECT_X * 4});
    else
      ctx.api.vkCmdDispatch(cmd, groups_for(lanes), 1, 1);
    compute_barrier(ctx, cmd);
  }
}

}  // namespace ab
