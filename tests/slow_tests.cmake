# Test cases that take 5 s or more on the 2-core development machine (ctest's timings):
# labelled `slow` instead of `quick`. Re-measure with `ctest -j2` and update when cases move.
set(AB_SLOW_TEST_CASES
  "engine_codegen_test: engine: random programs equal interp on every schedule and pass spirv-val"
  "engine_samples_test: engine: every sample at 20000 lanes on global/compacted, local/subgroup, local/lane"
  "engine_samples_test: engine: every sample on every schedule equals interp at 1, 7, 64 and 1000 lanes"
  "engine_trace_test: engine: global trace and statistics equal the VM's on every sample"
  "engine_codegen_test: engine: random programs at 20000 lanes on global/compacted, local/subgroup, local/lane"
  "engine_codegen_test: engine: every module generated for the samples passes spirv-val"
  "engine_cache_test: engine cache: a damaged SPIR-V entry is recompiled and replaced"
  "tail_calls_test: tail calls: a million iterations at depth 3, mutual recursion to 100000"
  "engine_trace_test: engine: stepping the global schedule N steps reaches the VM's state after N steps"
  "engine_trace_test: engine: global lane lists give the VM's trace and results at every batch size"
  "engine_compile_test: engine: split random programs equal interp on every schedule"
  "native_nuts_test: native nuts: the 10000-point logistic regression equals vm bit for bit"
  "sample_vulkan_test: sample on vulkan: local and global schedules give interp's draws bit for bit"
  "sample_vulkan_test: sample on vulkan: a bounded struct model gives the vm's draws and its known means"
  "sample_vulkan_test: sample on vulkan: after warm-up the 3-d Gaussian's draws are interp's on every schedule"
  "embed_agents_test: embed agents: frames under xvfb with validation, a screenshot, a capture, --check"
  "autodiff_vulkan_test: autodiff on vulkan: every construct's gradient is the vm's bit for bit"
  "autodiff_vulkan_test: autodiff on vulkan: random float functions' gradients are the vm's bit for bit"
  "residency_test: residency: a NUTS tree over 24 coordinates equals interp in registers and in memory"
  "residency_test: residency: only scalars or pairs in registers give interp's results"
)
