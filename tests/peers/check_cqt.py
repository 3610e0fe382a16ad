"""CQT: librosa.cqt as PyPI ships it against the committed fixture (tests/fixtures/cqt/, which
tests/data/test_cqt.cpp holds sonata to): the fixture script run again into a temporary folder
with the installed librosa must reproduce every file (the waveform exactly, the dB images
within 2e-3 dB). It also reports, without failing, how far sonata's definition lies from
librosa's default resampler (soxr_hq, which PyPI's librosa brings), for the header's record.
"""
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
TOLERANCE_DB = 2e-3  # float32 images; librosa 0.10.2 to 0.11.0 moved them by 8e-4 at most


def run(build_dir):
    sys.path.insert(0, FIXTURES)
    import make_cqt

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        make_cqt.write(tmp, "polyphase")
        for name in sorted(os.listdir(os.path.join(FIXTURES, "cqt"))):
            committed = np.load(os.path.join(FIXTURES, "cqt", name))
            fresh = np.load(os.path.join(tmp, name))
            if committed.shape != fresh.shape:
                failures.append("%s: shape %s committed, %s now" % (name, committed.shape,
                                                                    fresh.shape))
                continue
            worst = float(np.abs(committed.astype(np.float64) - fresh).max())
            print("%s: max |committed - librosa now| %.3g" % (name, worst))
            limit = 0.0 if name == "waveform.npy" else TOLERANCE_DB
            if worst > limit:
                failures.append("%s differs from librosa now by %.3g (limit %g)" % (
                    name, worst, limit))
        print("-- for the record: sonata's definition against librosa's default soxr_hq")
        make_cqt.write(os.path.join(tmp, "soxr"), "soxr_hq")
    return failures
