#!/usr/bin/env python3
"""Writes the small corpora the emulated-profile budgets train on (tests/emu/profile/):
speech.tsv, clips of --letters tone "letters" each (the same length, so every batch has one
shape and a steady-state step meets no new cudnnFind), and genre.tsv, 1 s tone tracks of
two classes. Standard library only: CI has no numpy.

  make_profile_corpus.py FOLDER [--clips N] [--letters N]
"""
import argparse
import math
import os
import random
import struct
import wave

RATE = 16000
HZ = {"a": 400.0, "b": 1200.0, "c": 2800.0}


def write_wav(path, samples):
    with wave.open(path, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(b"".join(
            struct.pack("<h", max(-32768, min(32767, int(round(x * 32768))))) for x in samples))


def letters(text, rng):
    samples = [0.0] * (RATE // 10)
    for letter in text:
        samples += [0.4 * math.sin(2 * math.pi * HZ[letter] * i / RATE) for i in range(RATE // 4)]
        samples += [0.0] * (RATE // 20)
    samples += [0.0] * (RATE // 10)
    return [x + rng.gauss(0.0, 0.01) for x in samples]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--clips", type=int, default=16)
    parser.add_argument("--letters", type=int, default=2,
                        help="letters per speech clip: 0.2 s + 0.3 s each (13: ~4.1 s, T ~410)")
    args = parser.parse_args()
    os.makedirs(args.folder, exist_ok=True)
    rng = random.Random(7)
    speech, genre = [], []
    for i in range(args.clips):
        text = "".join(rng.choice("abc") for _ in range(args.letters))
        name = f"speech_{i}.wav"
        write_wav(os.path.join(args.folder, name), letters(text, rng))
        speech.append(f"{name}\t{text}")
        hz = 300.0 + 400.0 * (i % 4)
        name = f"genre_{i}.wav"
        write_wav(os.path.join(args.folder, name),
                  [0.3 * math.sin(2 * math.pi * hz * t / RATE) for t in range(RATE)])
        genre.append(f"{name}\t{'rock' if i % 2 else 'jazz'}")
    for manifest, rows in (("speech.tsv", speech), ("genre.tsv", genre)):
        with open(os.path.join(args.folder, manifest), "w") as out:
            out.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
