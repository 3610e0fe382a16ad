#!/usr/bin/env bash
# Nsight Compute on one run of COMMAND (a training step): first every kernel's GPU time alone
# (one metric, a quick pass), then the speed-of-light and memory-workload sections of the
# kernels that took most of it. nsys is not on the lent machines' PATH; ncu is.
#   tools/card/ncu_top_kernels.sh LOG COMMAND...     (SONATA_NCU_TOP: how many kernels, 5)
# LOG's first line says which kernels and how much of the step's GPU time they took.
# --clock-control none: the card's clocks as they are (the machine is shared after us).
set -euo pipefail
log=$1
shift
top=${SONATA_NCU_TOP:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ncu --clock-control none --kernel-name-base function --metrics gpu__time_duration.sum --csv \
  --print-units base --log-file "$work/times.csv" "$@" >/dev/null
# Rows: "ID","Process ID","Process Name","Host Name","Kernel Name",...,"Metric Value" (last).
python3 - "$work/times.csv" "$top" >"$work/top.txt" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
header = rows[0]
name, value = header.index("Kernel Name"), header.index("Metric Value")
total = collections.Counter()
for r in rows[1:]:
    total[r[name]] += float(r[value].replace(",", ""))
whole = sum(total.values()) or 1.0
top = total.most_common(int(sys.argv[2]))
print(f"top {len(top)} of {len(total)} kernels: {100 * sum(t for _, t in top) / whole:.0f} % of {whole / 1e6:.2f} ms GPU time")
for kernel, ns in top:
    print(f"{ns / 1e6:9.3f} ms {100 * ns / whole:5.1f} %  {kernel}")
PY
cp "$work/top.txt" "$log"
regex=$(tail -n +2 "$work/top.txt" | sed -E 's/^ *[0-9.]+ ms +[0-9.]+ %  //' |
  sed -E 's/[][\\.^$*+?(){}|]/\\&/g' | paste -sd'|')
{
  echo
  ncu --clock-control none --kernel-name-base function --kernel-name "regex:^($regex)\$" \
    --launch-count "$top" --section SpeedOfLight --section MemoryWorkloadAnalysis "$@"
} >>"$log" 2>&1
