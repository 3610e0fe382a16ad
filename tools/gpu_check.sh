#!/usr/bin/env bash
# The first GPU card's check: everything to run on a lent GPU machine in one call, the most
# valuable measurements first, ending inside its time budget with a summary table.
#   tools/gpu_check.sh [RESULTS_DIR]        (default: $OUT, else results)
# Before it, here (a Debian machine with network): tools/prepare_card.sh, which leaves
# everything the card lacks in .deps/ (carry: [".deps"]). docs/building.md "The GPU check"
# has the stages, their expected times on 16 cores and what to do when one fails.
#
# Stages, in this order (a stage that fails is a FAILED row and the ones after it still run;
# one that would start after the deadline is a "skipped" row):
#   1. build: configure (CUDA on; MPI, libsndfile, OpenBLAS and image codecs off: the card has
#      no Debian packages) and build only the targets below, one ninja pass over every core;
#      cuDNN and NCCL come from the NVIDIA wheels beside the interpreter (tools/card/find_wheels.sh);
#   2. the CUDA tests (ctest -R '^cuda/'), half the cores' worth of processes with 2 OpenMP
#      threads each and each process's memory pool capped (SONATA_CUDA_POOL_CACHE_MB);
#   3. training steps against PyTorch on the same card at the bench shapes: DS2 fp32 (PyTorch
#      fp32 and AMP bf16), VGG19_BN bf16 channels-last (PyTorch AMP) and fp32; the model's
#      prediction ([gpu-profile], .deps/predictions.tsv) beside each time; the same with CUDA
#      graphs once bench_models has --cuda-graphs ([gpu-speed]);
#   4. the speech demo's DS2 trained in fp32 from the carried corpus (.deps/speech);
#   5. Nsight Compute: speed of light and memory sections of the top kernels of one DS2 step;
#   6. compute-sanitizer memcheck over a short CUDA test run;
#   7. the DDP reducer over a one-rank NCCL group (bench_ddp --group nccl: no MPI needed);
#   8. the speech DS2 in bf16 and fp16, while time is left.
# Without a card (the CI rehearsal, tools/rehearse_gpu_check.sh: the emulator build) the same
# stages run at short shapes; what only a card can do (timing, PyTorch on CUDA, VGG19_BN's
# steps, ncu, compute-sanitizer) is a "skipped: no card" row.
#
# RESULTS_DIR gets at most 8 files (the device tool brings back 8): summary.md (the table),
# build.log, cuda_tests.log, bench.jsonl, bench.log, train_metrics.jsonl, ncu.log,
# sanitizer.log. The exit status is non-zero when a stage failed.
# Environment: PYTHON (the interpreter with torch), SONATA_BUILD_DIR (build-gpu; an already
# configured folder is built, not configured again), SONATA_CUDA_ARCHS (the card's compute
# capability), SONATA_GPU_CHECK_BUDGET_S (540), SONATA_GPU_CHECK_SHAPES (bench on a card,
# else short), SONATA_GPU_CHECK_TESTS (ctest -R, '^cuda/'), SONATA_GPU_CHECK_EPOCHS (4),
# SONATA_SPEECH_DATA (.deps/speech), SONATA_GPU_PREDICTIONS (.deps/predictions.tsv),
# SONATA_GPU_CHECK_STAGES=build (stage 1 alone), SONATA_WHEEL_SITE (a site-packages folder
# with the NVIDIA wheels, instead of the interpreter's).
set -uo pipefail
results=${1:-${OUT:-results}}
mkdir -p "$results" && results=$(cd "$results" && pwd) || exit 2
cd "$(dirname "$0")/.." || exit 2
build=${SONATA_BUILD_DIR:-build-gpu}
summary="$results/summary.md"
benchlog="$results/bench.log"
metrics="$results/train_metrics.jsonl"
start=$(date +%s)
deadline=$((start + ${SONATA_GPU_CHECK_BUDGET_S:-540}))
failures=0
cores=$(nproc)
: >"$benchlog"
: >"$results/bench.jsonl"
# shellcheck source=tools/card/common.sh
. tools/card/common.sh
# shellcheck source=tools/card/find_wheels.sh
. tools/card/find_wheels.sh

