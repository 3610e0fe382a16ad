#!/usr/bin/env python3
"""Writes ASR manifests for the Free Spoken Digit Dataset (FSDD): recordings of the digits
0-9 spoken in English, recordings/<digit>_<speaker>_<index>.wav (8 kHz mono), the transcript
being the digit's word ("zero" ... "nine").

  OUT/train.tsv, OUT/dev.tsv, OUT/test.tsv   path<TAB>transcript, paths relative to OUT

Splits (--split):
  speakers  (default) speaker-disjoint: the --test-speakers (default: the last speaker by
            name) form test, the others train; dev is the training speakers' recordings with
            an index below --dev-indices (default 5), so dev shares train's voices and test is
            a held-out-speaker figure.
  index     FSDD's own split: indices 0-4 of every speaker are test, the rest train; dev is
            indices 5-9 (taken from train).

Usage: tools/prepare/fsdd.py FSDD_DIR --out OUT [--split speakers|index]
                             [--test-speakers jackson,theo] [--dev-indices 5]
FSDD_DIR is the unpacked repository (github.com/Jakobovski/free-spoken-digit-dataset), the
folder holding recordings/. Standard library only.
"""
import argparse
import os
import re

from manifests import PrepareError, report, require_folder, run, write_manifest

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
NAME = re.compile(r"^([0-9])_([A-Za-z0-9-]+)_([0-9]+)\.wav$")


def recordings(folder):
    """(path, digit, speaker, index) of every recording, in name order. A .wav whose name is
    not <digit>_<speaker>_<index>.wav is refused, naming it."""
    found = []
    for name in sorted(os.listdir(folder)):
        if not name.lower().endswith(".wav"):
            continue
        match = NAME.match(name)
        if not match:
            raise PrepareError(f"'{os.path.join(folder, name)}' is not named "
                               "<digit>_<speaker>_<index>.wav as FSDD's recordings are")
        found.append((os.path.join(folder, name), int(match[1]), match[2], int(match[3])))
    if not found:
        raise PrepareError(f"'{folder}' holds no <digit>_<speaker>_<index>.wav recordings")
    return found


def split(clips, args):
    speakers = sorted({speaker for _, _, speaker, _ in clips})
    if args.split == "index":
        test = [c for c in clips if c[3] < 5]
        dev = [c for c in clips if 5 <= c[3] < 10]
        train = [c for c in clips if c[3] >= 10]
        return train, dev, test
    test_speakers = args.test_speakers.split(",") if args.test_speakers else speakers[-1:]
    unknown = [s for s in test_speakers if s not in speakers]
    if unknown:
        raise PrepareError(f"--test-speakers names {', '.join(unknown)}, not among the speakers "
                           f"found: {', '.join(speakers)}")
    if len(set(test_speakers)) == len(speakers):
        raise PrepareError("--test-speakers leaves no speaker to train on")
    test = [c for c in clips if c[2] in test_speakers]
    rest = [c for c in clips if c[2] not in test_speakers]
    dev = [c for c in rest if c[3] < args.dev_indices]
    train = [c for c in rest if c[3] >= args.dev_indices]
    return train, dev, test


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("dataset", help="the FSDD folder (holding recordings/)")
    parser.add_argument("--out", required=True, help="folder for the manifests")
    parser.add_argument("--split", choices=["speakers", "index"], default="speakers")
    parser.add_argument("--test-speakers", default="",
                        help="comma-separated speakers held out for test (--split speakers)")
    parser.add_argument("--dev-indices", type=int, default=5,
                        help="dev: training speakers' recordings with a smaller index")
    args = parser.parse_args()
    if args.dev_indices < 0:
        raise PrepareError(f"--dev-indices must not be negative, got {args.dev_indices}")
    require_folder(args.dataset, "FSDD folder")
    folder = require_folder(os.path.join(args.dataset, "recordings"), "FSDD recordings folder")
    train, dev, test = split(recordings(folder), args)
    if not train:
        raise PrepareError(f"the split leaves no recording to train on ({folder})")
    counts = []
    for name, clips in (("train", train), ("dev", dev), ("test", test)):
        write_manifest(args.out, name, [(path, WORDS[digit]) for path, digit, _, _ in clips])
        counts.append((name, len(clips)))
    report(args.out, counts)
    speakers = lambda clips: ", ".join(sorted({c[2] for c in clips})) or "none"
    print(f"train and dev speakers: {speakers(train)}; test speakers: {speakers(test)}")


if __name__ == "__main__":
    run(main)
