// A custom compute kernel on the engine's Vulkan context: GLSL compiled with the engine's glslang
// path (and its SPIR-V disk cache), bound to N storage buffers, dispatched once per run() call.
// Host applications use it for work the autobatching engine does not express; the benchmark uses
// it for its hand-written per-lane kernels (the device's ceiling).
//
// Contract for the kernel text:
//   - a complete GLSL 450 compute shader with its own `#version` line and local size;
//   - storage buffers at set 0, bindings 0 .. buffer_count-1 (std430, 32-bit words), no others;
//   - at most one push_constant block, exactly options.push_constant_words words long.
// Every call returns errors as values (a kernel that does not compile, a wrong buffer count, a
// device failure); none throws.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autobatch/context.h"
#include "autobatch/expected.h"

namespace ab {

struct ComputeKernelOptions {
  uint32_t push_constant_words = 0;  // size of the kernel's push_constant block (0: none)
  bool disk_cache = true;            // cache the SPIR-V on disk (VulkanOptions::disk_cache's)
  std::string cache_dir;             // empty: $XDG_CACHE_HOME/autobatch or ~/.cache/autobatch
};

class ComputeKernel {
 public:
  struct Impl;
  // Compiles `glsl` and creates its pipeline. The message of a kernel that does not compile
  // starts with "compute kernel does not compile" and carries glslang's log.
  static Expected<std::shared_ptr<ComputeKernel>> create(std::shared_ptr<VulkanContext> context,
                                                         const std::string& glsl,
                                                         uint32_t buffer_count,
                                                         const ComputeKernelOptions& options = {});
  ~ComputeKernel();

  // Uploads buffers[i] to binding i (buffers.size() must equal buffer_count()), dispatches
  // `groups` x 1 x 1 workgroups (at least 1), waits for the device, and reads every buffer back
  // into buffers[i] at its own size (an empty buffer is bound as 16 zero bytes, read back as
  // nothing). `push_constants` must hold exactly options.push_constant_words words.
  Status run(std::vector<std::vector<uint32_t>>& buffers, uint32_t groups,
             const std::vector<uint32_t>& push_constants = {});

  // A kernel that works in bounded slices (lavapipe ends any shader loop after 65,535 iterations
  // without a word, so long work must stop, save its state and be dispatched again).
  struct Repeat {
    // Word 0 of buffers[flag_buffer] is the "not finished" flag: it is set to 0 on the device
    // before every dispatch and read back after it; any invocation that has work left writes a
    // non-zero value, and the kernel is dispatched again.
    uint32_t flag_buffer = 0;
    // At most this many dispatches; the flag buffer is read back as the last one left it, so a
    // non-zero word 0 there says work was left.
    uint32_t max_dispatches = 1000;
    // Bindings that live on the device only (state kept between dispatches): buffers[i] must be
    // empty and stays empty; device_words[k] words are allocated for device_only[k], contents
    // undefined until the kernel writes them, never uploaded or read back.
    std::vector<uint32_t> device_only;
    std::vector<uint64_t> device_words;
  };
  // As run(), but dispatches until the flag stays 0 (see Repeat): one upload before the first
  // dispatch, one word read back after each, every host buffer read back after the last.
  // Returns the number of dispatches.
  Expected<uint32_t> run_repeated(std::vector<std::vector<uint32_t>>& buffers, uint32_t groups,
                                  const std::vector<uint32_t>& push_constants,
                                  const Repeat& repeat);

  uint32_t buffer_count() const;
  double compile_seconds() const;  // glslang (or the cache) and pipeline creation

 private:
  explicit ComputeKernel(std::unique_ptr<Impl> impl);
  Expected<uint32_t> run_impl(std::vector<std::vector<uint32_t>>& buffers, uint32_t groups,
                              const std::vector<uint32_t>& push_constants, const Repeat* repeat);
  std::unique_ptr<Impl> impl_;
};

// The GLSL helpers behind the language's operations, exactly as generated kernels use them:
// ab_div, ab_rem, ab_to_int, ab_min, ..., the Philox4x32-10 stream ab_rand_uniform(lane, draw)
// and ab_rand_normal(lane, draw), and the fault code they set (ab_fault_code). Paste it into a
// kernel after the `#version` line and after a uniform or push_constant block instance named `P`
// with uint members `seed_lo` and `seed_hi` (the random seed's low and high words). Kernels that
// must equal the interpreter bit for bit also declare their float results `precise`.
const std::string& op_prelude_glsl();

}  // namespace ab
