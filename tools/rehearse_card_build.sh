#!/usr/bin/env bash
# The lent GPU machine's build, rehearsed here: nvcc against cuDNN and NCCL taken from the same
# PyPI wheels the card's PyTorch brings (nvidia-cudnn-cu13, nvidia-nccl-cu13), not from the
# toolkit's or the system's headers; MPI, libsndfile, OpenBLAS and the image codecs off; only
# the targets tools/gpu_check.sh runs, by its own stage 1 (SONATA_GPU_CHECK_STAGES=build).
# Then checks that the objects included the wheels' cudnn.h and that the binaries load the
# wheels' libcudnn. Needs nvcc here and pip with network; slow on 2 cores (docs/building.md).
#   tools/rehearse_card_build.sh [RESULTS_DIR]      (default: results-card-build)
# The wheels go into .wheels/ (git-ignored, about 2 GB unpacked), the build into build-card/.
set -euo pipefail
cd "$(dirname "$0")/.."
results=${1:-results-card-build}
wheels=.wheels
if [ ! -d "$wheels/site/nvidia/cudnn" ] || [ ! -d "$wheels/site/nvidia/nccl" ]; then
  mkdir -p "$wheels"
  # The card runs Python 3.12 on x86-64 (the wheels are py3-none, so any version matches).
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$wheels" "nvidia-cudnn-cu13${SONATA_CUDNN_VERSION:+==$SONATA_CUDNN_VERSION}" \
    "nvidia-nccl-cu13${SONATA_NCCL_VERSION:+==$SONATA_NCCL_VERSION}"
  for wheel in "$wheels"/nvidia_cudnn_cu13-*.whl "$wheels"/nvidia_nccl_cu13-*.whl; do
    python3 -m zipfile -e "$wheel" "$wheels/site"
  done
fi
site=$PWD/$wheels/site
echo "wheels: $(cd "$site" && echo nvidia_*.dist-info)"

rc=0
SONATA_WHEEL_SITE=$site SONATA_BUILD_DIR=${SONATA_BUILD_DIR:-build-card} SONATA_CUDA_ARCHS=${SONATA_CUDA_ARCHS:-90} \
  SONATA_GPU_CHECK_STAGES=build SONATA_GPU_CHECK_BUDGET_S=${SONATA_REHEARSAL_BUDGET_S:-14400} \
  SONATA_GPU_CHECK_BUILD_S=${SONATA_REHEARSAL_BUDGET_S:-14400} tools/gpu_check.sh "$results" || rc=$?
build=${SONATA_BUILD_DIR:-build-card}

# Which cudnn.h and nccl.h the objects saw (ninja's recorded header dependencies), and which libcudnn a
# binary loads with no LD_LIBRARY_PATH (its run path).
headers=$(ninja -C "$build" -t deps 2>/dev/null | grep -oE '[^ ]*/(cudnn|nccl)\.h$' | sort -u |
  while read -r header; do (cd "$build" && realpath -m "$header"); done || true)
echo "cudnn.h / nccl.h included from: ${headers:-nothing built yet}"
if [ -n "$headers" ] && grep -qv "^$site/" <<<"$headers"; then
  echo "FAILED: a cuDNN or NCCL header from outside the wheels was included"
  rc=1
fi
for binary in trainer bench_models tests/sonata_cuda_tests; do
  [ -x "$build/$binary" ] || { echo "$binary: not built"; rc=1; continue; }
  loaded=$(env -u LD_LIBRARY_PATH ldd "$build/$binary" | grep -E 'libcudnn|libnccl' || true)
  echo "$binary: ${loaded:-links neither cuDNN nor NCCL}"
  if grep -q libcudnn <<<"$loaded" && grep libcudnn <<<"$loaded" | grep -qv "$site/"; then
    echo "FAILED: $binary loads a libcudnn from outside the wheels"
    rc=1
  fi
done
exit "$rc"
