"""What every dataset preparer in tools/prepare/ shares: checking the folder it is given,
splitting reproducibly, and writing manifests in the formats sonata's trainer reads
(data/manifest/asr_manifest.h, class_manifest.h):

  ASR             path<TAB>transcript
  classification  path<TAB>label

Paths are written relative to the manifest's own folder (the trainer resolves them from
there), so the output folder and the dataset can move together. Standard library only: the
preparers run on CI's bare python3.
"""
import os
import random
import sys
import wave


class PrepareError(Exception):
    """One sentence for the user, naming the path or value that is wrong."""


def run(main):
    """Runs a preparer's main(), turning a PrepareError into one line on stderr and exit 1."""
    name = os.path.basename(sys.argv[0])
    try:
        main()
    except PrepareError as error:
        print(f"{name}: {error}", file=sys.stderr)
        sys.exit(1)


def require_folder(path, what):
    if not os.path.exists(path):
        raise PrepareError(f"{what} '{path}' does not exist")
    if not os.path.isdir(path):
        raise PrepareError(f"{what} '{path}' is not a folder")
    return path


def require_file(path, what):
    if not os.path.isfile(path):
        raise PrepareError(f"{what} '{path}' does not exist" if not os.path.exists(path)
                           else f"{what} '{path}' is not a file")
    return path


def one_line(text, where):
    """Text for a TSV field: whitespace runs (tabs and newlines included) become one space;
    an empty result is refused naming `where`."""
    cleaned = " ".join(text.split())
    if not cleaned:
        raise PrepareError(f"{where} is empty")
    return cleaned


def write_manifest(out_dir, name, rows):
    """Writes out_dir/name.tsv from (audio path, text) pairs, the paths made relative to
    out_dir. Returns the manifest's path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.tsv")
    base = os.path.abspath(out_dir)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8", newline="\n") as f:
        for audio, text in rows:
            f.write(f"{os.path.relpath(os.path.abspath(audio), base)}\t{text}\n")
    os.replace(temporary, path)  # no half-written manifest is left behind
    return path


def split_by_fraction(items, key, val_fraction, test_fraction, seed):
    """Stratified split: within each group of key(item), a seeded shuffle, then the first
    round(n * test_fraction) go to test, the next round(n * val_fraction) to val, the rest to
    train. Returns (train, val, test), each in the input's order."""
    if not (0 <= val_fraction < 1 and 0 <= test_fraction < 1 and val_fraction + test_fraction < 1):
        raise PrepareError(f"--val-fraction {val_fraction} and --test-fraction {test_fraction} "
                           "must be in [0, 1) and leave something to train on")
    groups = {}
    for index, item in enumerate(items):
        groups.setdefault(key(item), []).append(index)
    split_of = {}
    for group in sorted(groups):
        indices = groups[group]
        # Seeded per group, so adding a class does not reshuffle the others.
        random.Random(f"{seed}-{group}").shuffle(indices)
        tests = round(len(indices) * test_fraction)
        vals = round(len(indices) * val_fraction)
        for rank, index in enumerate(indices):
            split_of[index] = "test" if rank < tests else "val" if rank < tests + vals else "train"
    chosen = {"train": [], "val": [], "test": []}
    for index, item in enumerate(items):
        chosen[split_of[index]].append(item)
    return chosen["train"], chosen["val"], chosen["test"]


def unreadable_wav(path):
    """Why a .wav file cannot be used (a broken header, no samples), or None when it looks
    whole. Only the header is read; other formats are left to the trainer's decoder."""
    if not path.lower().endswith(".wav"):
        return None
    try:
        with wave.open(path, "rb") as w:
            if w.getnframes() == 0:
                return "it holds no samples"
    except wave.Error as error:
        # The wave module reads PCM only; float and other encodings are the decoder's to judge.
        if str(error).startswith("unknown format"):
            return None
        return f"its WAV header is broken ({error})"
    except EOFError:
        return "its WAV header is cut short"
    except OSError as error:
        return f"it cannot be read ({error.strerror})"
    return None


def report(out_dir, counts):
    """One line per written manifest: '<out>/train.tsv: 2700 entries'."""
    for name, count in counts:
        print(f"{os.path.join(out_dir, name + '.tsv')}: {count} entries")
