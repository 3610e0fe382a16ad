#!/usr/bin/env bash
# The one command to run here before a lent GPU machine's check (tools/gpu_check.sh there):
# puts everything that machine lacks into .deps/ (git-ignored), the one folder to carry.
#   1. .deps/root: Catch2, nlohmann-json and CLI11 headers (tools/fetch_gpu_deps.sh; apt);
#   2. .deps/speech: the spoken-digits corpus with its feature cache and empty audio files
#      (tools/demo/make_gpu_check_corpus.sh; espeak-ng, sox, libsndfile);
#   3. .deps/predictions.tsv: the step times that [gpu-profile]'s emulated profile predicts
#      for gpu_check's benchmarks, once that tool exists (tools/predict_card_times.sh, which
#      writes "KEY<TAB>MILLISECONDS" lines for the keys gpu_check.sh looks up: "ds2 fp32",
#      "vgg19_bn bf16 nhwc", "vgg19_bn fp32" and their " graphs" variants);
# then checks that the working tree and .deps fit the device call's 64 MiB.
#   tools/prepare_card.sh [BUILD_DIR]    (a configured build for featurize; default build)
# The device call then: run(command="tools/gpu_check.sh $OUT", carry=[".deps"], timeout_s=600).
# SONATA_CORPUS_SIZES as make_gpu_check_corpus.sh; SONATA_PREPARE_FETCH=0 skips step 1 (the
# CI rehearsal, whose build is configured already).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
[ "${SONATA_PREPARE_FETCH:-1}" = 0 ] || tools/fetch_gpu_deps.sh
tools/demo/make_gpu_check_corpus.sh "$@"
# The card's copy of the checkout has no .git: gpu_check.sh reads the commit from here.
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
  git diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
  echo "$commit" >.deps/commit
fi
rm -f .deps/predictions.tsv
if [ -x tools/predict_card_times.sh ]; then
  tools/predict_card_times.sh >.deps/predictions.tsv
else
  echo "predictions: skipped: not built yet ([gpu-profile]: tools/predict_card_times.sh)"
fi

# What the device call sends: tracked and untracked-not-ignored files, and the carried .deps.
tree=$( (git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null || true) | tail -1 | cut -f1)
deps=$(du -sb .deps | cut -f1)
mib() { echo "$(($1 / 1048576)).$(($1 % 1048576 * 10 / 1048576)) MiB"; }
echo "prepared in $(($(date +%s) - t0)) s: working tree $(mib "$tree") + .deps $(mib "$deps") = $(mib $((tree + deps))) of 64 MiB"
if [ $((tree + deps)) -gt $((64 * 1048576)) ]; then
  echo "too large for the device call's 64 MiB: use fewer clips (SONATA_CORPUS_SIZES)" >&2
  exit 1
fi
