#!/usr/bin/env bash
# The first card's check rehearsed on the CUDA emulator (tools/test.sh runs it after the
# emulator build's tests): tools/prepare_card.sh in one copy of the checkout, then
# tools/gpu_check.sh, unchanged, in another copy at another path holding only the carried
# .deps (the first copy deleted, so no path of it can be found), without network, at short
# shapes and a short budget, against the emulator build that tools/test.sh made (no build of
# its own). Passes when the check passes, its results fit the device tool's 8 files, and the
# only rows skipped are what a card alone can do ("skipped: no card") and the hooks of work
# not built yet ("skipped: not built yet").
#   tools/rehearse_gpu_check.sh [BUILD_DIR]      (default: build-emu; SONATA_CUDA=EMU, built)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build-emu}" && pwd)
grep -q '^SONATA_CUDA:STRING=EMU' "$build/CMakeCache.txt" ||
  { echo "rehearse_gpu_check: $build is not an emulator build (SONATA_CUDA=EMU)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
# copy_checkout DEST: what the device tool sends, tracked and untracked-not-ignored files.
copy_checkout() {
  mkdir -p "$1"
  git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$1"
}

# Here: prepare the carried folder (a small corpus; the build is configured already, so no
# header packages are fetched).
copy_checkout "$work/here"
SONATA_CORPUS_SIZES="${SONATA_REHEARSAL_CORPUS:-12 4 4}" SONATA_PREPARE_FETCH=0 \
  "$work/here/tools/prepare_card.sh" "$build" >"$work/prepare.log" 2>&1 ||
  { cat "$work/prepare.log"; exit 1; }
tail -1 "$work/prepare.log"

# There: another path, the checkout and the carried folder alone.
copy_checkout "$work/card/sonata"
mv "$work/here/.deps" "$work/card/sonata/.deps"
rm -rf "$work/here"
t1=$(date +%s)

# No network where unshare can take it away (root, or user namespaces).
isolate=()
unshare -rn true 2>/dev/null && isolate=(unshare -rn)
mkdir -p "$work/results"
rc=0
env -u PYTHON SONATA_BUILD_DIR="$build" SONATA_GPU_CHECK_SHAPES=short \
  SONATA_GPU_CHECK_BUDGET_S="${SONATA_REHEARSAL_BUDGET_S:-600}" SONATA_GPU_CHECK_EPOCHS=1 \
  SONATA_GPU_CHECK_TESTS='^cuda/(softmax and log_softmax match the CPU|max_pool2d matches the CPU)$' \
  "${isolate[@]}" "$work/card/sonata/tools/gpu_check.sh" "$work/results" >"$work/check.log" 2>&1 || rc=$?
t2=$(date +%s)

summary="$work/results/summary.md"
problems=()
[ "$rc" = 0 ] || problems+=("gpu_check.sh exited $rc")
[ -f "$summary" ] || problems+=("no summary.md")
files=$(find "$work/results" -type f | wc -l)
[ "$files" -le 8 ] || problems+=("$files result files (the device tool brings back 8)")
# Every row that is skipped must say why in one of the two accepted ways, and the card-only
# rows must be exactly those.
while IFS= read -r line; do
  problems+=("a row skipped for another reason: $line")
done < <(grep -E '^\| [^|]+ \| skipped' "$summary" | grep -vE '\| skipped: (no card|not built yet) \|' || true)
card_only=$(grep -E '\| skipped: no card \|' "$summary" | cut -d'|' -f2 | sed 's/^ *//; s/ *$//' | sort | paste -sd,)
expected="compute-sanitizer,ncu top kernels,sonata vgg19_bn bf16 nhwc,sonata vgg19_bn fp32,torch ds2 bf16 (amp),torch ds2 fp32,torch vgg19_bn bf16 nhwc (amp),torch vgg19_bn fp32"
[ "$card_only" = "$expected" ] || problems+=("card-only rows: '$card_only', expected '$expected'")
for step in build "CUDA tests" "sonata ds2 fp32" "train speech fp32" "train speech bf16" \
  "train speech fp16" results; do
  grep -qE "^\| $step \| ok" "$summary" || problems+=("no ok row for '$step'")
done

cat "$summary" 2>/dev/null || tail -40 "$work/check.log"
echo "rehearsal: prepare $((t1 - t0)) s, check $((t2 - t1)) s, $files result files"
if [ "${#problems[@]}" != 0 ]; then
  tail -60 "$work/check.log"
  printf 'rehearsal FAILED: %s\n' "${problems[@]}"
  exit 1
fi
echo "rehearsal passed"
