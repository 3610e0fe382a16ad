#!/usr/bin/env bash
# README command 2: set up, build (CPU and, where nvcc exists, CUDA code), run every test.
# CUDA tests run when a GPU is present and are reported by ctest as skipped otherwise.
# The CPU tests also run once under AddressSanitizer + LeakSanitizer (build-asan/), so a
# leak or an over-read fails the run, and tools/fuzz.sh fuzzes the file readers for a bounded
# time; ctest's summary of the main build comes last.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build_dir=${SONATA_BUILD_DIR:-build}

if [ "${SONATA_LEAK_CHECK:-1}" = 1 ]; then
  echo "== CPU tests under AddressSanitizer + LeakSanitizer (build-asan/) =="
  # -O1 -g1 (line tables only) and only the test executables: this stage repeats the main
  # build's compile, so it is kept to what the sanitizer run needs.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
    -DSONATA_CUDA=OFF -DSONATA_MPI=OFF -DSONATA_SANITIZE=ON >build-asan.configure.log 2>&1 ||
    { cat build-asan.configure.log; exit 1; }
  # The CUDA tests are left out: without CUDA they only skip (the main build compiles them).
  cmake --build build-asan -j "$(nproc)" --target sonata_tests
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j "$(nproc)" \
    --timeout 600 -E '^(cuda/|bench/|sonata_cuda_tests_NOT_BUILT)' >build-asan/ctest.log 2>&1 ||
    { cat build-asan/ctest.log; exit 1; }
  tail -3 build-asan/ctest.log
fi

# libFuzzer on the safetensors and .npy readers (build-fuzz/, clang): a bounded run from the
# committed seeds; SONATA_FUZZ_SECONDS is per reader, 0 skips the stage.
if [ "${SONATA_FUZZ_SECONDS:-30}" != 0 ]; then
  echo "== libFuzzer on the file readers (build-fuzz/) =="
  tools/fuzz.sh "${SONATA_FUZZ_SECONDS:-30}"
fi

echo "== all tests (${build_dir}/) =="
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 600