# The toolkit's tools (nvcc, ncu, compute-sanitizer) where PATH lacks them.
[ -d /usr/local/cuda/bin ] && PATH="$PATH:/usr/local/cuda/bin"
# The device tool sends the working tree without .git: prepare_card.sh noted the commit.
commit=$(git rev-parse --short HEAD 2>/dev/null || cat .deps/commit 2>/dev/null || echo unknown)
{
  echo "# sonata GPU check $(date -u +%FT%TZ) commit $commit"
  echo
  echo '| step | result | detail | predicted |'
  echo '|---|---|---|---|'
} >"$summary"

card=0
card_reason="nvidia-smi not found"
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then card=1; else card_reason="nvidia-smi lists no GPU"; fi
else
  gpu="no GPU"
fi
shapes=${SONATA_GPU_CHECK_SHAPES:-$([ "$card" = 1 ] && echo bench || echo short)}
row "machine" "$gpu" "$cores cores; nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo absent); $shapes shapes; budget $((deadline - start)) s"
row "python" "${py:-none}" "${py_torch:-no torch, so no PyTorch rows}; wheels: ${cmake_wheels[*]:-none}"

# The end of every run: the results checked against what the device tool brings back (at most
# 8 files, plain names, no folders), the total, the table printed last (a reply shows the end
# of the output).
finish() {
  local count odd
  [ -s "$metrics" ] || rm -f "$metrics"
  count=$(find "$results" -type f | wc -l)
  odd=$(find "$results" -mindepth 1 | sed "s|^$results/||" | grep -cvE '^[A-Za-z0-9._-]+$')
  if [ "$count" -le 8 ] && [ "$odd" = 0 ]; then
    row "results" "ok" "$count files: $(find "$results" -type f -printf '%f\n' | sort | tr '\n' ' ')"
  else
    failed "results" "$count files (at most 8), $odd odd names or folders"
  fi
  row "total" "$(($(date +%s) - start)) s" "$failures stage(s) failed"
  sed -n '/tests FAILED:/,$p' "$results/cuda_tests.log" 2>/dev/null | head -40
  cat "$summary"
  [ "$failures" = 0 ]
  exit
}

# 1. Build only what the stages run, in one pass (-k 0: a target that fails leaves the others
# built, and each stage checks for its own binary).
targets=(sonata_cuda_tests trainer bench_models bench_ddp)
t0=$(date +%s)
configured=0
if [ -f "$build/CMakeCache.txt" ]; then
  echo "== $build is configured already: building it as it is" >"$results/build.log"
