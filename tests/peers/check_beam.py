"""The beam search's best path: sonata's prefix beam search (models/ctc_decode.h, through
peers_probe beam) against pyctcdecode's decode_beams with no language model, on the same
log-probabilities, and sonata's greedy decoding against the argmax path.

pyctcdecode searches texts, sonata label sequences: pyctcdecode treats the space label as a
word break, so label sequences that differ only in spaces (a leading, trailing or doubled
space) are one beam there, their probabilities summed, and several beams per prefix (keyed by
the last label). The two searches are the same only where no space can move the best text,
so the sets are:

  exhaustive  flat outputs (unit normal logits) over a blank and three letters, no space,
              7 frames: at most 3280 prefixes, and a beam of 8192 on both sides makes both
              searches exact. The best labelling must agree, and its log-probability with
              pyctcdecode's score to 1e-6 (pyctcdecode clips log-probabilities below
              log(1e-15), which these never reach). Flat outputs are where the most probable
              labelling differs from the greedy one, the case a beam search exists for.
  peaked      outputs of a model that has learned something, over sonata's 29-class
              vocabulary (space included), 60 frames, beams of 16: the best texts must agree
              (after pyctcdecode's whitespace handling, applied to sonata's text too); the
              score difference is printed, not held, as spaces merge there.

pyctcdecode's pruning is switched off (token_min_logp and beam_prune_logp far below any
score). A best labelling within 1e-9 of the next on pyctcdecode's side is a tie that either
may break its way: reported, not failed.
"""
import json
import os
import subprocess
import tempfile

import numpy as np
from pyctcdecode import build_ctcdecoder

SONATA_LABELS = ["", " ", "'"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
SMALL_LABELS = ["", "a", "b", "c"]


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def peaked(rng, frames, batch, classes):
    logits = rng.normal(0.0, 1.0, (frames, batch, classes))
    for n in range(batch):
        for t in range(frames):
            favourite = 0 if rng.random() < 0.5 else int(rng.integers(1, classes))
            logits[t, n, favourite] += 6.0
    return log_softmax(logits)


def sonata_decode(build_dir, log_probs, width):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "log_probs.npy")
        np.save(path, log_probs)
        done = subprocess.run([os.path.join(build_dir, "tests", "peers", "peers_probe"), "beam",
                               path, str(width)], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def text(labels, ids):
    return " ".join("".join(labels[i] for i in ids).split())


def compare(build_dir, name, labels, log_probs, width, score_tolerance=None):
    failures, ties, gaps, beyond_greedy = [], 0, [], 0
    decoder = build_ctcdecoder(labels)
    for n, mine in enumerate(sonata_decode(build_dir, log_probs, width)):
        sample = np.ascontiguousarray(log_probs[:, n, :])
        beams = decoder.decode_beams(sample, beam_width=width, beam_prune_logp=-1e6,
                                     token_min_logp=-1e6)
        theirs, score = beams[0][0], beams[0][3]
        greedy = [int(i) for i in sample.argmax(axis=1)]
        collapsed = [c for i, c in enumerate(greedy) if c != 0 and (i == 0 or c != greedy[i - 1])]
        if mine["greedy"] != collapsed:
            failures.append("%s sample %d: greedy %s, argmax path %s" % (
                name, n, mine["greedy"], collapsed))
        beyond_greedy += mine["beam"] != collapsed
        if text(labels, mine["beam"]) != theirs:
            if len(beams) > 1 and abs(score - beams[1][3]) < 1e-9:
                ties += 1
                continue
            failures.append("%s sample %d: sonata %r (log p %.9f), pyctcdecode %r (score %.9f)"
                            % (name, n, text(labels, mine["beam"]), mine["log_prob"], theirs,
                               score))
            continue
        gaps.append(abs(score - mine["log_prob"]))
        if score_tolerance is not None and gaps[-1] > score_tolerance:
            failures.append("%s sample %d: %r log p %.9f, pyctcdecode's score %.9f" % (
                name, n, theirs, mine["log_prob"], score))
    print("%s: %d samples, %d frames, %d classes, beam %d (best != greedy in %d): %d disagreements, "
          "%d ties; |sonata log p - pyctcdecode score| of the best: max %.3g" % (
              name, log_probs.shape[1], log_probs.shape[0], log_probs.shape[2], width,
              beyond_greedy, len(failures), ties, max(gaps) if gaps else float("nan")))
    return failures


def run(build_dir):
    rng = np.random.default_rng(20261207)
    flat = log_softmax(rng.normal(0.0, 1.0, (7, 32, len(SMALL_LABELS))))
    failures = compare(build_dir, "exhaustive", SMALL_LABELS, flat, 8192, score_tolerance=1e-6)
    failures += compare(build_dir, "peaked", SONATA_LABELS,
                        peaked(rng, 60, 24, len(SONATA_LABELS)).astype(np.float32), 16)
    return failures
