#!/usr/bin/env bash
# Everything to run on a GPU machine in one go: configure and build with CUDA (cuDNN and
# NCCL may come from PyTorch's wheels), run every CUDA test and the CPU tests, run the smoke
# job on the GPU, run the GPU benchmarks beside PyTorch on the same card (JSON lines in
# RESULTS_DIR/bench.jsonl), and write logs plus a summary table into RESULTS_DIR (printed
# last). SONATA_GPU_BENCH=0 skips the benchmarks.
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

# Benchmarks: each sonata line, then PyTorch's for the same work on the same card. Each run
# is bounded so a hang cannot eat the device time; a failure is a row, not an abort.
bench() {  # bench NAME COMMAND...
  local name=$1
  shift
  if timeout 240 "$@" >>"$results/bench.jsonl" 2>>"$results/bench.log"; then
    row "bench $name" "ok" "$(tail -1 "$results/bench.jsonl" | grep -o '"step_ms": [0-9.]*')"
  else
    row "bench $name" "FAILED rc=$?" "bench.log"
  fi
}
if [ "${SONATA_GPU_BENCH:-1}" = 1 ]; then
  peer=../shared/bench/peer_torch.py
  [ -f "$peer" ] || peer=shared/bench/peer_torch.py
  py=${PYTHON:-python3}
  bench "sonata ctc L40" "$build/bench_models" --work ctc --device cuda --steps 20 --warmup 5
  bench "torch ctc L40" "$py" bench/peer_ctc.py --device cuda --steps 20 --warmup 5
  bench "torch-cudnn ctc L40" "$py" bench/peer_ctc.py --device cuda --cudnn --steps 20 --warmup 5
  bench "sonata ctc L300" "$build/bench_models" --work ctc --device cuda --target-length 300 --steps 20 --warmup 5
  bench "torch ctc L300" "$py" bench/peer_ctc.py --device cuda --target-length 300 --steps 20 --warmup 5
  bench "sonata ds2 fp32" "$build/bench_models" --work ds2 --device cuda --steps 10 --warmup 3
  for precision in fp32 fp16 bf16; do
    [ -f "$peer" ] && bench "torch ds2 $precision" "$py" "$peer" --work ds2 --device cuda --precision "$precision" --steps 10 --warmup 3
  done
  for precision in fp32 fp16 bf16; do
    bench "sonata vgg19_bn $precision nchw" "$build/bench_models" --work vgg19_bn --device cuda --precision "$precision" --steps 10 --warmup 3
    bench "sonata vgg19_bn $precision nhwc" "$build/bench_models" --work vgg19_bn --device cuda --precision "$precision" --channels-last --steps 10 --warmup 3
  done
  for precision in fp32 fp16 bf16; do
    [ -f "$peer" ] && bench "torch vgg19_bn $precision" "$py" "$peer" --work vgg19_bn --device cuda --precision "$precision" --steps 10 --warmup 3
  done
  bench "sonata mel" "$build/bench_models" --work mel --device cuda --steps 20 --warmup 5
  [ -f "$peer" ] && bench "torch mel" "$py" "$peer" --work mel --device cuda --steps 20 --warmup 5
  # The reducer on CUDA (one process: the single group), full-width and bf16-compressed buckets.
  bench "sonata ddp world1" "$build/bench_ddp" --device cuda --batch 32 --frames 400 --steps 5
  bench "sonata ddp world1 bf16" "$build/bench_ddp" --device cuda --batch 32 --frames 400 --steps 5 --comm-dtype bf16
fi

row "total" "$(($(date +%s) - start)) s" ""
grep -A3 -E 'FAILED|Failed|failed' "$results/cuda_tests.log" | head -40
cat "$summary"
