#!/usr/bin/env python3
"""Writes classification manifests for GTZAN (Tzanetakis & Cook): 1000 30-second music
excerpts, 100 in each of 10 genres, laid out as the Kaggle release has it

  GTZAN_DIR/genres_original/<genre>/<genre>.000NN.wav

(the original tarball's genres/<genre>/<genre>.000NN.au works too). GTZAN has no official
split: each genre's tracks are shuffled with --seed and cut into train / val / test by
--val-fraction and --test-fraction (default 0.1 each).

  OUT/train.tsv, OUT/val.tsv, OUT/test.tsv   path<TAB>genre, paths relative to OUT

A .wav whose header is broken or that holds no samples (the Kaggle release's
jazz.00054.wav) is left out and named on stderr; --strict makes it an error instead.

Usage: tools/prepare/gtzan.py GTZAN_DIR --out OUT [--seed 1] [--val-fraction 0.1]
                              [--test-fraction 0.1] [--strict]
Standard library only.
"""
import argparse
import os
import sys

from manifests import (PrepareError, report, require_folder, run, split_by_fraction,
                       unreadable_wav, write_manifest)

AUDIO = (".wav", ".au")


def genre_root(dataset):
    for name in ("genres_original", "genres"):
        if os.path.isdir(os.path.join(dataset, name)):
            return os.path.join(dataset, name)
    raise PrepareError(f"'{dataset}' holds neither genres_original/ (Kaggle's GTZAN) nor "
                       "genres/ (the original tarball)")


def tracks(root, strict):
    """(path, genre) of every track, genres and files in name order; broken WAVs skipped
    (named on stderr) or, with strict, refused."""
    found = []
    for genre in sorted(os.listdir(root)):
        folder = os.path.join(root, genre)
        if genre.startswith(".") or not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.startswith(".") or not name.lower().endswith(AUDIO):
                continue
            problem = unreadable_wav(path)
            if problem and strict:
                raise PrepareError(f"'{path}' cannot be used: {problem}")
            if problem:
                print(f"gtzan.py: left out '{path}': {problem}", file=sys.stderr)
                continue
            found.append((path, genre))
    if not found:
        raise PrepareError(f"'{root}' holds no <genre>/*.wav or *.au tracks")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("dataset", help="the GTZAN folder (holding genres_original/)")
    parser.add_argument("--out", required=True, help="folder for the manifests")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--test-fraction", type=float, default=0.1)
    parser.add_argument("--strict", action="store_true", help="a broken WAV is an error")
    args = parser.parse_args()
    require_folder(args.dataset, "GTZAN folder")
    found = tracks(genre_root(args.dataset), args.strict)
    splits = split_by_fraction(found, lambda t: t[1], args.val_fraction, args.test_fraction,
                               args.seed)
    counts = []
    for name, rows in zip(("train", "val", "test"), splits):
        write_manifest(args.out, name, rows)
        counts.append((name, len(rows)))
    report(args.out, counts)


if __name__ == "__main__":
    run(main)
