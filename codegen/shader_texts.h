// The GLSL of shaders/ that the run-time code generator puts together, embedded at configure time
// (engine/CMakeLists.txt; a file's leading `//!` lines, its description, are left out):
// - ab_layout.h and ab_common.glsl, so the generated GLSL declares exactly what the hand-written
//   kernels declare;
// - ab_math.glsl, the transcendental functions shared with the CPU (ir/float_math.h), and
//   ab_ops.glsl, the op helpers and Philox: together the prelude (glsl_prelude.h);
// - the pieces of glsl_codegen.cpp's assembly: ab_raise for each residency (ab_raise_*.glsl) and
//   the kernels' entry points (ab_entry_*.glsl), some with names or lines it fills in.
#pragma once

namespace ab {

extern const char* const kAbLayoutText;
extern const char* const kAbCommonText;
extern const char* const kAbMathText;
extern const char* const kAbOpsText;
extern const char* const kAbRaiseMemoryText;
extern const char* const kAbRaiseRegistersText;
extern const char* const kAbEntryMemoryText;
extern const char* const kAbEntryRegistersText;
extern const char* const kAbEntryLaneText;

}  // namespace ab
