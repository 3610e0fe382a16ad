#!/usr/bin/env bash
# README command 1, the main job, on a fresh Debian machine (root or sudo):
#   tools/demo.sh          speech: writes a spoken-digits corpus with espeak-ng (2400 training
#                          clips, held-out test voices), trains a small DeepSpeech2 with CTC on
#                          it (the GPU if there is one, else the CPU), and ends with the dev
#                          and test-voice CER/WER and decoded transcripts
#   tools/demo.sh genre    genre: a synthetic 16-genre music corpus, a narrow VGG19_BN on dB
#                          mel images of 2 s slices, ending with slice and track accuracy and
#                          the confusion matrix
#   tools/demo.sh fsdd DIR real speech: the Free Spoken Digit Dataset's recordings in
#                          DIR/recordings/ (or DIR from SONATA_FSDD; get them with git clone
#                          https://github.com/Jakobovski/free-spoken-digit-dataset), split by
#                          speaker (tools/prepare/fsdd.py: the last speaker by name is test,
#                          never heard in training), DS2 on 8 kHz features, ending with the
#                          held-out speaker's CER/WER
# Any further arguments go to the trainer (e.g. --epochs 3, --device cpu). Data goes to
# demo_data/ (SONATA_DEMO_DATA), checkpoints and metrics.jsonl to runs/<demo>/.
set -euo pipefail
caller_dir=$PWD
cd "$(dirname "$0")/.."
demo=${1:-speech}
[ $# -gt 0 ] && shift
# python3-matplotlib: tools/plot_metrics.py draws the run's curves afterwards.
case "$demo" in
  speech) extra="espeak-ng sox python3 python3-matplotlib" ;;
  genre) extra="python3 python3-matplotlib" ;;
  fsdd)
    extra="python3 python3-matplotlib"
    # The dataset's folder (relative to where the command was run) before the trainer's
    # options, or SONATA_FSDD: the recordings are not part of the repository.
    fsdd_dir=${SONATA_FSDD:-}
    if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
      fsdd_dir=$1
      shift
    fi
    if [ -z "$fsdd_dir" ]; then
      echo "tools/demo.sh fsdd: name the folder of the Free Spoken Digit Dataset (tools/demo.sh fsdd DIR, or SONATA_FSDD=DIR); get it with: git clone https://github.com/Jakobovski/free-spoken-digit-dataset" >&2
      exit 2
    fi
    case $fsdd_dir in /*) ;; *) fsdd_dir=$caller_dir/$fsdd_dir ;; esac
    if [ ! -d "$fsdd_dir/recordings" ]; then
      echo "tools/demo.sh fsdd: '$fsdd_dir' holds no recordings/ folder (the Free Spoken Digit Dataset: git clone https://github.com/Jakobovski/free-spoken-digit-dataset)" >&2
      exit 2
    fi
    ;;
  *) echo "usage: tools/demo.sh [speech|genre|fsdd DIR] [trainer options...]" >&2; exit 2 ;;
esac
# Without a GPU the CUDA backend would only cost build time here (tools/test.sh builds it).
if ! { command -v nvidia-smi && nvidia-smi -L; } >/dev/null 2>&1; then
  export SONATA_CUDA=${SONATA_CUDA:-OFF}
fi
SONATA_EXTRA_PACKAGES="$extra" SONATA_BUILD_TARGETS=trainer tools/setup.sh
build_dir=${SONATA_BUILD_DIR:-build}
data=${SONATA_DEMO_DATA:-demo_data}
runs=runs/$demo
rm -rf "$runs"

# The recipes live in tools/recipes/ (the benchmarks train the same); options given here win
# over the recipe's (`tools/demo.sh speech --epochs 3`). A shorter run than the recipe's
# keeps its share of warmup (tools/demo/short_run.py), unless --warmup is given too.
case "$demo" in
  speech) recipe=tools/recipes/speech_demo.yaml ;;
  fsdd) recipe=tools/recipes/fsdd.yaml ;;
  *) recipe=tools/recipes/genre_demo.yaml ;;
esac
read -r -a short_run <<<"$(python3 tools/demo/short_run.py "$recipe" "$@")"
if [ "$demo" = speech ]; then
  python3 tools/demo/make_speech_demo.py --out "$data/speech"
  exec "$build_dir/trainer" --config "$recipe" \
    --train "$data/speech/train.tsv" --val "$data/speech/dev.tsv" --test "$data/speech/test.tsv" \
    --checkpoint-dir "$runs" "${short_run[@]}" "$@"
elif [ "$demo" = fsdd ]; then
  python3 tools/prepare/fsdd.py "$fsdd_dir" --out "$data/fsdd"
  exec "$build_dir/trainer" --config "$recipe" \
    --train "$data/fsdd/train.tsv" --val "$data/fsdd/dev.tsv" --test "$data/fsdd/test.tsv" \
    --checkpoint-dir "$runs" "${short_run[@]}" "$@"
else
  python3 tools/demo/make_genre_demo.py --out "$data/genre"
  exec "$build_dir/trainer" --config "$recipe" \
    --train "$data/genre/train.tsv" --val "$data/genre/val.tsv" --test "$data/genre/test.tsv" \
    --checkpoint-dir "$runs" "${short_run[@]}" "$@"
fi
