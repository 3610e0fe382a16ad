#!/usr/bin/env bash
# The emulated profile's predicted step times of tools/gpu_check.sh's rows, as KEY<TAB>ms lines
# (tools/prepare_card.sh writes them to .deps/predictions.tsv): the roofline MODEL recorded in
# bench/gpu_predictions.tsv, where each figure says how it was obtained. Re-deriving one takes
# the emulator minutes to hours (docs/profiling.md), so the recorded figures are carried.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -v '^#' bench/gpu_predictions.tsv | awk -F'\t' 'NF == 2 { print $1 "\t" $2 }'
