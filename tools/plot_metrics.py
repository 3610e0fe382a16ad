#!/usr/bin/env python3
"""Draws a trainer run's curves from its JSONL metrics log (trainer --metrics, by default
<checkpoint-dir>/metrics.jsonl) into one PNG: training loss, learning rate, gradient norm and
loss scale against the optimizer step, and every evaluation figure (CER/WER, accuracy, loss)
of each split; error rates and accuracies in percent (the log keeps fractions).

Usage: tools/plot_metrics.py METRICS.jsonl [--out curves.png] [--title TEXT]

Needs matplotlib (Debian: python3-matplotlib; run with /usr/bin/python3 where the first
python3 on PATH does not see Debian's packages). Lines that are not JSON objects are refused
with their line number; a run that was resumed (the log appended to) plots as one run.
"""
import argparse
import json
import sys


def read_log(path):
    records = []
    with open(path, encoding="utf-8") as log:
        for number, line in enumerate(log, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                sys.exit(f"plot_metrics: {path} line {number} is not JSON ({error})")
            if not isinstance(record, dict):
                sys.exit(f"plot_metrics: {path} line {number} is not a JSON object")
            records.append(record)
    if not records:
        sys.exit(f"plot_metrics: {path} holds no records")
    return records


def series(records, event, key, split=None):
    points = [(r["step"], r[key]) for r in records
              if r.get("event") == event and key in r and "step" in r
              and (split is None or r.get("split") == split)]
    return [p[0] for p in points], [p[1] for p in points]


def is_rate(key):
    """Error rates and accuracies: fractions in the log, percent on the axes (as the
    trainer prints them)."""
    return key.endswith(("cer", "wer", "accuracy"))


def rate_label(key):
    """beam_cer -> beam CER, track_accuracy -> track accuracy."""
    text = key.replace("_", " ")
    if text.endswith(("cer", "wer")):
        text = text[:-3] + text[-3:].upper()
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("metrics")
    parser.add_argument("--out", default="curves.png")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()
    records = read_log(args.metrics)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_metrics: matplotlib is missing (apt-get install python3-matplotlib, "
                 "then run with /usr/bin/python3)")

    train_keys = [k for k in ("loss", "lr", "grad_norm", "loss_scale")
                  if series(records, "train", k)[0]]
    splits = sorted({r.get("split") for r in records if r.get("event") == "eval"} - {None})
    eval_keys = sorted({k for r in records if r.get("event") == "eval" for k in r}
                       - {"event", "split", "epoch", "step", "elapsed_s"})
    panels = [("train", k) for k in train_keys] + [("eval", k) for k in eval_keys]
    columns = 2
    rows = (len(panels) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(11, 3.2 * rows), squeeze=False)
    for axis, (event, key) in zip(axes.flat, panels):
        if event == "train":
            steps, values = series(records, "train", key)
            axis.plot(steps, values, linewidth=1)
            if key in ("loss", "grad_norm", "loss_scale") and min(values) > 0:
                axis.set_yscale("log")
        else:
            rate = is_rate(key)
            for split in splits:
                steps, values = series(records, "eval", key, split)
                if steps:
                    if rate:
                        values = [100.0 * v for v in values]
                    axis.plot(steps, values, marker="o", label=split)
            axis.legend()
            if rate:
                axis.set_ylabel(f"{rate_label(key)} (%)")
        axis.set_title(f"{event} {rate_label(key) if event == 'eval' else key}")
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    for axis in list(axes.flat)[len(panels):]:
        axis.axis("off")
    figure.suptitle(args.title or args.metrics)
    figure.tight_layout()
    figure.savefig(args.out, dpi=100)
    print(f"plot_metrics: wrote {args.out} ({len(records)} records)")


if __name__ == "__main__":
    main()
