#!/usr/bin/env python3
"""Writes a small spoken-digits corpus for the speech-recognition demo: phone-style utterances
("call double five oh nine", "press star two") rendered by espeak-ng in many English voices,
as 16 kHz mono 16-bit WAV with mild seeded noise, split into train/dev/test with manifests in
both formats sonata reads (data/manifest/asr_manifest.h):

  DIR/{train,dev,test}.tsv     relative/path.wav<TAB>transcript
  DIR/{train,dev,test}.jsonl   NeMo: {"audio_filepath", "text", "duration"}
  DIR/about.txt                the settings, the voices of each split, the tool versions
  DIR/wav/<split>/<split>_NNNNN.wav

The test voices are never heard in train or dev (dev shares train's voices), so test CER is
a held-out-speaker figure. Paths in the manifests are relative to DIR.

Usage: tools/demo/make_speech_demo.py --out DIR [--seed 1] [--train 2400] [--dev 200] [--test 200]

Needs python3 (standard library only) and the espeak-ng and sox commands (Debian packages
espeak-ng and sox). Deterministic: the same seed and sizes give byte-identical files on a
machine with the same espeak-ng and sox (other versions speak slightly differently). A second
run with the same settings does nothing; about.txt is written last, so an interrupted run is
redone.
"""
import argparse
import array
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import time
import wave

RATE = 16000
# Bump when the rendering changes, so that an old corpus is not taken for a current one.
FORMAT_VERSION = 1
MIN_SAMPLES = RATE  # one second

