#!/bin/sh
# Times lavapipe's compile of kernels from the SPIR-V cache, one at a time, with the LLVM pass
# runs counted and timed (docs/nuts.md, "Where lavapipe's compile time goes"):
#   scripts/lavapipe_probe/probe.sh ~/.cache/autobatch/<key>.spv ...
# (an empty XDG_CACHE_HOME for an `autobatch sample` fills a cache with exactly its kernels).
# Add `perf record -F 100 --call-graph dwarf` in front of the last line to see the passes.
set -e
here=$(dirname "$0")
out=${TMPDIR:-/tmp}/lavapipe_probe
mkdir -p "$out"
cc -O1 -o "$out/lvp_compile" "$here/lvp_compile.c" -lvulkan
cc -O1 -shared -fPIC -o "$out/llvm_passes_shim.so" "$here/llvm_passes_shim.c" -ldl -l:libLLVM-15.so.1
MESA_SHADER_CACHE_DISABLE=true LP_NUM_THREADS=1 LD_PRELOAD="$out/llvm_passes_shim.so" \
  "$out/lvp_compile" "$@"
