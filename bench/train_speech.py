#!/usr/bin/env python3
"""sonata's side of the main job's end-to-end comparison: the speech demo's recipe trained by
build/trainer on a corpus, timed as a whole process, printing one JSON line in the schema of
bench/peer_train_speech.py (wall_s, dev_cer_under_5_at_s, dev_cer_under_1_at_s, dev_cer,
test_cer, test_wer), so bench/compare --work demo can put the two side by side.

  bench/train_speech.py --data demo_data/speech [--epochs 6] [--threads 2] [--build-dir build]
                        [--seed 1] [--work demo] [-- TRAINER OPTIONS...]

The recipe is tools/recipes/speech_demo.yaml (the one tools/demo.sh trains), evaluated after
every epoch with greedy decoding only (as the peer: --beam-width 0). Times come from the
trainer's metrics.jsonl (elapsed_s of each dev evaluation, from the process start), the wall
time from this script around the whole process (start, corpus features, training,
evaluations, exit). Options after `--` go to the trainer last (bench/realspeech.py's ablation
switches: --pad-frames-to 1, --mask-padding 0, ...).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(ROOT, "tools", "recipes", "speech_demo.yaml")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="folder with train.tsv, dev.tsv, test.tsv")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--threads", type=int, default=0, help="OMP_NUM_THREADS (0: all cores)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--recipe", default=RECIPE)
    ap.add_argument("--seed", type=int, default=None, help="the trainer's --seed")
    ap.add_argument("--work", default="demo", help="the JSON line's work name")
    ap.add_argument("trainer_args", nargs="*", help="after --: more trainer options")
    a = ap.parse_args()
    env = dict(os.environ)
    if a.threads:
        env["OMP_NUM_THREADS"] = str(a.threads)
    with tempfile.TemporaryDirectory(prefix="sonata_demo_") as run_dir:
        command = [os.path.join(a.build_dir, "trainer"), "--config", a.recipe,
                   "--train", os.path.join(a.data, "train.tsv"),
                   "--val", os.path.join(a.data, "dev.tsv"),
                   "--test", os.path.join(a.data, "test.tsv"),
                   "--epochs", str(a.epochs), "--beam-width", "0", "--progress", "lines",
                   "--device", "cpu", "--checkpoint-dir", run_dir]
        if a.seed is not None:
            command += ["--seed", str(a.seed)]
        command += a.trainer_args
        print("train_speech: " + " ".join(command), file=sys.stderr, flush=True)
        start = time.perf_counter()
        done = subprocess.run(command, env=env, stdout=sys.stderr)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit("train_speech: the trainer exited with %d" % done.returncode)
        evals = []
        with open(os.path.join(run_dir, "metrics.jsonl")) as metrics:
            for line in metrics:
                record = json.loads(line)
                if record.get("event") == "eval":
                    evals.append(record)
    dev = [r for r in evals if r.get("split") == "val"]
    test = [r for r in evals if r.get("split") == "test"]
    if not dev or not test:
        sys.exit("train_speech: metrics.jsonl has no dev or test evaluation")

    def first_under(limit):
        # The trainer's CER is a fraction; the peer's a percentage.
        return next((round(r["elapsed_s"], 1) for r in dev if 100 * r["cer"] < limit), None)

    print(json.dumps({"work": a.work, "engine": "sonata", "threads": a.threads, "seed": a.seed,
                      "wall_s": round(wall, 1), "epochs": a.epochs,
                      "dev_cer_under_5_at_s": first_under(5.0),
                      "dev_cer_under_1_at_s": first_under(1.0),
                      "dev_cer": round(100 * dev[-1]["cer"], 3),
                      "test_cer": round(100 * test[-1]["cer"], 3),
                      "test_wer": round(100 * test[-1]["wer"], 3)}))


if __name__ == "__main__":
    sys.exit(main())
