#!/usr/bin/env bash
# Run here (espeak-ng, sox and libsndfile; no GPU needed) before tools/gpu_check.sh on a lent
# GPU machine, which has neither espeak-ng nor libsndfile: writes a small spoken-digits
# corpus (tools/demo/make_speech_demo.py: 480 training clips, 60 dev, 60 test) and its log-mel
# features (build/featurize, f16, the trainer's default feature flags) into .deps/speech with
# the manifests, about 20 MB. Carried with .deps, it lets the GPU check train the speech
# demo's DS2 from the feature cache, where no audio is decoded.
#   tools/demo/make_gpu_check_corpus.sh [BUILD_DIR]     (default: $SONATA_BUILD_DIR or build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-${SONATA_BUILD_DIR:-build}}
out=.deps/speech
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$build/featurize" ] || cmake --build "$build" --target featurize
python3 tools/demo/make_speech_demo.py --out "$tmp/speech" --train 480 --dev 60 --test 60
rm -rf "$out" && mkdir -p "$out"
for split in train dev test; do
  "$build/featurize" --manifest "$tmp/speech/$split.tsv" --out "$out/cache" --dtype f16 --workers 2
  cp "$tmp/speech/$split.tsv" "$out/"
  # Empty stand-ins for the audio: the manifest reader checks that every listed file exists,
  # and with --feature-cache nothing reads them.
  cut -f1 "$out/$split.tsv" | while IFS= read -r clip; do
    mkdir -p "$out/$(dirname "$clip")" && : >"$out/$clip"
  done
done
du -sh "$out"
