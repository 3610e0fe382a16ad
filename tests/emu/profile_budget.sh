#!/usr/bin/env bash
# The emulated profile's budgets (issue #47): trains a tiny model on an emulated device for a
# few steps with SONATA_EMU_PROFILE on, then checks the steady-state steps against
# bench/gpu_budgets.json (tools/profile/emu_profile.py check). A broken budget fails the test
# with one line per break, naming the kernel or the host call site.
#   profile_budget.sh TRAINER SOURCE_DIR ds2|vgg19_bn [WORK_DIR]
set -euo pipefail
trainer=$1 source=$2 model=$3
if [ -n "${4:-}" ]; then
  work=$4
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
python3 "$source/tools/profile/make_profile_corpus.py" "$work/corpus" --clips 24
common=(--device cuda --epochs 1 --max-steps 5 --log-every 1000 --progress none --workers 1
        --metrics "$work/$model.metrics.jsonl" --seed 1)
case "$model" in
  ds2)
    args=(--model ds2 --conv-channels 4 --hidden 16 --layers 1 --train "$work/corpus/speech.tsv"
          --batch-size 2 --optimizer adamw --lr 1e-3) ;;
  vgg19_bn)
    args=(--model vgg19_bn --width 0.0625 --dropout 0 --train "$work/corpus/genre.tsv"
          --slice-seconds 1 --image-height 32 --image-width 32 --batch-size 2 --optimizer sgd
          --lr 1e-2) ;;
  *) echo "profile_budget.sh: unknown model '$model' (ds2 | vgg19_bn)" >&2; exit 2 ;;
esac
SONATA_EMU_PROFILE="$work/$model.profile.jsonl" "$trainer" "${common[@]}" "${args[@]}" "${@:5}"
python3 "$source/tools/profile/emu_profile.py" table "$work/$model.profile.jsonl" --top 12 \
  --exclude-last 1
# The last step logs (a host read of the loss, as every --log-every step and epoch end do):
# the budgets are for the steps between.
python3 "$source/tools/profile/emu_profile.py" check "$work/$model.profile.jsonl" \
  --budget "$source/bench/gpu_budgets.json" --model "$model"
