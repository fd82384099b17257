// The generated kernels' entry points, shaders/ab_entry_<kernel>.glsl, embedded at configure time
// (engine/CMakeLists.txt, ab_embed_shader_texts; a file's leading `//!` lines are left out). Each
// schedule hands its own to the code generator (schedule_entries.h).
#pragma once

namespace ab {

extern const char* const kAbEntryGlobalMaskedText;
extern const char* const kAbEntryGlobalCompactedText;
extern const char* const kAbEntryGlobalFusedText;
extern const char* const kAbEntryLocalSubgroupText;
extern const char* const kAbEntryLocalWorkgroupText;
extern const char* const kAbEntryLocalLaneText;
// The product kernel's body (shaders/ab_product.glsl; codegen/product_blocks.h).
extern const char* const kAbProductText;

}  // namespace ab
