#!/usr/bin/env bash
# Everything to run on a GPU machine in one go, in under 8 minutes on one H200 with 16 cores:
#   1. configure and build with CUDA (MPI and libsndfile off; cuDNN and NCCL found in the
#      Python wheels of the interpreter that imports torch, when the toolkit lacks them);
#   2. every CUDA test (ctest -R '^cuda/');
#   3. the smoke job on the GPU, then the speech demo's DS2 trained on the GPU in fp32 (TF32
#      convolutions, the default), bf16 and fp16 from the carried corpus (.deps/speech);
#   4. VGG19_BN 3x224 batch 64 bf16 channels-last, sonata against PyTorch AMP channels-last
#      (bench/peer_vgg_channels_last.py), and the top kernels of sonata's run by GPU
#      time (nsys profile --stats=true, when nsys is installed);
#   5. bench/compare on the GPU against the PyTorch installed there (short repeats): VGG19_BN,
#      DS2-small batch 32, log-mel, CTC, kernels, all fp32;
#   6. the GPU benchmarks bench/compare does not cover (fp16/bf16, channels-last, CTC with
#      L=300 and cuDNN's CTC, the DDP reducer on CUDA), while time is left;
#   7. the CPU tests, with whatever time is left (a partial run is reported as such).
# Logs and a summary table go into RESULTS_DIR; the table is printed last. A stage that
# fails is a row of the table and the stages after it still run; the exit status is non-zero
# when any stage failed.
#   tools/gpu_check.sh RESULTS_DIR
# Environment: PYTHON (the interpreter with torch; default: the first of python3, python,
# /usr/bin/python3 that imports it), SONATA_BUILD_DIR (build-gpu), SONATA_CUDA_ARCHS (the
# card's compute capability), SONATA_GPU_CHECK_BUDGET_S (450: stages that would start
# later are skipped), SONATA_GPU_BENCH=0 (no stages 4 to 6), SONATA_GPU_TRAIN=0 (no
# training in stage 3), SONATA_SPEECH_DATA (.deps/speech).
# On the lent GPU machines (no Debian packages, no network): run tools/fetch_gpu_deps.sh and
# tools/demo/make_gpu_check_corpus.sh here first and carry .deps (the PyTorch peers are in
# bench/, part of the checkout). RESULTS_DIR
# holds 8 files (the device tool brings back 8 at most): summary.md, build.log,
# cuda_tests.log, cpu_tests.log, compare.md, bench.jsonl, bench.log (training logs too),
# kernels.log.
set -uo pipefail
results=${1:-${OUT:-results}}
mkdir -p "$results" && results=$(cd "$results" && pwd) || exit 2
cd "$(dirname "$0")/.." || exit 2
build=${SONATA_BUILD_DIR:-build-gpu}
summary="$results/summary.md"
benchlog="$results/bench.log"
start=$(date +%s)
deadline=$((start + ${SONATA_GPU_CHECK_BUDGET_S:-450}))
failures=0
: >"$benchlog"
: >"$results/bench.jsonl"

row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3" >>"$summary"; }
failed() {  # failed STEP DETAIL: a row, counted in the exit status
  row "$1" "FAILED" "$2"
  failures=$((failures + 1))
}
left() { echo $((deadline - $(date +%s))); }
# bounded CAP_S COMMAND...: COMMAND under a timeout of CAP_S or the time left before the
# deadline, whichever is shorter (exit 124 when it ran out).
bounded() {
  local cap=$1 rest
  shift
  rest=$(left)
  [ "$rest" -lt "$cap" ] && cap=$rest
  [ "$cap" -lt 1 ] && return 124
  timeout --kill-after=10 "$cap" "$@"
}
# has_time STEP NEED_S: true when NEED_S seconds are left, else a "skipped" row.
has_time() {
  [ "$(left)" -ge "$2" ] && return 0
  row "$1" "skipped" "time budget ($(left) s left)"
  return 1
}
# ctest_counts LOG: "P passed, F failed, S skipped" from ctest's per-test lines (which
# survive a run cut short by the timeout, unlike its closing summary).
ctest_counts() {
  printf '%d passed, %d failed, %d skipped' "$(grep -cE 'Test +#[0-9]+: .* +Passed +[0-9.]+ sec' "$1")" \
    "$(grep -cE 'Test +#[0-9]+: .*\*\*\*(Failed|Exception|Timeout|Not Run)' "$1")" \
    "$(grep -cE 'Test +#[0-9]+: .*\*\*\*Skipped' "$1")"
}

