"""The other torch-made text fixtures, made with Debian's PyTorch 1.13 / torchaudio 0.13: CTC
loss (tests/fixtures/ctc/), GRU and LSTM (rnn/), the optimizers and schedules (optim/) and
torchaudio's resample (resample/). Each fixture script runs again with PyTorch 2.x into a
temporary folder (its OUT pointed there) and every file must come out as committed: the same
keys and non-numeric fields, and every numeric line within 1e-9 of its largest magnitude
(float64 references; the files keep 9 or 17 significant digits), 1e-5 for lines computed in
float32 by PyTorch itself (files or fields named f32), where a kernel's order of summation may
have changed between versions.
"""
import importlib
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SCRIPTS = {"ctc": "make_ctc", "rnn": "make_rnn", "optim": "make_optim",
           "resample": "make_resample"}


def read_lines(path):
    with open(path) as f:
        return [line.split() for line in f if line.strip()]


def numbers(tokens):
    try:
        return [float(t) for t in tokens]
    except ValueError:
        return None


def compare_file(name, committed, fresh):
    if [l[0] for l in committed] != [l[0] for l in fresh]:
        return ["%s: other keys" % name], 0.0
    failures, worst = [], 0.0
    for a, b in zip(committed, fresh):
        x, y = numbers(a[1:]), numbers(b[1:])
        if x is None or y is None or len(x) != len(y):
            if a != b:
                failures.append("%s: %s is %s, was %s" % (name, a[0], b[1:6], a[1:6]))
            continue
        scale = max([abs(v) for v in x] + [1e-300])
        error = max([abs(p - q) for p, q in zip(x, y)] + [0.0]) / scale
        worst = max(worst, error)
        limit = 1e-5 if "f32" in name or "f32" in a[0] else 1e-9
        if error > limit:
            failures.append("%s: %s differs by %.3g of its largest value (limit %g)" % (
                name, a[0], error, limit))
    return failures, worst


def run(build_dir):
    import torch
    import torchaudio

    print("torch", torch.__version__, "torchaudio", torchaudio.__version__)
    sys.path.insert(0, FIXTURES)
    failures = []
    for folder, script in SCRIPTS.items():
        module = importlib.import_module(script)
        with tempfile.TemporaryDirectory() as tmp:
            module.OUT = tmp
            module.main()
            names = sorted(os.listdir(os.path.join(FIXTURES, folder)))
            if sorted(os.listdir(tmp)) != names:
                failures.append("%s: files %s now, %s committed" % (
                    folder, sorted(os.listdir(tmp)), names))
            worst = 0.0
            for name in names:
                if os.path.exists(os.path.join(tmp, name)):
                    found, error = compare_file(
                        "%s/%s" % (folder, name), read_lines(os.path.join(FIXTURES, folder, name)),
                        read_lines(os.path.join(tmp, name)))
                    failures += found
                    worst = max(worst, error)
            print("%s: %d files, worst line %.3g of its largest value" % (folder, len(names),
                                                                           worst))
    return failures
