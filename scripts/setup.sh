#!/usr/bin/env bash
# Installs the Debian packages autobatch needs (when missing) and builds it into build/.
# Idempotent: a second run only rebuilds what changed. Needs root (or sudo) on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev doctest-dev libstb-dev libzstd-dev libxxhash-dev
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  glslc libshaderc-dev glslang-tools spirv-tools
  libimgui-dev libglfw3-dev xvfb xauth gnuplot-nox
  clang-14 libfuzzer-14-dev libclang-rt-14-dev clang-format-14
  python3-dev python3-numpy python3-scipy python3-pytest pybind11-dev python3-pybind11
  libopenblas-dev  # optional at run time: `autobatch bench --programs matmul` compares with it
  openmpi-bin libopenmpi-dev  # `run` and `sample` under mpirun, and their tests (AB_MPI)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# A developer's machine with ccache rebuilds a fresh clone from its cache; CI has none.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
ninja -C build -j"$(nproc)" >&2
