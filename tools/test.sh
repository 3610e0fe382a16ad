#!/usr/bin/env bash
# README command 2: set up, build (CPU and, where nvcc exists, CUDA code), run every test.
# A sanitizer build (build-emu/) runs the CPU tests and every CUDA test on the CUDA emulator
# under AddressSanitizer + LeakSanitizer, so a leak, an over-read or a CUDA rule broken fails
# the run; CUDA tests run on the card too when a GPU is present (the main build reports them
# as skipped otherwise). tools/fuzz.sh fuzzes the file readers for a bounded time; ctest's
# summary of the main build comes last.
set -euo pipefail
cd "$(dirname "$0")/.."
# The optimised build leaves out the CPU unit tests and the emulator's self-tests when the
# sanitizer build below runs them (CMake's SONATA_UNIT_TESTS): CI's 35 minutes on 2 cores have
# no room to compile them twice.
unit_tests=ON
[ "${SONATA_LEAK_CHECK:-1}" = 1 ] && unit_tests=OFF
# More packages in setup's one apt transaction: espeak-ng and sox (the GPU check's rehearsal
# speaks its small corpus), clang and its runtimes (the fuzz stage).
fuzz_packages=""
[ "${SONATA_FUZZ_SECONDS:-30}" != 0 ] && fuzz_packages="clang libclang-rt-dev libomp-dev"
SONATA_CMAKE_ARGS="${SONATA_CMAKE_ARGS:-} -DSONATA_UNIT_TESTS=$unit_tests" \
  SONATA_EXTRA_PACKAGES="${SONATA_EXTRA_PACKAGES:-} espeak-ng sox $fuzz_packages" tools/setup.sh
build_dir=${SONATA_BUILD_DIR:-build}

# One sanitizer build for the CPU tests and the CUDA code: SONATA_CUDA=EMU compiles the CUDA
# sources for the CPU emulator (emu/, docs/emulator.md), so every CUDA test, the trainer on
# emulated devices (one process and mpiexec -np 2 over NCCL) and the emulator's planted-defect
# tests run here, all under AddressSanitizer + LeakSanitizer, beside the CPU tests. On a
# machine with a GPU the main build runs the CUDA tests on the card as well.
if [ "${SONATA_LEAK_CHECK:-1}" = 1 ]; then
  echo "== CPU tests and the CUDA code on the emulator, under AddressSanitizer + LeakSanitizer (build-emu/) =="
  # -O1 -g1 (line tables only) and only the executables the tests need.
  cmake -S . -B build-emu -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
    -DSONATA_CUDA=EMU -DSONATA_MPI=ON -DSONATA_SANITIZE=ON >build-emu.configure.log 2>&1 ||
    { cat build-emu.configure.log; exit 1; }
  # The emulator's self-tests (emu/) are whichever sonata_emu_*_tests / *_mpi executables it
  # defines.
  read -r -a emu_tests <<<"$(ninja -C build-emu -t targets all |
    sed -n 's/^\(sonata_emu_[a-z_]*_\(tests\|mpi\)\): .*/\1/p' | sort -u | tr '\n' ' ')"
  # bench_models, bench_ddp and featurize: the GPU check's rehearsal below.
  cmake --build build-emu -j "$(nproc)" --target sonata_tests sonata_cuda_tests \
    sonata_comm_tests trainer bench_models bench_ddp featurize "${emu_tests[@]}"
  # comm/ (MPI under mpiexec), bench/ and the instruction-set check (it reads the shipped,
  # optimised binaries) run in the main build; cuda/comm_nccl_np2 is the NCCL path under
  # mpiexec here.
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-emu --output-on-failure -j "$(nproc)" \
    --timeout 900 -E '^(comm/|bench/|tools/check_cpu_isa|sonata_[a-z_]*_NOT_BUILT)' >build-emu/ctest.log 2>&1 ||
    { cat build-emu/ctest.log; exit 1; }
  tail -3 build-emu/ctest.log
  if grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: cuda/.*Skipped' build-emu/ctest.log; then
    echo "CUDA tests were skipped under the emulator (above)"
    exit 1
  fi
  # The lent GPU machine's check (tools/gpu_check.sh), rehearsed on this emulator build from
  # a relocated copy of the checkout with only the carried folder, short shapes, no network.
  echo "== the GPU check rehearsed on the emulator (tools/rehearse_gpu_check.sh) =="
  tools/rehearse_gpu_check.sh build-emu
fi

# libFuzzer on the safetensors and .npy readers (build-fuzz/, clang): a bounded run from the
# committed seeds; SONATA_FUZZ_SECONDS is per reader, 0 skips the stage.
if [ "${SONATA_FUZZ_SECONDS:-30}" != 0 ]; then
  echo "== libFuzzer on the file readers (build-fuzz/) =="
  tools/fuzz.sh "${SONATA_FUZZ_SECONDS:-30}"
fi

# The main (optimised) build: the tests the sanitizer stage cannot run -- MPI worlds under
# mpiexec, the benchmarks' smoke, the CPU kernels' per-capability reruns and instruction-set
# check, and the CUDA tests on a card (skipped without one) -- or every test when that stage
# was skipped (SONATA_LEAK_CHECK=0). CI's time (under 35 minutes on 2 cores) has no room for
# the CPU tests twice.
main_tests=()
if [ "${SONATA_LEAK_CHECK:-1}" = 1 ]; then
  main_tests=(-R '^(comm/|bench/|cpu_capability/|cuda/|tools/check_cpu_isa)')
  echo "== the tests the sanitizer stage cannot run (${build_dir}/) =="
else
  echo "== all tests (${build_dir}/) =="
fi
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 600 "${main_tests[@]}"