DIGITS = ["zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
COMMANDS = ["call", "press", "dial"]
REPEATS = ["double", "triple"]
SYMBOLS = ["hash", "star"]

# espeak-ng's own (non-mbrola) English voices, crossed with its formant variants: 96 voices.
ACCENTS = ["en-us", "en-gb", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp", "en-gb-x-gbcwmd",
           "en-029", "en-us-nyc"]
VARIANTS = ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5"]
# Two variants (one male, one female formant set) are kept for test only, in every accent.
TEST_VARIANTS = ["m6", "f4"]
TEST_VOICES = [f"{a}+{v}" for a in ACCENTS for v in TEST_VARIANTS]
TRAIN_VOICES = [f"{a}+{v}" for a in ACCENTS for v in VARIANTS if v not in TEST_VARIANTS]


def utterance(rng):
    """2..6 tokens: an optional command word, then digits, some as "double"/"triple" + digit,
    and now and then "hash" or "star"."""
    length = rng.randint(2, 6)
    tokens = []
    if rng.random() < 0.3:
        tokens.append(rng.choice(COMMANDS))
    while len(tokens) < length:
        r = rng.random()
        if r < 0.12 and length - len(tokens) >= 2:
            tokens += [rng.choice(REPEATS), rng.choice(DIGITS)]
        elif r < 0.2:
            tokens.append(rng.choice(SYMBOLS))
        else:
            tokens.append(rng.choice(DIGITS))
    return " ".join(tokens)


def plan(args):
    """Every clip's settings, drawn from one generator so the corpus depends on the seed only."""
    rng = random.Random(f"speech-demo-{args.seed}")
    clips = []
    for split, count, voices in (("train", args.train, TRAIN_VOICES), ("dev", args.dev, TRAIN_VOICES),
                                 ("test", args.test, TEST_VOICES)):
        for i in range(count):
            clips.append({
                "split": split,
                "path": f"wav/{split}/{split}_{i:05d}.wav",
                "text": utterance(rng),
                "voice": rng.choice(voices),
                "speed": rng.randint(130, 190),       # words per minute
                "pitch": rng.randint(25, 75),         # espeak-ng's 0..99
                "gain": round(rng.uniform(0.35, 0.9), 3),  # peak level of the speech
                "snr_db": round(rng.uniform(25.0, 35.0), 2),
                "lead_s": round(rng.uniform(0.05, 0.35), 3),
                "trail_s": round(rng.uniform(0.05, 0.35), 3),
                "noise_seed": rng.getrandbits(64),
            })
    return clips


def render(clip, out_dir):
    """espeak-ng (22050 Hz) -> sox (16 kHz, no dither so the output is repeatable) -> noise and
    silence added here -> WAV. Returns (path, text, duration in seconds)."""
    speak = subprocess.run(["espeak-ng", "-v", clip["voice"], "-s", str(clip["speed"]), "-p",
                            str(clip["pitch"]), "--stdout", clip["text"]],
                           check=True, capture_output=True).stdout
    raw = subprocess.run(["sox", "-D", "-t", "wav", "-", "-t", "raw", "-e", "signed", "-b", "16",
                          "-c", "1", "-", "rate", "-v", str(RATE)],
                         input=speak, check=True, capture_output=True).stdout
    speech = array.array("h")
    speech.frombytes(raw)
    if sys.byteorder != "little":
        speech.byteswap()
    # espeak-ng pads a little silence itself; trim it so the drawn lead/trail decide the timing.
    loud = [i for i, s in enumerate(speech) if abs(s) > 64]
    if loud:
        speech = speech[loud[0]:loud[-1] + 1]
    peak = max((abs(s) for s in speech), default=1) or 1
    scale = clip["gain"] * 32767.0 / peak
    voiced = [s * scale for s in speech]
    rms = math.sqrt(sum(v * v for v in voiced) / max(len(voiced), 1))
    noise_std = rms / (10.0 ** (clip["snr_db"] / 20.0))
    lead, trail = int(clip["lead_s"] * RATE), int(clip["trail_s"] * RATE)
    # Short utterances ("oh two" said fast) are padded to a second, as a recorder would keep it.
    trail = max(trail, MIN_SAMPLES - lead - len(voiced))
    signal = [0.0] * lead + voiced + [0.0] * trail
    noise = random.Random(clip["noise_seed"])
    out = array.array("h", (max(-32768, min(32767, round(v + noise.gauss(0.0, noise_std))))
                            for v in signal))
    if sys.byteorder != "little":
        out.byteswap()
    path = os.path.join(out_dir, clip["path"])
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(out.tobytes())
    return clip["path"], clip["text"], len(signal) / RATE


def render_into(job):
    return render(*job)


def tool_version(command):
    """The first version-looking word of `command`'s output ("1.51", "v14.4.2")."""
    try:
        out = subprocess.run(command, capture_output=True, text=True).stdout
    except OSError:
        return "missing"
    found = re.search(r"v?\d+(\.\d+)+", out)
    return found.group(0) if found else "unknown"


def settings_text(args):
    return (f"settings: format {FORMAT_VERSION}, seed {args.seed}, train {args.train}, dev {args.dev}, "
            f"test {args.test}, espeak-ng {tool_version(['espeak-ng', '--version'])}, "
            f"sox {tool_version(['sox', '--version'])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train", type=int, default=2400)
    parser.add_argument("--dev", type=int, default=200)
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2, help="processes rendering clips")
    args = parser.parse_args()
    for tool in ("espeak-ng", "sox"):
        if shutil.which(tool) is None:
            sys.exit(f"make_speech_demo: the '{tool}' command is missing (Debian: apt-get install {tool})")

    settings = settings_text(args)
    about_path = os.path.join(args.out, "about.txt")
    if os.path.exists(about_path):
        with open(about_path) as f:
            if f.readline().strip() == settings:
                print(f"make_speech_demo: {args.out} already holds this corpus ({settings})")
                return

    start = time.time()
    clips = plan(args)
    for split in ("train", "dev", "test"):
        folder = os.path.join(args.out, "wav", split)
        shutil.rmtree(folder, ignore_errors=True)  # no stale clips from a larger earlier run
        os.makedirs(folder)
    if os.path.exists(about_path):
        os.remove(about_path)
    # imap keeps the plan's order, so the manifests do not depend on the scheduling.
    with multiprocessing.Pool(args.jobs) as pool:
        rendered = list(pool.imap(render_into, [(c, args.out) for c in clips], chunksize=16))

    durations = {}
    for split in ("train", "dev", "test"):
        rows = [(r, c) for r, c in zip(rendered, clips) if c["split"] == split]
        with open(os.path.join(args.out, f"{split}.tsv"), "w") as tsv, \
                open(os.path.join(args.out, f"{split}.jsonl"), "w") as jsonl:
            for (path, text, duration), _ in rows:
                tsv.write(f"{path}\t{text}\n")
                jsonl.write(json.dumps({"audio_filepath": path, "text": text,
                                        "duration": round(duration, 4)}) + "\n")
        durations[split] = [d for (_, _, d), _ in rows]

    words = sorted(set(DIGITS + COMMANDS + REPEATS + SYMBOLS))
    lines = [settings,
             "",
             "A spoken-digits corpus made by tools/demo/make_speech_demo.py: espeak-ng voices, 16 kHz mono",
             "16-bit WAV, white noise at 25-35 dB SNR, 0.05-0.35 s of leading and trailing silence.",
             f"Words ({len(words)}): {' '.join(words)}",
             f"Held-out test voices ({len(TEST_VOICES)}, never in train or dev): {' '.join(TEST_VOICES)}",
             f"Train and dev voices ({len(TRAIN_VOICES)}): {' '.join(TRAIN_VOICES)}"]
    for split, values in durations.items():
        if values:
            lines.append(f"{split}: {len(values)} clips, {sum(values) / 3600:.3f} h, "
                         f"{min(values):.2f}-{max(values):.2f} s")
    with open(about_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"make_speech_demo: wrote {len(clips)} clips to {args.out} in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
