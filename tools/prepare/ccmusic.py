#!/usr/bin/env python3
"""Writes classification manifests for CCMusic's music genre database
(huggingface.co/datasets/ccmusic-database/music_genre): about 1700 pieces in a three-level
genre tree, 2 classes at the first level (Classic, Non_classic), 9 at the second, 16 at the
third. Assumed layout (that of the dataset's loading script, music_genre.py): every file sits
in a folder path of up to three levels named <id>_<Name>, one per level,

  1_Classic/3_Symphony/<file>
  2_Non_classic/7_Pop/12_Pop_vocal_ballad/<file>

A file with fewer levels than --level asks (classical pieces have two) takes its deepest
level's label, as the loading script's third-level names (which include Symphony, Opera,
Solo, Chamber) do. Labels are the folder names without their <id>_ prefix.

Two sources (exactly one):
  --audio DIR    the unpacked audio tracks (any format sonata decodes) in that tree;
  --images ZIP   an image zip (mel.zip, cqt.zip, chroma.zip) whose members follow that tree
                 below a folder named after the zip (mel/...); the images are extracted
                 into OUT/images/ and the manifests point at them, for sonata's image input.

  OUT/train.tsv, OUT/val.tsv, OUT/test.tsv   path<TAB>label, paths relative to OUT

Split: per label, shuffled with --seed, cut by --val-fraction and --test-fraction (0.1
each). The database does not say which images come from the same piece, so an image split
may put slices of one piece on both sides.

Usage: tools/prepare/ccmusic.py (--audio DIR | --images ZIP) --out OUT
                                [--level fst|sec|thr] [--seed 1]
Standard library only.
"""
import argparse
import os
import re
import zipfile

from manifests import (PrepareError, report, require_file, require_folder, run,
                       split_by_fraction, write_manifest)

LEVELS = {"fst": 1, "sec": 2, "thr": 3}
LEVEL_FOLDER = re.compile(r"^([0-9]+)_(.+)$")
AUDIO = (".wav", ".mp3", ".flac", ".ogg", ".opus", ".aif", ".aiff", ".au")
IMAGES = (".png", ".jpg", ".jpeg")


def label_of(folders, depth, where):
    """The label at `depth` (1-based) of a file below `folders` (the tree's <id>_<Name> parts),
    the deepest one when there are fewer; refuses a file outside the tree, naming `where`."""
    names = []
    for folder in folders:
        match = LEVEL_FOLDER.match(folder)
        if match:
            names.append(match[2])
        elif names:
            raise PrepareError(f"'{where}' lies in folder '{folder}', not an <id>_<Name> genre "
                               "level")
    if not names:
        raise PrepareError(f"'{where}' is not inside an <id>_<Name> genre folder")
    return names[min(depth, len(names)) - 1]


def audio_entries(root, depth):
    entries = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(s for s in subfolders if not s.startswith("."))
        parts = os.path.relpath(folder, root).split(os.sep)
        for name in sorted(files):
            if name.startswith(".") or not name.lower().endswith(AUDIO):
                continue
            path = os.path.join(folder, name)
            entries.append((path, label_of([p for p in parts if p != "."], depth, path)))
    if not entries:
        raise PrepareError(f"'{root}' holds no audio tracks in <id>_<Name> genre folders")
    return entries


def image_entries(archive, out_dir, depth):
    """Extracts the zip's images under out_dir/images/ and returns (path, label) of each."""
    target = os.path.join(out_dir, "images")
    entries = []
    try:
        with zipfile.ZipFile(archive) as zip_file:
            for member in sorted(zip_file.namelist()):
                if member.endswith("/") or not member.lower().endswith(IMAGES):
                    continue
                parts = member.split("/")
                if any(p in ("", "..") or p.startswith(".") for p in parts) or \
                        member.startswith("__MACOSX"):
                    continue  # hidden files, macOS resource forks, unsafe paths
                label = label_of(parts[:-1], depth, f"{archive}:{member}")
                path = os.path.join(target, *parts)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with zip_file.open(member) as source, open(path, "wb") as sink:
                    sink.write(source.read())
                entries.append((path, label))
    except zipfile.BadZipFile as error:
        raise PrepareError(f"'{archive}' is not a readable zip ({error})") from None
    if not entries:
        raise PrepareError(f"'{archive}' holds no .png or .jpg images in <id>_<Name> genre "
                           "folders")
    return entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--audio", help="folder of audio tracks in the genre tree")
    source.add_argument("--images", help="an image zip (mel.zip, cqt.zip, chroma.zip)")
    parser.add_argument("--out", required=True, help="folder for the manifests")
    parser.add_argument("--level", choices=sorted(LEVELS), default="thr",
                        help="label level: fst (2 classes), sec (9), thr (16)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--test-fraction", type=float, default=0.1)
    args = parser.parse_args()
    depth = LEVELS[args.level]
    if args.audio:
        entries = audio_entries(require_folder(args.audio, "CCMusic audio folder"), depth)
    else:
        entries = image_entries(require_file(args.images, "CCMusic image zip"), args.out, depth)
    splits = split_by_fraction(entries, lambda e: e[1], args.val_fraction, args.test_fraction,
                               args.seed)
    counts = []
    for name, rows in zip(("train", "val", "test"), splits):
        write_manifest(args.out, name, rows)
        counts.append((name, len(rows)))
    report(args.out, counts)
    print(f"{len({label for _, label in entries})} labels at level {args.level}")


if __name__ == "__main__":
    run(main)
