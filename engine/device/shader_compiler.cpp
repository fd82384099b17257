// See shader_compiler.h: glslang, the SPIR-V disk cache and its checks, spirv-val.
#include "engine/device/shader_compiler.h"

#include <fmt/format.h>
#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <glslang/build_info.h>
#include <spirv-tools/libspirv.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "engine/device/cache_file.h"

namespace ab {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCompilerSettings = "glslang vulkan1.2 spirv1.5 opt";
constexpr uint32_t kSpirvMagic = 0x07230203u;

// glslang's process-wide state, initialized once (glslang_initialize_process is not reentrant).
void initialize_glslang() {
  static const bool initialized = [] { return glslang_initialize_process() != 0; }();
  (void)initialized;
}

// GLSL compute source -> SPIR-V words, or an error message.
Expected<std::vector<uint32_t>> glslang_compile(const std::string& glsl, const std::string& macro) {
  initialize_glslang();
  glslang_input_t input{};
  input.language = GLSLANG_SOURCE_GLSL;
  input.stage = GLSLANG_STAGE_COMPUTE;
  input.client = GLSLANG_CLIENT_VULKAN;
  input.client_version = GLSLANG_TARGET_VULKAN_1_2;
  input.target_language = GLSLANG_TARGET_SPV;
  input.target_language_version = GLSLANG_TARGET_SPV_1_5;
  input.code = glsl.c_str();
  input.default_version = 450;
  input.default_profile = GLSLANG_NO_PROFILE;
  input.messages =
      static_cast<glslang_messages_t>(GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT);
  input.resource = glslang_default_resource();
  glslang_shader_t* shader = glslang_shader_create(&input);
  const std::string preamble = macro.empty() ? "" : "#define " + macro + "\n";
  glslang_shader_set_preamble(shader, preamble.c_str());
  std::string error;
  std::vector<uint32_t> words;
  if (!glslang_shader_preprocess(shader, &input) || !glslang_shader_parse(shader, &input)) {
    error = glslang_shader_get_info_log(shader);
  } else {
    glslang_program_t* program = glslang_program_create();
    glslang_program_add_shader(program, shader);
    if (!glslang_program_link(program, input.messages)) {
      error = glslang_program_get_info_log(program);
    } else {
      glslang_spv_options_t spv{};
      spv.disable_optimizer = false;
      glslang_program_SPIRV_generate_with_options(program, GLSLANG_STAGE_COMPUTE, &spv);
      const unsigned* ptr = glslang_program_SPIRV_get_ptr(program);
      words.assign(ptr, ptr + glslang_program_SPIRV_get_size(program));
    }
    glslang_program_delete(program);
  }
  glslang_shader_delete(shader);
  if (!error.empty() || words.empty())
    return Error{fmt::format("generated GLSL does not compile ({}): {}", macro, error)};
  return words;
}

CacheKey spirv_cache_key(const std::string& glsl, const std::string& macro) {
  CacheKeyBuilder key;
  key.add("autobatch spirv").add(kCompilerSettings);
  key.add(fmt::format("glslang {}.{}.{}{}", GLSLANG_VERSION_MAJOR, GLSLANG_VERSION_MINOR,
                      GLSLANG_VERSION_PATCH, GLSLANG_VERSION_FLAVOR));
  // glslang's optimizer is SPIRV-Tools (linked statically): its version changes the output too.
  key.add(spvSoftwareVersionDetailsString());
  key.add(macro).add(glsl);
  return key.finish();
}

// The words of a cached payload if they are a SPIR-V module spirv-val accepts. The file hash
// already caught accidents; this keeps a module that the driver could crash on (say, an entry
// written by a broken build) from ever reaching vkCreateShaderModule.
std::optional<std::vector<uint32_t>> checked_spirv(const std::vector<char>& payload) {
  if (payload.empty() || payload.size() % 4 != 0) return std::nullopt;
  std::vector<uint32_t> words(payload.size() / 4);
  std::memcpy(words.data(), payload.data(), payload.size());
  if (words[0] != kSpirvMagic || !validate_spirv(words).empty()) return std::nullopt;
  return words;
}

}  // namespace

std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "autobatch").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "autobatch").string();
  return {};
}

Expected<CompiledShader> compile_glsl(const std::string& glsl, const std::string& macro,
                                      const std::string& cache_dir) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  CompiledShader result;
  std::string cached;
  CacheKey key;
  if (!cache_dir.empty()) {
    key = spirv_cache_key(glsl, macro);
    cached = (fs::path(cache_dir) / (key.hex() + ".spv")).string();
    if (auto payload = read_cache_file(cached, CacheFileKind::Spirv, key)) {
      if (auto words = checked_spirv(*payload)) {
        result.spirv = std::move(*words);
        result.from_cache = true;
        result.seconds = elapsed();
        return result;
      }
    }
  }
  auto words = glslang_compile(glsl, macro);
  if (!words) return Error{words.error()};
  result.spirv = std::move(*words);
  // Only what a later read would accept is stored; a module spirv-val rejects is still returned
  // (as before the cache checked it), so the driver's or the validation layer's message shows.
  if (!cached.empty() && validate_spirv(result.spirv).empty())
    write_cache_file(cached, CacheFileKind::Spirv, key, result.spirv.data(),
                     result.spirv.size() * 4);
  result.seconds = elapsed();
  return result;
}

std::string validate_spirv(const std::vector<uint32_t>& spirv) {
  spv_context context = spvContextCreate(SPV_ENV_VULKAN_1_2);
  spv_const_binary_t binary{spirv.data(), spirv.size()};
  spv_diagnostic diagnostic = nullptr;
  const spv_result_t r = spvValidate(context, &binary, &diagnostic);
  std::string message;
  if (r != SPV_SUCCESS)
    message = diagnostic && diagnostic->error ? diagnostic->error : "invalid SPIR-V";
  spvDiagnosticDestroy(diagnostic);
  spvContextDestroy(context);
  return message;
}

}  // namespace ab
