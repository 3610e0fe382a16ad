#!/usr/bin/env python3
"""Writes ASR manifests for LibriSpeech (openslr.org/12): read English audiobooks, FLAC at
16 kHz, laid out as

  LibriSpeech/<subset>/<speaker>/<chapter>/<speaker>-<chapter>-<utterance>.flac
  LibriSpeech/<subset>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt
      lines "<speaker>-<chapter>-<utterance> TRANSCRIPT IN CAPITALS"

One manifest per subset found (train-clean-100, train-clean-360, train-other-500, dev-clean,
dev-other, test-clean, test-other), named after it:

  OUT/<subset>.tsv   path<TAB>transcript, paths relative to OUT

Transcripts are written as LibriSpeech has them; the trainer lower-cases them. Every
transcript line must name an existing .flac, and every .flac must have a line.

Usage: tools/prepare/librispeech.py LIBRISPEECH_DIR --out OUT [--subsets dev-clean,test-clean]
LIBRISPEECH_DIR is the LibriSpeech/ folder the tarballs unpack into. Standard library only.
"""
import argparse
import os

from manifests import PrepareError, one_line, report, require_folder, run, write_manifest

SUBSETS = ["train-clean-100", "train-clean-360", "train-other-500", "dev-clean", "dev-other",
           "test-clean", "test-other"]


def chapter_rows(folder):
    """(flac path, transcript) of one chapter folder, in transcript order."""
    transcripts = [n for n in os.listdir(folder) if n.endswith(".trans.txt")]
    if len(transcripts) != 1:
        raise PrepareError(f"'{folder}' holds {len(transcripts)} *.trans.txt files, not the one "
                           "a LibriSpeech chapter has")
    transcript_path = os.path.join(folder, transcripts[0])
    rows, named = [], set()
    with open(transcript_path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.split(maxsplit=1)
            where = f"'{transcript_path}' line {number}"
            if len(parts) < 2:
                raise PrepareError(f"{where} has no transcript after its utterance id")
            audio = os.path.join(folder, parts[0] + ".flac")
            if not os.path.isfile(audio):
                raise PrepareError(f"{where} names '{audio}', which does not exist")
            rows.append((audio, one_line(parts[1], f"the transcript on {where}")))
            named.add(parts[0] + ".flac")
    orphans = sorted(n for n in os.listdir(folder) if n.endswith(".flac") and n not in named)
    if orphans:
        raise PrepareError(f"'{os.path.join(folder, orphans[0])}' has no line in "
                           f"'{transcript_path}'")
    return rows


def subset_rows(folder):
    rows = []
    for speaker in sorted(os.listdir(folder)):
        speaker_dir = os.path.join(folder, speaker)
        if not os.path.isdir(speaker_dir):
            continue
        for chapter in sorted(os.listdir(speaker_dir)):
            chapter_dir = os.path.join(speaker_dir, chapter)
            if os.path.isdir(chapter_dir):
                rows.extend(chapter_rows(chapter_dir))
    if not rows:
        raise PrepareError(f"'{folder}' holds no <speaker>/<chapter>/*.flac utterances")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("dataset", help="the LibriSpeech folder (holding dev-clean/, ...)")
    parser.add_argument("--out", required=True, help="folder for the manifests")
    parser.add_argument("--subsets", default="",
                        help="comma-separated subsets to write (default: every one present)")
    args = parser.parse_args()
    require_folder(args.dataset, "LibriSpeech folder")
    if args.subsets:
        wanted = args.subsets.split(",")
        unknown = [s for s in wanted if s not in SUBSETS]
        if unknown:
            raise PrepareError(f"--subsets names {', '.join(unknown)}; LibriSpeech's subsets "
                               f"are {', '.join(SUBSETS)}")
        for subset in wanted:
            require_folder(os.path.join(args.dataset, subset), f"LibriSpeech subset {subset}")
    else:
        wanted = [s for s in SUBSETS if os.path.isdir(os.path.join(args.dataset, s))]
        if not wanted:
            raise PrepareError(f"'{args.dataset}' holds none of LibriSpeech's subset folders "
                               f"({', '.join(SUBSETS)})")
    counts = []
    for subset in wanted:
        rows = subset_rows(os.path.join(args.dataset, subset))
        write_manifest(args.out, subset, rows)
        counts.append((subset, len(rows)))
    report(args.out, counts)


if __name__ == "__main__":
    run(main)
