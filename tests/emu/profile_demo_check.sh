#!/usr/bin/env bash
# Runs profile_step_demo with one planted defect under the emulated profile and checks that
# tools/profile/emu_profile.py's budget check fails on it, naming it (or passes, for "none").
#   profile_demo_check.sh DEMO SOURCE_DIR none|malloc|sync|strided|launches
set -uo pipefail
demo=$1 source=$2 plant=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
SONATA_EMU_PROFILE="$work/p.jsonl" "$demo" "$plant" || { echo "the demo failed"; exit 1; }
output=$(python3 "$source/tools/profile/emu_profile.py" check "$work/p.jsonl" \
  --budget "$source/tests/emu/profile_demo_budget.json" --model demo 2>&1)
status=$?
echo "$output"
case "$plant" in
  none) expect="budgets of 'demo' hold" ;;
  malloc) expect="driver allocation cudaMalloc at main" ;;
  sync) expect="host wait cudaStreamSynchronize at main" ;;
  strided) expect="kernel strided_gather_kernel: sector efficiency loads 12%" ;;
  launches) expect="5 kernel launches + library calls, above the ceiling 2" ;;
esac
if [ "$plant" = none ]; then
  [ $status = 0 ] || { echo "FAIL: the clean demo broke a budget"; exit 1; }
else
  [ $status = 1 ] || { echo "FAIL: the planted '$plant' passed the budgets"; exit 1; }
fi
grep -qF "$expect" <<<"$output" || { echo "FAIL: expected '$expect' in the check's output"; exit 1; }
echo "ok: '$plant' $([ "$plant" = none ] && echo passes || echo 'breaks its budget')"
