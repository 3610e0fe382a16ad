#!/usr/bin/env bash
# Run here (espeak-ng, sox and libsndfile; no GPU needed) before tools/gpu_check.sh on a lent
# GPU machine, which has neither espeak-ng nor libsndfile: writes a small spoken-digits
# corpus (tools/demo/make_speech_demo.py: 480 training clips, 60 dev, 60 test) into
# .deps/speech, featurises it there (build/featurize, f16, the trainer's default feature
# flags) into .deps/speech/cache, then empties the audio files, about 20 MB in all. The cache
# knows each clip by its path relative to the cache too (data/cache/feature_cache.h), so the
# folder carried to another path or machine still finds every clip's features, and the
# trainer reads no audio with --feature-cache. Part of tools/prepare_card.sh.
#   tools/demo/make_gpu_check_corpus.sh [BUILD_DIR]
# BUILD_DIR (default: $SONATA_BUILD_DIR, else build) is any configured build with libsndfile;
# without one, a CPU-only build-prep/ is configured for featurize alone.
# SONATA_CORPUS_SIZES="TRAIN DEV TEST" sets the clip counts (the CI rehearsal: "16 4 4").
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-${SONATA_BUILD_DIR:-build}}
read -r train dev test <<<"${SONATA_CORPUS_SIZES:-480 60 60}"
out=.deps/speech
if [ ! -f "$build/CMakeCache.txt" ]; then
  build="build-prep"
  launcher=()
  command -v ccache >/dev/null &&
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSONATA_CUDA=OFF -DSONATA_MPI=OFF \
    "${launcher[@]}" >/dev/null
fi
cmake --build "$build" --target featurize
rm -rf "$out"
python3 tools/demo/make_speech_demo.py --out "$out" --train "$train" --dev "$dev" --test "$test"
for split in train dev test; do
  "$build/featurize" --manifest "$out/$split.tsv" --out "$out/cache" --dtype f16 --workers 2
done
# Empty stand-ins for the audio: the manifest reader checks that every listed file exists,
# and with --feature-cache nothing reads them.
find "$out/wav" -name '*.wav' -exec truncate -s 0 {} +
du -sh "$out"
