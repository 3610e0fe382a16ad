#!/usr/bin/env bash
# Everything to run on a GPU machine in one go: configure and build with CUDA (cuDNN and
# NCCL may come from PyTorch's wheels), run every CUDA test and the CPU tests, run the smoke
# job on the GPU, and write logs plus a summary table into RESULTS_DIR (printed last).
#   tools/gpu_check.sh RESULTS_DIR
# On the lent GPU machines (no Debian packages): run tools/fetch_gpu_deps.sh here first and
# carry .deps; MPI and libsndfile are off there, OpenBLAS falls back to the built-in loop.
set -uo pipefail
cd "$(dirname "$0")/.."
results=${1:-${OUT:-results}}
mkdir -p "$results"
build=${SONATA_BUILD_DIR:-build-gpu}
summary="$results/summary.md"
start=$(date +%s)
row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3" >>"$summary"; }
echo "# sonata GPU check $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo none)" >"$summary"
echo >>"$summary"
echo '| step | result | detail |' >>"$summary"
echo '|---|---|---|' >>"$summary"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$results/gpu.txt" 2>&1
row "gpu" "$(head -1 "$results/gpu.txt")" "nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')"

prefix=""
[ -d .deps/root/usr ] && prefix="-DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr"
archs=${SONATA_CUDA_ARCHS:-native}
t0=$(date +%s)
if cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSONATA_CUDA=ON -DSONATA_MPI=OFF \
     -DCMAKE_CUDA_ARCHITECTURES="$archs" $prefix >"$results/configure.log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" >"$results/build.log" 2>&1; then
  row "build" "ok" "$(grep -m1 -- '-- sonata:' "$results/configure.log" | sed 's/-- sonata: //') ($(($(date +%s) - t0)) s)"
else
  row "build" "FAILED" "see configure.log / build.log"
  tail -30 "$results/build.log" "$results/configure.log" 2>/dev/null
  cat "$summary"
  exit 1
fi

ctest --test-dir "$build" -R '^cuda/' --output-on-failure -j 4 --timeout 300 >"$results/cuda_tests.log" 2>&1
cuda_count=$(ctest --test-dir "$build" -N -R '^cuda/' | grep -c 'Test *#')
row "CUDA tests" "$(grep -E 'tests passed|tests failed' "$results/cuda_tests.log" | tail -1)" "$cuda_count registered; cuda_tests.log"
[ "$cuda_count" -gt 0 ] || row "CUDA tests" "FAILED" "no CUDA test registered: the name filter is wrong"
ctest --test-dir "$build" -E '^cuda/' --output-on-failure -j 8 --timeout 300 >"$results/cpu_tests.log" 2>&1
row "CPU tests" "$(grep -E 'tests passed|tests failed' "$results/cpu_tests.log" | tail -1)" "cpu_tests.log"

"$build/smoke" --device cuda >"$results/smoke.log" 2>&1
row "smoke (cuda)" "rc=$?" "$(tail -1 "$results/smoke.log")"

row "total" "$(($(date +%s) - start)) s" ""
grep -A3 -E 'FAILED|Failed|failed' "$results/cuda_tests.log" | head -40
cat "$summary"
