#!/usr/bin/env python3
"""Held-out-speaker protocol: the speech demo's recipe trained by sonata (bench/train_speech.py)
and by the PyTorch peer (bench/peer_train_speech.py) on one speaker split of the Free Spoken
Digit Dataset, over several seeds, reporting each side's mean and spread of held-out CER/WER
and wall time.

  bench/realspeech.py --data FSDD_DIR [--seeds 5] [--epochs 12] [--jobs 2]
                      [--test-speakers lucas,yweweler] [--sides sonata,torch]
                      [--label default] [--sonata-args="--pad-frames-to 1"] [--torch-args=...]
  bench/realspeech.py --report runs/realspeech/results.jsonl    # the table again

The split (tools/prepare/fsdd.py --split speakers): the --test-speakers are held out (test,
never heard in training); the other speakers' recordings with index >= --dev-indices train,
those below it are dev. It is written to WORK/split/ (train.tsv, dev.tsv, test.tsv) and its
speakers printed. Seeds are 1..N on both sides (the trainer's --seed, the peer's --seed).
Each run's JSON line goes to WORK/results.jsonl with --label, the side and the split, so that
ablations (a --label per switch) accumulate in one file; the table at the end covers the
lines of this --label (or every label with --report).

Runs go --jobs at a time with OMP_NUM_THREADS / --threads = --threads each (default 1: two
single-threaded runs on a 2-core machine). Wall times on a machine shared with other work are
not comparable; CER is.
"""
import argparse
import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TEST_SPEAKERS = "lucas,yweweler"


def prepare_split(a):
    split = os.path.join(a.work, "split")
    command = [sys.executable, os.path.join(ROOT, "tools", "prepare", "fsdd.py"), a.data, "--out",
               split, "--split", "speakers", "--test-speakers", a.test_speakers,
               "--dev-indices", str(a.dev_indices)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("realspeech: preparing the split failed: " + done.stderr.strip())
    print("realspeech: " + done.stdout.strip().replace("\n", "; "), file=sys.stderr, flush=True)
    return split


def side_command(side, seed, split, a):
    common = ["--data", split, "--epochs", str(a.epochs), "--threads", str(a.threads),
              "--seed", str(seed), "--work", "realspeech"]
    if side == "sonata":
        return ([sys.executable, os.path.join(ROOT, "bench", "train_speech.py")] + common +
                ["--build-dir", a.build_dir, "--"] + a.sonata_args.split())
    python = os.environ.get("SONATA_PEERS_PYTHON", sys.executable)
    return ([python, os.path.join(ROOT, "bench", "peer_train_speech.py")] + common +
            a.torch_args.split())


def run_one(side, seed, split, a):
    command = side_command(side, seed, split, a)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    log_path = os.path.join(a.work, "logs", "%s_%s_seed%d.log" % (a.label, side, seed))
    with open(log_path, "w") as log:
        log.write(" ".join(command) + "\n")
        log.flush()
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
    if done.returncode != 0 or not lines:
        print("realspeech: %s seed %d failed (exit %d), see %s" % (side, seed, done.returncode,
                                                                   log_path), file=sys.stderr)
        return None
    record = json.loads(lines[-1])
    record.update({"label": a.label, "side": side, "seed": seed, "epochs": a.epochs,
                   "test_speakers": a.test_speakers, "dev_indices": a.dev_indices,
                   "args": a.sonata_args if side == "sonata" else a.torch_args})
    print("realspeech: %s %s seed %d: test CER %.2f %%, WER %.2f %%, %.0f s" % (
        a.label, side, seed, record["test_cer"], record["test_wer"], record["wall_s"]),
        file=sys.stderr, flush=True)
    return record


def stats(values):
    """(mean, sample standard deviation, standard error) of a list."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else float("nan")
    return mean, sd, sd / math.sqrt(n) if n > 1 else float("nan")


def print_table(records):
    groups = {}
    for r in records:
        groups.setdefault((r["label"], r["side"]), []).append(r)
    print("| label | engine | seeds | test CER % (each seed) | CER mean ± sd (se) | "
          "WER mean ± sd | wall s mean |")
    print("|---|---|---|---|---|---|---|")
    for (label, side), rows in sorted(groups.items()):
        rows.sort(key=lambda r: r["seed"])
        cer = stats([r["test_cer"] for r in rows])
        wer = stats([r["test_wer"] for r in rows])
        wall = stats([r["wall_s"] for r in rows])
        each = ", ".join("%.1f" % r["test_cer"] for r in rows)
        print("| %s | %s | %d | %s | %.2f ± %.2f (%.2f) | %.2f ± %.2f | %.0f |" % (
            label, side, len(rows), each, cer[0], cer[1], cer[2], wer[0], wer[1], wall[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--data", help="the FSDD folder (holding recordings/)")
    ap.add_argument("--work", default=os.path.join(ROOT, "runs", "realspeech"),
                    help="split, logs and results.jsonl")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--test-speakers", default=DEFAULT_TEST_SPEAKERS)
    ap.add_argument("--dev-indices", type=int, default=5)
    ap.add_argument("--sides", default="sonata,torch")
    ap.add_argument("--label", default="default")
    ap.add_argument("--sonata-args", default="", help="more trainer options (one string)")
    ap.add_argument("--torch-args", default="", help="more peer options (one string)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--report", help="print the table of this results.jsonl and stop")
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            print_table([json.loads(l) for l in f if l.strip()])
        return 0
    if not a.data:
        sys.exit("realspeech: --data names the FSDD folder (holding recordings/)")
    sides = [s for s in a.sides.split(",") if s]
    unknown = [s for s in sides if s not in ("sonata", "torch")]
    if unknown or a.seeds < 1 or a.jobs < 1:
        sys.exit("realspeech: --sides takes sonata and/or torch, --seeds and --jobs at least 1")
    os.makedirs(os.path.join(a.work, "logs"), exist_ok=True)
    split = prepare_split(a)
    runs = [(side, seed) for seed in range(a.first_seed, a.first_seed + a.seeds) for side in sides]
    results_path = os.path.join(a.work, "results.jsonl")
    records = []
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for record in pool.map(lambda run: run_one(run[0], run[1], split, a), runs):
            if record:
                records.append(record)
                with open(results_path, "a") as out:
                    out.write(json.dumps(record) + "\n")
    if records:
        print_table(records)
    return 0 if len(records) == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
