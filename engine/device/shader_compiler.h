// GLSL -> SPIR-V at run time, cached on disk, and SPIR-V validation.
//
// The compiler is glslang's C API (the compiler libshaderc wraps). Debian 12's libshaderc.so
// cannot be linked into an application: it expects glslang's C++ symbols from the executable
// with an ABI that glslang-dev's archives do not match, and crashes in GlslangToSpv.
//
// The cache key is a 128-bit hash of the GLSL text, the macro, the compiler settings and the
// glslang and SPIRV-Tools versions; entries live in `cache_dir` (default:
// $XDG_CACHE_HOME/autobatch, else ~/.cache/autobatch) as <key>.spv, in the self-verifying format of
// cache_file.h. An entry is used only if its header names this key, its SPIR-V hashes to the stored
// hash and spirv-val accepts it; anything else is a miss: compile, and replace the entry
// atomically. A cache that cannot be read or written is skipped silently: it only saves time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/expected.h"

namespace ab {

std::string default_cache_dir();

struct CompiledShader {
  std::vector<uint32_t> spirv;
  bool from_cache = false;
  double seconds = 0;  // time spent compiling (or loading from the cache)
};

// Compiles `glsl` with `macro` defined (empty: none). `cache_dir` empty disables the cache.
Expected<CompiledShader> compile_glsl(const std::string& glsl, const std::string& macro,
                                      const std::string& cache_dir);

// Runs the SPIR-V validator (Vulkan 1.2 rules) on a module; empty string if valid.
std::string validate_spirv(const std::vector<uint32_t>& spirv);

}  // namespace ab
