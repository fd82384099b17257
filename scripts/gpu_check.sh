#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU (issue 44): builds autobatch, runs the Vulkan tests
# and the bench's NUTS product rows (nuts_logreg_matmul, nuts_gaussian_matmul: docs/nuts.md,
# Figure 6) at 1024, 4096 and 16384 chains on the vm and the local and global schedules, and
# writes everything into one report file. CI never runs it.
#
# Usage: scripts/gpu_check.sh [--lavapipe] [--report FILE] [--build DIR] [--no-build]
#   --lavapipe   no GPU: the CPU device, only the product tests
#                (tests/engine/products_vulkan_test.cpp), the Gaussian's rows at 4 and 8 chains
#                for one transition and a 2-chain regression, so the script itself is tested
#   --report     the report file (default: gpu_check_report.txt in the current directory)
#   --build      the build directory (default: build-gpu-check beside the sources)
#   --no-build   use the build directory as it is
# Exit status: 0 when the build, every test and every bench row passed; 1 otherwise (the report
# says which); 2 bad usage.
#
# On a lent NVIDIA machine (the device tool, /work/.library/device/README.md) the Vulkan loader
# comes from the .gl/*.deb packages the tool's README says to carry: the script unpacks them when
# no libvulkan is installed, and points the loader at the NVIDIA driver's ICD when it finds one.
# Unverified on NVIDIA: no GPU was lent to the session that wrote it (docs/engine.md).
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd -P)
report=$PWD/gpu_check_report.txt
build=$here/build-gpu-check
lavapipe=0
do_build=1
while [ $# -gt 0 ]; do
  case $1 in
    --lavapipe) lavapipe=1 ;;
    --report) report=$2; shift ;;
    --build) build=$2; shift ;;
    --no-build) do_build=0 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case $report in /*) ;; *) report=$PWD/$report ;; esac

failed=0
section() { printf '\n== %s ==\n' "$1" >>"$report"; }
# Runs "$@", appending its output to the report; a failure is counted, not fatal.
step() {
  local name=$1; shift
  section "$name: $*"
  local start=$SECONDS
  if "$@" >>"$report" 2>&1; then
    echo "-- $name: ok ($((SECONDS - start)) s)" >>"$report"
  else
    echo "-- $name: FAILED (exit $?, $((SECONDS - start)) s)" >>"$report"
    failed=1
  fi
}

: >"$report" || exit 1
{
  echo "autobatch gpu_check report"
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "host: $(uname -srm), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "mode: $([ $lavapipe = 1 ] && echo 'lavapipe (small chain counts)' || echo GPU)"
} >>"$report"

if [ $lavapipe = 0 ]; then
  # The loader and the driver's ICD on a bare lent machine (the device tool's README).
  if ! ldconfig -p 2>/dev/null | grep -q libvulkan && ls "$here"/.gl/*.deb >/dev/null 2>&1; then
    for f in "$here"/.gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd; fi
  command -v nvidia-smi >/dev/null && step nvidia-smi nvidia-smi
fi

if [ $do_build = 1 ]; then
  step configure cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAB_FUZZ=OFF
  step build ninja -C "$build" autobatch autobatch_engine_tests
fi
cli=$build/autobatch
step devices "$cli" devices

if [ $lavapipe = 1 ]; then
  # A regression gradient is two rounds of some 60 dispatches on lavapipe (seconds under load):
  # the CPU device runs the Gaussian's rows only, one transition of a few chains.
  chains=4,8
  programs=nuts_gaussian_matmul
  rows=(--transitions 1)
  step tests "$build/tests/autobatch_engine_tests" -tc='products vulkan*'
else
  chains=1024,4096,16384
  programs=nuts_logreg_matmul
  rows=()
  step tests ctest --test-dir "$build" -L vulkan -LE 'slow|window' --output-on-failure
fi

# The global schedule keeps products inline, which refuses the regression's 1,000,000-word X
# (docs/engine.md, "Matrix products"): it runs the Gaussian only.
out=$(dirname "$report")
if [ $programs = nuts_logreg_matmul ]; then
  step bench-regression "$cli" bench --programs nuts_logreg_matmul --systems vm,local-lane \
    --batches "$chains" --repeats 1 "${rows[@]}" --json "$out/gpu_check_regression.json"
fi
step bench-gaussian "$cli" bench --programs nuts_gaussian_matmul \
  --systems vm,local-lane,global-compacted --batches "$chains" --repeats 1 "${rows[@]}" \
  --json "$out/gpu_check_gaussian.json"
# Peak memory of the largest regression run (lavapipe's device memory is host memory; on a GPU
# this is the host's share only: nvidia-smi above gives the device's).
largest=${chains##*,}
[ $lavapipe = 1 ] && largest=2  # the regression's kernels and a short run, not a measurement
draws=10
[ $lavapipe = 1 ] && draws=1
# The product form of the 100-d regression (named logistic_regression.ab once the loop forms go).
model=$here/samples/models/logistic_regression_matmul.ab
[ -f "$model" ] || model=$here/samples/models/logistic_regression.ab
if [ -x /usr/bin/time ]; then
  step memory /usr/bin/time -v "$cli" sample "$model" \
    --backend vulkan --chains "$largest" --draws "$draws" --warmup "$draws" \
    -u X=@"$here/samples/data/logreg_X.npy" -u y=@"$here/samples/data/logreg_y.npy" \
    --out "$out/gpu_check_fit"
fi

section summary
if [ $failed = 0 ]; then echo "every step passed" >>"$report"; else echo "some step FAILED" >>"$report"; fi
echo "report: $report"
exit $failed
