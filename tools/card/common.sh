# shellcheck shell=bash disable=SC2154,SC2034
# Sourced by tools/gpu_check.sh: the summary table's rows and the time budget. Expects
# $summary (the table's file) and $deadline (epoch seconds); counts failed rows in $failures.

# row STEP RESULT DETAIL [PREDICTED]: one line of the summary table.
row() { printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "${4:-}" >>"$summary"; }
failed() {  # failed STEP DETAIL: a row, counted in the exit status
  row "$1" "FAILED" "$2"
  failures=$((failures + 1))
}
left() { echo $((deadline - $(date +%s))); }
# bounded CAP_S COMMAND...: COMMAND under a timeout of CAP_S or the time left before the
# deadline, whichever is shorter (exit 124 when it ran out).
bounded() {
  local cap=$1 rest
  shift
  rest=$(left)
  [ "$rest" -lt "$cap" ] && cap=$rest
  [ "$cap" -lt 1 ] && return 124
  timeout --kill-after=10 "$cap" "$@"
}
# has_time STEP NEED_S: true when NEED_S seconds are left, else a "skipped" row.
has_time() {
  [ "$(left)" -ge "$2" ] && return 0
  row "$1" "skipped" "time budget ($(left) s left, $2 s needed)"
  return 1
}
# on_card STEP: true on a machine with a GPU; else the row every card-only step gets.
on_card() {
  [ "$card" = 1 ] && return 0
  row "$1" "skipped: no card" "$card_reason"
  return 1
}
# ctest_counts LOG: "P passed, F failed, S skipped" from ctest's per-test lines (which
# survive a run cut short by the timeout, unlike its closing summary).
ctest_counts() {
  printf '%d passed, %d failed, %d skipped' "$(grep -cE 'Test +#[0-9]+: .* +Passed +[0-9.]+ sec' "$1")" \
    "$(grep -cE 'Test +#[0-9]+: .*\*\*\*(Failed|Exception|Timeout|Not Run)' "$1")" \
    "$(grep -cE 'Test +#[0-9]+: .*\*\*\*Skipped' "$1")"
}
