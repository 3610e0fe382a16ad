#!/usr/bin/env bash
# README command 2: set up, build (CPU and, where nvcc exists, CUDA code), run every test.
# CUDA tests run on the card when a GPU is present; the main build reports them as skipped
# otherwise. One sanitizer build (build-asan/) runs the CPU tests under AddressSanitizer +
# LeakSanitizer, so a leak or an over-read fails the run, and, compiled against the CUDA
# emulator (SONATA_CUDA=EMU, emu/), every CUDA test, the emulator's self-tests and the
# trainer on emulated devices (one process and mpiexec -np 2). tools/fuzz.sh fuzzes the file
# readers for a bounded time; ctest's summary of the main build comes last.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build_dir=${SONATA_BUILD_DIR:-build}

if [ "${SONATA_LEAK_CHECK:-1}" = 1 ]; then
  echo "== CPU tests, and the CUDA code on the CPU emulator, under AddressSanitizer (build-asan/) =="
  # -O1 -g1 (line tables only) and only the test executables: this stage repeats the main
  # build's compile, so it is kept to what the sanitizer run needs.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
    -DSONATA_CUDA=EMU -DSONATA_MPI=ON -DSONATA_SANITIZE=ON >build-asan.configure.log 2>&1 ||
    { cat build-asan.configure.log; exit 1; }
  # The emulator's self-tests are whichever sonata_emu_*_tests (and *_mpi) executables emu/
  # defines.
  read -r -a emu_tests <<<"$(ninja -C build-asan -t targets all |
    sed -n 's/^\(sonata_emu_[a-z_]*_\(tests\|mpi\)\): .*/\1/p' | sort -u | tr '\n' ' ')"
  cmake --build build-asan -j "$(nproc)" --target sonata_tests sonata_cuda_tests \
    sonata_comm_tests "${emu_tests[@]}"
  # The CPU comm and benchmark entries run in the main build; here the CPU tests, every
  # cuda/ entry (emulated) and the emulator's own (emu/).
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j "$(nproc)" \
    --timeout 600 -E '^(bench/|comm/|prepare/)' >build-asan/ctest.log 2>&1 ||
    { cat build-asan/ctest.log; exit 1; }
  tail -3 build-asan/ctest.log
  if grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: cuda/.*Skipped' build-asan/ctest.log; then
    echo "CUDA tests were skipped under the emulator (above)"
    exit 1
  fi
fi

# libFuzzer on the safetensors and .npy readers (build-fuzz/, clang): a bounded run from the
# committed seeds; SONATA_FUZZ_SECONDS is per reader, 0 skips the stage.
if [ "${SONATA_FUZZ_SECONDS:-30}" != 0 ]; then
  echo "== libFuzzer on the file readers (build-fuzz/) =="
  tools/fuzz.sh "${SONATA_FUZZ_SECONDS:-30}"
fi

echo "== all tests (${build_dir}/) =="
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 600
