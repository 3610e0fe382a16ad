#!/usr/bin/env python3
"""Writes ASR manifests for a Mozilla Common Voice language release
(commonvoice.mozilla.org/datasets): MP3 clips with the sentence read, laid out as

  cv-corpus-<version>/<language>/{train,dev,test,validated,...}.tsv
  cv-corpus-<version>/<language>/clips/<name>.mp3

where each .tsv has a header row naming its columns (client_id, path, sentence, up_votes,
...; the set varies between releases, only path and sentence are used) and one clip a row.

  OUT/<split>.tsv   path<TAB>transcript, paths relative to OUT, for each --splits entry

Sentences are written as Common Voice has them, whitespace collapsed; the trainer
lower-cases them and drops characters outside its vocabulary (punctuation, digits). sonata
decodes the MP3 clips itself (libsndfile 1.1 or newer, e.g. Debian 12's 1.2).

Usage: tools/prepare/common_voice.py CV_LANGUAGE_DIR --out OUT [--splits train,dev,test]
CV_LANGUAGE_DIR is the language folder (holding clips/ and the .tsv files). Standard library
only.
"""
import argparse
import csv
import os
import sys

from manifests import PrepareError, one_line, report, require_file, require_folder, run, write_manifest


def split_rows(dataset, split):
    table = require_file(os.path.join(dataset, f"{split}.tsv"), f"Common Voice {split} table")
    clips = os.path.join(dataset, "clips")
    rows = []
    # Sentences may hold quotes: Common Voice's tables are not quoted, so none is special.
    csv.field_size_limit(sys.maxsize)
    with open(table, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None or "path" not in header or "sentence" not in header:
            raise PrepareError(f"'{table}' has no header row with 'path' and 'sentence' columns")
        path_column, sentence_column = header.index("path"), header.index("sentence")
        for number, fields in enumerate(reader, 2):
            if not any(fields):
                continue
            where = f"'{table}' line {number}"
            if len(fields) <= max(path_column, sentence_column):
                raise PrepareError(f"{where} has {len(fields)} columns, fewer than its header's "
                                   f"{len(header)}")
            audio = os.path.join(clips, fields[path_column])
            if not os.path.isfile(audio):
                raise PrepareError(f"{where} names clip '{audio}', which does not exist")
            rows.append((audio, one_line(fields[sentence_column], f"the sentence on {where}")))
    if not rows:
        raise PrepareError(f"'{table}' lists no clips")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("dataset", help="the Common Voice language folder (holding clips/)")
    parser.add_argument("--out", required=True, help="folder for the manifests")
    parser.add_argument("--splits", default="train,dev,test",
                        help="comma-separated tables to convert (e.g. validated,test)")
    args = parser.parse_args()
    require_folder(args.dataset, "Common Voice folder")
    require_folder(os.path.join(args.dataset, "clips"), "Common Voice clips folder")
    counts = []
    for split in args.splits.split(","):
        rows = split_rows(args.dataset, split)
        write_manifest(args.out, split, rows)
        counts.append((split, len(rows)))
    report(args.out, counts)


if __name__ == "__main__":
    run(main)
