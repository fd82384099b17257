#include "engine/src/shader_compiler.h"

#include <fmt/format.h>
#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <spirv-tools/libspirv.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace ab {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCompilerSettings = "glslang vulkan1.2 spirv1.5 opt";

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

bool read_file(const fs::path& path, std::vector<uint32_t>& words) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<size_t>(in.tellg());
  if (size == 0 || size % 4 != 0) return false;
  words.resize(size / 4);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(words.data()), static_cast<std::streamsize>(size));
  return static_cast<bool>(in) && words[0] == 0x07230203u;
}

void write_file_atomically(const fs::path& path, const void* data, size_t size) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + fmt::format(".tmp{}", static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) return;
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

uint64_t fnv1a64(const std::string& bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

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
  fs::path cached;
  if (!cache_dir.empty()) {
    const uint64_t key = fnv1a64(glsl, fnv1a64(macro + "|" + kCompilerSettings));
    cached = fs::path(cache_dir) / fmt::format("{:016x}.spv", key);
    if (read_file(cached, result.spirv)) {
      result.from_cache = true;
      result.seconds = elapsed();
      return result;
    }
  }
  auto words = glslang_compile(glsl, macro);
  if (!words) return Error{words.error()};
  result.spirv = std::move(*words);
  if (!cached.empty()) write_file_atomically(cached, result.spirv.data(), result.spirv.size() * 4);
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