else
  archs=${SONATA_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')}
  extra=("${cmake_wheels[@]}")
  [ -n "$py" ] && extra+=("-DSONATA_PYTHON=$py")
  [ -d .deps/root/usr ] && extra+=("-DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr")
  command -v ccache >/dev/null 2>&1 &&
    extra+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSONATA_CUDA=ON -DSONATA_MPI=OFF \
    -DSONATA_SNDFILE=OFF -DSONATA_BLAS=OFF -DSONATA_IMAGE=OFF -DCMAKE_CUDA_ARCHITECTURES="${archs:-90}" \
    "${extra[@]}" >"$results/build.log" 2>&1 || configured=$?
fi
if [ "$configured" != 0 ]; then
  failed "build" "configure failed (rc=$configured); build.log"
  tail -30 "$results/build.log"
else
  bounded "${SONATA_GPU_CHECK_BUILD_S:-330}" cmake --build "$build" -j "$cores" \
    --target "${targets[@]}" -- -k 0 >>"$results/build.log" 2>&1
  rc=$?
  config=$(grep -m1 -- '-- sonata: CUDA=' "$results/build.log" | sed 's/-- sonata: //')
  if [ "$rc" = 0 ]; then
    row "build" "ok" "${config:-reused $build} ($(($(date +%s) - t0)) s)"
  else
    failed "build" "rc=$rc after $(($(date +%s) - t0)) s; $(grep -c '^FAILED: ' "$results/build.log") target(s) failed; build.log"
    grep -A12 '^FAILED: ' "$results/build.log" | head -40
  fi
fi

# SONATA_GPU_CHECK_STAGES=build: the build alone (tools/rehearse_card_build.sh).
[ "${SONATA_GPU_CHECK_STAGES:-all}" = build ] && finish

# 2. The CUDA tests, bounded: 2 OpenMP threads per process and half the cores' processes
# (unset, each process would start one thread per core), each pool caching at most 6 GiB
# past a synchronisation (by default 15/16 of the card each). The test that fills the card
# on purpose runs alone first: beside others it would take their memory.
tests=${SONATA_GPU_CHECK_TESTS:-^cuda/}
alone='^cuda/memory the pool keeps cached serves a later plain cudaMalloc after a trim$'
if [ ! -x "$build/tests/sonata_cuda_tests" ]; then
  failed "CUDA tests" "sonata_cuda_tests not built"
elif has_time "CUDA tests" 30; then
  jobs=$((cores / 2 > 0 ? cores / 2 : 1))
  listed=$(ctest --test-dir "$build" -N -R "$tests")
  registered=$(grep -c 'Test *#' <<<"$listed")
  : >"$results/cuda_tests.log"
  rc=0
  if grep -qE 'Test +#[0-9]+: cuda/memory the pool keeps cached' <<<"$listed"; then
    OMP_NUM_THREADS=2 bounded 60 ctest --test-dir "$build" -R "$alone" --output-on-failure \
      --timeout 60 >>"$results/cuda_tests.log" 2>&1 || rc=$?
  fi
  OMP_NUM_THREADS=2 SONATA_CUDA_POOL_CACHE_MB=6144 bounded "${SONATA_GPU_CHECK_TESTS_S:-150}" \
    ctest --test-dir "$build" -R "$tests" -E "$alone" --output-on-failure -j "$jobs" \
    --timeout 120 >>"$results/cuda_tests.log" 2>&1 || rc=$?
  counts=$(ctest_counts "$results/cuda_tests.log")
  if [ "$registered" = 0 ]; then
    failed "CUDA tests" "no test matches '$tests'"
  elif [ "$rc" != 0 ] || ! grep -q '^0 skipped' <<<"${counts#*failed, }"; then
    failed "CUDA tests" "$counts of $registered (rc=$rc; skipped counts as failed); cuda_tests.log"
  else
    row "CUDA tests" "ok" "$counts of $registered ($tests, -j $jobs)"
  fi
fi

# 3. Training steps, sonata against PyTorch on the same card. Each row shows the measured
# step time and, where [gpu-profile]'s emulated profile was carried, its prediction.
# predicted KEY: the carried prediction for a sonata row, or why there is none.
predictions=${SONATA_GPU_PREDICTIONS:-.deps/predictions.tsv}
predicted() {
  if [ ! -f "$predictions" ]; then
    echo "not built yet ([gpu-profile])"
  else
    awk -F'\t' -v key="$1" '$1 == key { print $2 " ms"; found = 1 } END { if (!found) print "none for this key" }' "$predictions"
  fi
}
# measure NAME KEY COMMAND...: one bounded run printing a JSON line into bench.jsonl, a row.
measure() {
  local name=$1 key=$2 rc line
  shift 2
  has_time "$name" 25 || return 0
  echo "== $name: $*" >>"$benchlog"
  bounded 90 "$@" >"$results/run.jsonl" 2>>"$benchlog"
  rc=$?
  line=$(tail -1 "$results/run.jsonl")
  rm -f "$results/run.jsonl"
  if [ "$rc" != 0 ]; then
    failed "$name" "rc=$rc; bench.log"
    return 0
  fi
  echo "$line" >>"$results/bench.jsonl"
  if [ "$card" = 1 ]; then
    row "$name" "ok" "$(grep -oE '"(step_ms|step_ms_ddp|overhead_pct|images_per_s|items_per_s)": [0-9.]*' <<<"$line" | tr '\n' ' ')" \
      "$([ -n "$key" ] && predicted "$key")"
  else
    row "$name" "ok: emulated" "ran at $shapes shapes on the emulator; its time is not a measurement"
  fi
}
# peer NAME COMMAND...: PyTorch on the card (nothing to compare against elsewhere).
peer() {
  local name=$1
  shift
  on_card "$name" || return 0
  if [ -z "$py_torch" ]; then
    row "$name" "skipped" "no interpreter imports torch (PYTHON, /opt/torch/.venv/bin/python3, python3)"
    return 0
  fi
  measure "$name" "" "$py" "$@"
}
# Bench shapes: bench_models' and the peers' CUDA defaults (DS2 batch 32 x 400 frames,
# VGG19_BN batch 64 x 3x224x224). Short: a few seconds each on the emulator.
ds2_shape=()
vgg_shape=()
ds2_labels=()  # bench_models' option (the peer keeps its 40 labels)
if [ "$shapes" != bench ]; then
  ds2_shape=(--batch 2 --size 40)
  vgg_shape=(--batch 2 --size 3x32x32)
  ds2_labels=(--target-length 4)
fi
steps=(--steps 10 --warmup 3)
[ "$card" = 1 ] || steps=(--steps 1 --warmup 0)
graphs=0
[ -x "$build/bench_models" ] && "$build/bench_models" --help 2>/dev/null | grep -q -- '--cuda-graphs' && graphs=1
if [ ! -x "$build/bench_models" ]; then
  failed "bench" "bench_models not built"
else
  s="$build/bench_models"
  measure "sonata ds2 fp32" "ds2 fp32" "$s" --work ds2 --device cuda "${ds2_shape[@]}" \
    "${ds2_labels[@]}" "${steps[@]}"
  peer "torch ds2 fp32" bench/peer_torch.py --work ds2 --device cuda "${ds2_shape[@]}" "${steps[@]}"
  peer "torch ds2 bf16 (amp)" bench/peer_torch.py --work ds2 --device cuda --precision bf16 "${ds2_shape[@]}" "${steps[@]}"
  # VGG19_BN's 140 M parameters take minutes a step on the emulator (its CUDA path is the
  # cuda/ trainer tests' there): timing it is for a card alone.
  vgg() { if [ "$card" = 1 ]; then measure "$@"; else row "$1" "skipped: no card" "minutes a step on the emulator"; fi; }
  vgg "sonata vgg19_bn bf16 nhwc" "vgg19_bn bf16 nhwc" "$s" --work vgg19_bn --device cuda \
    --precision bf16 --channels-last "${vgg_shape[@]}" "${steps[@]}"
  peer "torch vgg19_bn bf16 nhwc (amp)" bench/peer_vgg_channels_last.py --precision bf16 "${vgg_shape[@]}" "${steps[@]}"
  vgg "sonata vgg19_bn fp32" "vgg19_bn fp32" "$s" --work vgg19_bn --device cuda "${vgg_shape[@]}" "${steps[@]}"
  peer "torch vgg19_bn fp32" bench/peer_torch.py --work vgg19_bn --device cuda "${vgg_shape[@]}" "${steps[@]}"
  if [ "$graphs" = 1 ]; then
    measure "sonata ds2 fp32 graphs" "ds2 fp32 graphs" "$s" --work ds2 --device cuda --cuda-graphs \
      "${ds2_shape[@]}" "${ds2_labels[@]}" "${steps[@]}"
    vgg "sonata vgg19_bn bf16 nhwc graphs" "vgg19_bn bf16 nhwc graphs" "$s" --work vgg19_bn \
      --device cuda --precision bf16 --channels-last --cuda-graphs "${vgg_shape[@]}" "${steps[@]}"
  else
    row "CUDA graphs" "skipped: not built yet" "bench_models has no --cuda-graphs ([gpu-speed])"
  fi
fi

# 4. (and 8.) The speech demo's DS2 from the carried feature cache: the card decodes no audio.
speech=${SONATA_SPEECH_DATA:-.deps/speech}
# The speech demo's model (8-channel convolutions, two BiLSTM layers of 128); short shapes: a
# smaller one, the emulator's seconds a step being CI's.
speech_model=(--conv-channels 8 --hidden 128 --layers 2)
[ "$shapes" = bench ] || speech_model=(--conv-channels 4 --hidden 16 --layers 1)
: >"$metrics"
train_speech() {  # train_speech PRECISION
  local name="train speech $1" rc t0 run_metrics
  if [ ! -x "$build/trainer" ]; then
    failed "$name" "trainer not built"
    return 0
  elif [ ! -f "$speech/train.tsv" ] || [ ! -f "$speech/cache/index.json" ]; then
    failed "$name" "no corpus in $speech: run tools/prepare_card.sh here before"
    return 0
  fi
  has_time "$name" 25 || return 0
  echo "== trainer --precision $1" >>"$benchlog"
  run_metrics=$(mktemp)
  t0=$(date +%s)
  bounded 90 "$build/trainer" --model ds2 "${speech_model[@]}" \
    --train "$speech/train.tsv" --val "$speech/dev.tsv" --feature-cache "$speech/cache" \
    --device cuda --precision "$1" --batch-size 16 --epochs "${SONATA_GPU_CHECK_EPOCHS:-4}" \
    --optimizer adamw --lr 3e-3 --weight-decay 1e-2 --warmup 0.5 --schedule cosine \
    --grad-clip 5 --beam-width 0 --show-transcripts 0 --progress lines --log-every 30 \
    --metrics "$run_metrics" >>"$benchlog" 2>&1
  rc=$?
  { echo "{\"run\": \"$name\", \"rc\": $rc}"; cat "$run_metrics"; } >>"$metrics"
  rm -f "$run_metrics"
  if [ "$rc" = 0 ]; then
    row "$name" "ok" "$(grep '^val:' "$benchlog" | tail -1) in $(($(date +%s) - t0)) s"
  else
    failed "$name" "rc=$rc; bench.log"
  fi
}
train_speech fp32

# 5. Where one DS2 step's time goes: the kernels that take most of it, then Nsight Compute's
# speed-of-light and memory sections of those (tools/card/ncu_top_kernels.sh).
if on_card "ncu top kernels" && has_time "ncu top kernels" 60; then
  if ! command -v ncu >/dev/null 2>&1; then
    failed "ncu top kernels" "ncu not found"
  else
    bounded 150 tools/card/ncu_top_kernels.sh "$results/ncu.log" "$build/bench_models" --work ds2 \
      --device cuda --steps 1 --warmup 0 >>"$benchlog" 2>&1
    rc=$?
    if [ "$rc" = 0 ]; then row "ncu top kernels" "ok" "$(head -1 "$results/ncu.log"); ncu.log"; else failed "ncu top kernels" "rc=$rc; ncu.log"; fi
  fi
fi

# 6. compute-sanitizer memcheck over a short run of CUDA tests.
if on_card "compute-sanitizer" && has_time "compute-sanitizer" 40; then
  if ! command -v compute-sanitizer >/dev/null 2>&1; then
    failed "compute-sanitizer" "compute-sanitizer not found"
  else
    OMP_NUM_THREADS=4 bounded 120 compute-sanitizer --tool memcheck --error-exitcode 3 --print-limit 20 \
      "$build/tests/sonata_cuda_tests" "[softmax],[ctc],[elementwise]" >"$results/sanitizer.log" 2>&1
    rc=$?
    if [ "$rc" = 0 ]; then
      row "compute-sanitizer" "ok" "memcheck: $(grep -m1 -oE 'ERROR SUMMARY: [0-9]+ errors?' "$results/sanitizer.log")"
    else
      failed "compute-sanitizer" "rc=$rc (3: memcheck found errors); sanitizer.log"
    fi
  fi
fi

# 7. The DDP reducer over a one-rank NCCL group (no MPI, which neither the card nor this build
# has): DS2's gradient buckets all-reduced by the card's NCCL on its own stream while backward
# runs, against the same steps without the reducer.
if [ ! -x "$build/bench_ddp" ]; then
  failed "NCCL world 1 (reducer)" "bench_ddp not built"
else
  ddp_shape=()
  [ "$shapes" = bench ] || ddp_shape=(--hidden 16 --layers 1 --frames 40 --batch 2)
  measure "NCCL world 1 (reducer)" "" "$build/bench_ddp" --device cuda --group nccl \
    "${ddp_shape[@]}" "${steps[@]}"
fi

# 8. The other precisions, while time is left.
train_speech bf16
train_speech fp16

finish
