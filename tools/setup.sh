#!/usr/bin/env bash
# Installs what the build needs (Debian packages, only those missing), then configures and
# builds sonata into build/. Used by tools/demo.sh and tools/test.sh; safe to re-run.
#   SONATA_BUILD_DIR   build folder (default: build)
#   SONATA_CUDA        AUTO | ON | OFF (default AUTO: on when nvcc is found)
#   SONATA_CUDA_ARCHS  CUDA architectures (default: the local GPU's, else 90; CMake's own
#                      default for a plain configure is "80;90")
#   SONATA_EXTRA_PACKAGES  more Debian packages to install (the demos add espeak-ng, sox)
#   SONATA_BUILD_TARGETS   build only these targets (default: everything)
#   SONATA_CMAKE_ARGS      more CMake options for the configure (tools/test.sh passes
#                          -DSONATA_UNIT_TESTS=...)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config libopenblas-openmp-dev catch2 nlohmann-json3-dev libcli11-dev libsndfile1-dev libpng-dev libjpeg62-turbo-dev libopenmpi-dev openmpi-bin libboost-context-dev)
read -r -a extra_packages <<<"${SONATA_EXTRA_PACKAGES:-}"
packages+=("${extra_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir=${SONATA_BUILD_DIR:-build}
archs=${SONATA_CUDA_ARCHS:-}
if [ -z "$archs" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    archs=native
  else
    archs=90  # no GPU here: compile every kernel once, for Hopper, to prove it builds
  fi
fi
read -r -a cmake_args <<<"${SONATA_CMAKE_ARGS:-}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSONATA_CUDA="${SONATA_CUDA:-AUTO}" -DCMAKE_CUDA_ARCHITECTURES="$archs" "${cmake_args[@]}" \
  >"$build_dir.configure.log" 2>&1 \
  || { cat "$build_dir.configure.log"; exit 1; }
grep -E "^-- sonata:" "$build_dir.configure.log" || true
read -r -a targets <<<"${SONATA_BUILD_TARGETS:-}"
cmake --build "$build_dir" -j "$(nproc)" ${targets[@]/#/--target }