{
  echo "# sonata GPU check $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
  echo
  echo '| step | result | detail |'
  echo '|---|---|---|'
} >"$summary"

if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)
else
  gpu="no GPU (nvidia-smi not found): the GPU stages below fail"
fi
row "gpu" "$gpu" "nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')"

# The interpreter whose torch the benchmarks compare against; its wheels may also hold cuDNN
# and NCCL (site-packages/nvidia/...), which the build and every binary then use.
py=""
for candidate in ${PYTHON:-} python3 python /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import torch' >/dev/null 2>&1; then
    py=$(command -v "$candidate")
    break
  fi
done
cmake_extra=()
if [ -n "$py" ]; then
  row "python" "$py" "torch $("$py" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1)"
  site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
  for lib in CUDNN:cudnn.h NCCL:nccl.h; do
    header=$(find "$site/nvidia" -path '*/include/*' -name "${lib#*:}" -print -quit 2>/dev/null)
    [ -n "$header" ] || continue
    root=$(dirname "$(dirname "$header")")
    cmake_extra+=("-D${lib%%:*}_ROOT=$root")
    export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
else
  row "python" "no torch" "no interpreter imports torch: sonata's columns only"
fi
[ -d .deps/root/usr ] && cmake_extra+=("-DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr")
archs=${SONATA_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')}

# 1. Build. -k 0: a target that fails to compile leaves the others built, and each stage
# below checks for its own binaries.
t0=$(date +%s)
{
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSONATA_CUDA=ON -DSONATA_MPI=OFF \
    -DSONATA_SNDFILE=OFF -DCMAKE_CUDA_ARCHITECTURES="${archs:-90}" "${cmake_extra[@]}"
} >"$results/build.log" 2>&1
configured=$?
if [ "$configured" != 0 ]; then
  failed "configure" "see build.log"
  tail -30 "$results/build.log"
else
  bounded 330 cmake --build "$build" -j "$(nproc)" -- -k 0 >>"$results/build.log" 2>&1
  rc=$?
  config=$(grep -m1 -- '-- sonata: ' "$results/build.log" | sed 's/-- sonata: //')
  if [ "$rc" = 0 ]; then
    row "build" "ok" "$config ($(($(date +%s) - t0)) s)"
  else
    failed "build" "rc=$rc after $(($(date +%s) - t0)) s; $(grep -c '^FAILED: ' "$results/build.log") target(s) failed, see build.log"
    grep -A12 '^FAILED: ' "$results/build.log" | head -40
  fi
fi

# 2. Every CUDA test. A device-less run would skip them all: that is a failure here.
if [ "$configured" != 0 ] || [ ! -x "$build/tests/sonata_cuda_tests" ]; then
  failed "CUDA tests" "not built"
elif has_time "CUDA tests" 30; then
  bounded 150 ctest --test-dir "$build" -R '^cuda/' --output-on-failure -j 4 --timeout 120 \
    >"$results/cuda_tests.log" 2>&1
  rc=$?
  registered=$(ctest --test-dir "$build" -N -R '^cuda/' | grep -c 'Test *#')
  counts=$(ctest_counts "$results/cuda_tests.log")
  if [ "$registered" = 0 ]; then
    failed "CUDA tests" "no CUDA test registered: the name filter is wrong"
  elif [ "$rc" != 0 ] || ! grep -q '^0 skipped' <<<"${counts#*failed, }"; then
    failed "CUDA tests" "$counts of $registered (rc=$rc); cuda_tests.log"
  else
    row "CUDA tests" "ok" "$counts of $registered"
  fi
fi

# 3. The smoke job.
if [ -x "$build/smoke" ] && has_time "smoke (cuda)" 20; then
  bounded 60 "$build/smoke" --device cuda >>"$benchlog" 2>&1
  rc=$?
  if [ "$rc" = 0 ]; then row "smoke (cuda)" "ok" "$(tail -1 "$benchlog")"; else failed "smoke (cuda)" "rc=$rc; bench.log"; fi
elif [ ! -x "$build/smoke" ]; then
  failed "smoke (cuda)" "not built"
fi

# The speech demo's model (8-channel convolutions, two BiLSTM layers of 128) trained from
# the feature cache that tools/demo/make_gpu_check_corpus.sh writes: GPU machines have neither
# espeak-ng nor libsndfile to make or decode the audio.
speech=${SONATA_SPEECH_DATA:-.deps/speech}
train_speech() {  # train_speech PRECISION
  local name="train speech $1 (cuda)" rc t0
  has_time "$name" 25 || return 0
  echo "== trainer --precision $1 (TF32 for f32 convolutions, the default)" >>"$benchlog"
  t0=$(date +%s)
  bounded 60 "$build/trainer" --model ds2 --conv-channels 8 --hidden 128 --layers 2 \
    --train "$speech/train.tsv" --val "$speech/dev.tsv" --feature-cache "$speech/cache" \
    --device cuda --precision "$1" --batch-size 16 --epochs 4 --optimizer adamw --lr 3e-3 \
    --weight-decay 1e-2 --warmup 0.5 --schedule cosine --grad-clip 5 --beam-width 0 \
    --show-transcripts 0 --progress lines --log-every 30 --metrics "$(mktemp)" >>"$benchlog" 2>&1
  rc=$?
  if [ "$rc" = 0 ]; then
    row "$name" "ok" "$(grep '^val:' "$benchlog" | tail -1) in $(($(date +%s) - t0)) s"
  else
    failed "$name" "rc=$rc; bench.log"
  fi
}
if [ "${SONATA_GPU_TRAIN:-1}" = 1 ]; then
  if [ ! -x "$build/trainer" ]; then
    failed "train speech (cuda)" "trainer not built"
  elif [ ! -f "$speech/train.tsv" ] || [ ! -f "$speech/cache/index.json" ]; then
    row "train speech (cuda)" "skipped" "no corpus in $speech (run tools/demo/make_gpu_check_corpus.sh before, on a machine with espeak-ng)"
  else
    for precision in fp32 bf16 fp16; do train_speech "$precision"; done
  fi
fi

# 4. VGG19_BN bf16 channels-last against PyTorch AMP channels-last, then where sonata's
# time goes in that run.
bench() {  # bench NAME COMMAND...
  local name=$1 rc
  shift
  has_time "bench $name" 25 || return 0
  echo "== $*" >>"$benchlog"
  bounded 60 "$@" >>"$results/bench.jsonl" 2>>"$benchlog"
  rc=$?
  if [ "$rc" = 0 ]; then
    row "bench $name" "ok" "$(tail -1 "$results/bench.jsonl" | grep -oE '"(step_ms|images_per_s)": [0-9.]*' | tr '\n' ' ')"
  else
    failed "bench $name" "rc=$rc; bench.log"
  fi
}
vgg=(--work vgg19_bn --device cuda --steps 10 --warmup 3)
if [ "${SONATA_GPU_BENCH:-1}" = 1 ]; then
  if [ -x "$build/bench_models" ]; then
    bench "sonata vgg19_bn bf16 nhwc" "$build/bench_models" "${vgg[@]}" --precision bf16 --channels-last
  else
    failed "bench sonata vgg19_bn bf16 nhwc" "bench_models not built"
  fi
  if [ -n "$py" ]; then
    bench "torch vgg19_bn bf16 nhwc (amp)" "$py" bench/peer_vgg_channels_last.py --precision bf16 --steps 10 --warmup 3
  else
    row "bench torch vgg19_bn bf16 nhwc (amp)" "skipped" "no interpreter imports torch"
  fi
  if ! command -v nsys >/dev/null 2>&1; then
    row "kernels (nsys)" "skipped" "nsys is not installed"
  elif [ -x "$build/bench_models" ] && has_time "kernels (nsys)" 40; then
    report=$(mktemp -d)
    bounded 90 nsys profile --stats=true --force-overwrite true -o "$report/vgg" \
      "$build/bench_models" --work vgg19_bn --device cuda --precision bf16 --channels-last \
      --steps 3 --warmup 2 >"$results/kernels.log" 2>&1
    rc=$?
    rm -rf "$report"
    if [ "$rc" = 0 ]; then
      row "kernels (nsys)" "ok" "vgg19_bn bf16 nhwc, 5 steps: cuda_gpu_kern_sum in kernels.log"
    else
      failed "kernels (nsys)" "rc=$rc; kernels.log"
    fi
  fi
fi

# 5. sonata against PyTorch, runs alternating (bench/compare): every workload in fp32.
peer=bench/peer_torch.py
if [ "${SONATA_GPU_BENCH:-1}" = 1 ] && [ ! -x "$build/bench_models" ]; then
  failed "compare (cuda)" "bench_models not built"
elif [ "${SONATA_GPU_BENCH:-1}" = 1 ] && has_time "compare (cuda)" 60; then
  works=vgg19_bn,ds2,mel,ctc,kernels
  if [ ! -f "$peer" ]; then
    works=ctc,kernels
    row "compare (cuda)" "partial" "bench/peer_torch.py not found: vgg19_bn, ds2 and mel left out"
  fi
  echo "== bench/compare --device cuda" >>"$benchlog"
  bounded 210 bench/compare --device cuda --work "$works" --repeats 2 --steps 10 --warmup 3 \
    --timeout 90 --build-dir "$build" --python "${py:-python3}" --peer-torch "$peer" \
    --jsonl "$results/compare.jsonl" >"$results/compare.md" 2>>"$benchlog"
  rc=$?
  cat "$results/compare.jsonl" >>"$results/bench.jsonl" 2>/dev/null
  rm -f "$results/compare.jsonl"
  rows=$(grep '^| [a-z]' "$results/compare.md" | grep -vc '^| workload ')
  if [ "$rc" = 0 ]; then
    row "compare (cuda)" "ok" "$rows rows; compare.md"
  else
    failed "compare (cuda)" "rc=$rc ($([ "$rc" = 124 ] && echo 'time budget' || echo 'a run failed: see its row')); $rows rows; compare.md, bench.log"
  fi
fi

# 6. What bench/compare does not cover, one bounded run each, in order of interest.
if [ "${SONATA_GPU_BENCH:-1}" = 1 ]; then
  s=(--steps 10 --warmup 3)
  for precision in bf16 fp16; do
    # bf16 channels-last ran in stage 4.
    if [ "$precision" = fp16 ]; then
      bench "sonata vgg19_bn $precision nhwc" "$build/bench_models" --work vgg19_bn --device cuda --precision "$precision" --channels-last "${s[@]}"
    fi
    [ -n "$py" ] && [ -f "$peer" ] && bench "torch vgg19_bn $precision nchw" "$py" "$peer" --work vgg19_bn --device cuda --precision "$precision" "${s[@]}"
    bench "sonata vgg19_bn $precision nchw" "$build/bench_models" --work vgg19_bn --device cuda --precision "$precision" "${s[@]}"
  done
  bench "sonata vgg19_bn fp32 nhwc" "$build/bench_models" --work vgg19_bn --device cuda --channels-last "${s[@]}"
  bench "sonata ctc L300" "$build/bench_models" --work ctc --device cuda --target-length 300 "${s[@]}"
  [ -n "$py" ] && bench "torch ctc L300" "$py" bench/peer_ctc.py --device cuda --target-length 300 "${s[@]}"
  [ -n "$py" ] && bench "torch-cudnn ctc L40" "$py" bench/peer_ctc.py --device cuda --cudnn "${s[@]}"
  for precision in bf16 fp16; do
    [ -n "$py" ] && [ -f "$peer" ] && bench "torch ds2 $precision" "$py" "$peer" --work ds2 --device cuda --precision "$precision" "${s[@]}"
  done
  # The reducer on CUDA (one process: the single group), full-width and bf16-compressed buckets.
  bench "sonata ddp world1" "$build/bench_ddp" --device cuda --batch 32 --frames 400 --steps 5
  bench "sonata ddp world1 bf16" "$build/bench_ddp" --device cuda --batch 32 --frames 400 --steps 5 --comm-dtype bf16
fi

# 7. The CPU tests with the time that is left (no OpenBLAS here: the built-in GEMM is slow).
if [ "$configured" != 0 ] || [ ! -x "$build/tests/sonata_tests" ]; then
  failed "CPU tests" "not built"
elif has_time "CPU tests" 30; then
  OMP_NUM_THREADS=2 bounded "$(left)" ctest --test-dir "$build" -E '^cuda/' --output-on-failure \
    -j "$(($(nproc) / 2 > 0 ? $(nproc) / 2 : 1))" --timeout 120 >"$results/cpu_tests.log" 2>&1
  rc=$?
  counts=$(ctest_counts "$results/cpu_tests.log")
  if [ "$rc" = 124 ] && grep -q ', 0 failed' <<<"$counts"; then
    row "CPU tests" "partial" "$counts when the time budget ran out; cpu_tests.log"
  elif [ "$rc" != 0 ]; then
    failed "CPU tests" "$counts (rc=$rc); cpu_tests.log"
  else
    row "CPU tests" "ok" "$counts"
  fi
fi

row "total" "$(($(date +%s) - start)) s" "$failures stage(s) failed"
if [ -s "$results/compare.md" ]; then
  { echo; echo "## sonata vs PyTorch on $gpu (bench/compare, items/s ratio: above 1, sonata is faster)"; cat "$results/compare.md"; } >>"$summary"
fi
sed -n '/tests FAILED:/,$p' "$results/cuda_tests.log" "$results/cpu_tests.log" 2>/dev/null | head -40
cat "$summary"
[ "$failures" = 0 ]
