// The GLSL of shaders/ that the run-time code generator puts together, embedded at configure time
// (codegen/CMakeLists.txt, ab_embed_shader_texts; a file's leading `//!` lines, its description,
// are left out):
// - ab_layout.h and ab_common.glsl, so the generated GLSL declares exactly what the hand-written
//   kernels declare;
// - ab_math.glsl, the transcendental functions shared with the CPU (ir/float_math.h), and
//   ab_ops.glsl, the op helpers and Philox: together the prelude (glsl_prelude.h);
// - ab_raise for each residency (ab_raise_*.glsl).
// The kernels' entry points (ab_entry_*.glsl) are not here: each schedule supplies its own
// and the code generator takes them as input (glsl_codegen.h, KernelEntry).
#pragma once

namespace ab {

extern const char* const kAbLayoutText;
extern const char* const kAbCommonText;
extern const char* const kAbMathText;
extern const char* const kAbOpsText;
extern const char* const kAbRaiseMemoryText;
extern const char* const kAbRaiseRegistersText;

}  // namespace ab
