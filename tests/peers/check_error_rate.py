"""CER and WER: sonata's ErrorRate (data/text/error_rate.h, through peers_probe error-rate)
against jiwer's process_characters and process_words, pair by pair (edits and reference
lengths) and over the corpus (jiwer's rates on the lists: summed edits over summed
reference lengths, as sonata's).

The pairs are normalised text as sonata's evaluation compares it (normalise.h: lower case,
single spaces, no leading or trailing space), with unicode (accents, a combining mark, CJK,
an emoji outside the BMP) and empty hypotheses. jiwer's default transforms strip the ends and
collapse runs of spaces for words (characters keep inner spaces), which sonata's normalised
text already is, so they are comparable unit for unit.

Empty references: jiwer 4 takes them (jiwer 2 refused them) and counts the hypothesis' units
as insertions against a length of 0, its rate being the edits themselves; sonata's rate divides
by max(length, 1), the same figure, and over a corpus both add the insertions to the edits and
nothing to the length. They are compared like the other pairs, rate included.

Not compared: unnormalised whitespace. jiwer strips the ends (and, for words, collapses
runs), sonata counts every code point it is given; its evaluation normalises both sides first
(normalise.h), so the difference never reaches a reported CER.
"""
import json
import os
import subprocess
import tempfile

import jiwer

PAIRS = [
    ("the cat sat on the mat", "the cat sat on the mat"),
    ("the cat sat on the mat", "the cat sat on mat"),
    ("the cat sat on the mat", "a cat sat in the hat today"),
    ("hello world", ""),
    ("speech", "speach"),
    ("it's a test", "its a test"),
    ("a b c d e f", "f e d c b a"),
    ("café crème brûlée", "cafe creme brulee"),
    ("naïve résumé", "naïve résumé"),
    ("e\u0301t\u00e9", "\u00e9t\u00e9"),  # a combining acute against the precomposed letter
    ("東京 大阪", "東京 京都"),
    ("γειά σου κόσμε", "γεια σου κοσμε"),
    ("good 🎵 music", "good music 🎵"),
    ("x", "y"),
    ("one two three", "one two three four"),
]
EMPTY_REFERENCES = [("", ""), ("", "inserted words"), ("", "é")]


def sonata_rates(build_dir, pairs):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pairs.jsonl")
        with open(path, "w", encoding="utf-8") as out:
            for reference, hypothesis in pairs:
                out.write(json.dumps({"reference": reference, "hypothesis": hypothesis}) + "\n")
        done = subprocess.run([os.path.join(build_dir, "tests", "peers", "peers_probe"),
                               "error-rate", path], capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return lines[:-1], lines[-1]["corpus"]


def jiwer_counts(output):
    edits = output.substitutions + output.deletions + output.insertions
    return edits, output.substitutions + output.deletions + output.hits


def run(build_dir):
    import importlib.metadata

    failures = []
    pairs = PAIRS + EMPTY_REFERENCES
    ours, corpus = sonata_rates(build_dir, pairs)
    print("jiwer %s; %d pairs, %d with an empty reference" % (
        importlib.metadata.version("jiwer"), len(pairs), len(EMPTY_REFERENCES)))
    for (reference, hypothesis), mine in zip(pairs, ours):
        for unit, process, key in (("characters", jiwer.process_characters, "cer"),
                                   ("words", jiwer.process_words, "wer")):
            output = process(reference, hypothesis)
            theirs = jiwer_counts(output)
            got = (mine[unit]["edits"], mine[unit]["reference_length"])
            if got != theirs or abs(mine[unit]["rate"] - getattr(output, key)) > 1e-12:
                failures.append("%s of %r vs %r: sonata (edits, length, rate) %s, jiwer %s" % (
                    unit, reference, hypothesis, got + (mine[unit]["rate"],),
                    theirs + (getattr(output, key),)))

    references = [r for r, _ in pairs]
    hypotheses = [h for _, h in pairs]
    for unit, process, key in (("characters", jiwer.process_characters, "cer"),
                               ("words", jiwer.process_words, "wer")):
        output = process(references, hypotheses)
        theirs = jiwer_counts(output) + (getattr(output, key),)
        mine = corpus[unit]
        got = (mine["edits"], mine["reference_length"], mine["rate"])
        print("corpus %s: sonata %d edits / %d = %.6f, jiwer %d / %d = %.6f" % (
            (unit,) + got + theirs))
        if got[:2] != theirs[:2] or abs(got[2] - theirs[2]) > 1e-12:
            failures.append("corpus %s: sonata %s, jiwer %s" % (unit, got, theirs))
    return failures
