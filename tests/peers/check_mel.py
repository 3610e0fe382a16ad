"""Log-mel: torchaudio 2.x against the committed fixture (tests/fixtures/mel/, made with
torchaudio 0.13, which tests/data/test_mel.cpp and the CUDA mel test hold sonata to): the
fixture script run again into a temporary folder must reproduce every case. The references
are float64, so the two versions should agree to rounding: within 1e-9 of each case's
largest magnitude (the files keep 9 significant digits; the filterbanks 17).
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def read_case(path):
    fields = {}
    with open(path) as f:
        for line in f:
            key, _, rest = line.strip().partition(" ")
            fields[key] = rest
    return fields


def run(build_dir):
    sys.path.insert(0, FIXTURES)
    import make_mel
    import torchaudio

    print("torchaudio", torchaudio.__version__)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        make_mel.main(tmp)
        for name in sorted(os.listdir(os.path.join(FIXTURES, "mel"))):
            committed = read_case(os.path.join(FIXTURES, "mel", name))
            fresh = read_case(os.path.join(tmp, name))
            settings = {k: v for k, v in committed.items() if k not in ("values", "q15")}
            if settings != {k: v for k, v in fresh.items() if k not in ("values", "q15")}:
                failures.append("%s: settings or shape differ" % name)
                continue
            key = "q15" if "q15" in committed else "values"
            a = [float(v) for v in committed[key].split()]
            b = [float(v) for v in fresh[key].split()]
            scale = max(max(abs(v) for v in a), 1e-30)
            worst = max(abs(x - y) for x, y in zip(a, b)) / scale if len(a) == len(b) else 1.0
            print("%s: %d values, max |committed - torchaudio now| %.3g of the largest" % (
                name, len(a), worst))
            if len(a) != len(b) or worst > 1e-9:
                failures.append("%s differs by %.3g of its largest value" % (name, worst))
    return failures
