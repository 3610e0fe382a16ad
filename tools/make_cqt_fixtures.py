#!/usr/bin/env python3
"""Writes tests/fixtures/cqt/: librosa.cqt's dB image of a test waveform, read by
tests/data/test_cqt.cpp (the CPU parity) and tests/cuda/test_cuda_cqt.cpp.

  waveform.npy       float32 q / 32768 for 16-bit integers q (exact in float32): 1.5 s at
                     22050 Hz of a logarithmic chirp (40 Hz -> 5 kHz), tones at 55 Hz and 1 kHz
                     and seeded noise, with 0.2 s of digital silence
  db_22050.npy       float32 [84, 65]: librosa.amplitude_to_db(np.abs(librosa.cqt(y, sr=22050,
                     hop_length=512, fmin=C1, n_bins=84, bins_per_octave=12, sparsity=0,
                     res_type="polyphase")), ref=np.max, top_db=80)
  db_22050_sparse.npy  the same with librosa's default sparsity=0.01
  db_16000*.npy      both again for the waveform's first 16000 samples taken as 16 kHz audio

librosa 0.10's default res_type is "soxr_hq", and Debian 12 has no python3-soxr; the polyphase
resampler (scipy) is one of librosa's documented choices. librosa imports soxr at start, so a
stub module stands in for it and raises if it is ever called (it is not, with polyphase).

It also prints how sonata's definition (data/features/cqt.h: every wavelet correlated with
the clip at the full rate, computed here in numpy float64) differs from librosa's, the figures
the header states.

Usage (Debian: python3-numpy python3-scipy python3-numba python3-soundfile python3-audioread
python3-joblib python3-decorator python3-lazy-loader python3-msgpack python3-pooch
python3-sklearn python3-typing-extensions), with a librosa 0.10 checkout (its source tree, the
folder holding librosa/):
  /usr/bin/python3 tools/make_cqt_fixtures.py /path/to/librosa-checkout
"""
import math
import os
import sys
import types

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "cqt")
LENGTH = 33075  # 1.5 s at 22050 Hz


def waveform_q15(sr=22050):
    rng = np.random.default_rng(20261203)
    t = np.arange(LENGTH) / sr
    duration = LENGTH / sr
    f0, f1 = 40.0, 5000.0
    k = math.log(f1 / f0) / duration
    phase = 2 * math.pi * f0 * (np.exp(k * t) - 1) / k
    x = 0.3 * np.sin(phase) + 0.2 * np.sin(2 * math.pi * 55.0 * t) + 0.1 * np.sin(2 * math.pi * 1000.0 * t)
    x += 0.02 * rng.standard_normal(LENGTH)
    x[int(0.6 * sr) : int(0.8 * sr)] = 0.0
    return np.clip(np.round(x * 32768), -32768, 32767).astype(np.int16)


def direct_cqt_db(y, sr, hop=512, fmin=32.703195662574829, bins=84, bpo=12, top_db=80.0):
    """sonata's definition in float64 (data/features/cqt.h, kernels/cpu/cqt.h)."""
    step = 2.0 ** (2.0 / bpo)
    q = 1.0 / ((step - 1) / (step + 1))
    frames = 1 + len(y) // hop
    longest = int(math.floor(q * sr / fmin / 2) - math.floor(-q * sr / fmin / 2))
    pad = longest // 2 + 1
    padded = np.concatenate([np.zeros(pad), y.astype(np.float64), np.zeros(pad + hop)])
    out = np.empty((bins, frames))
    for kbin in range(bins):
        f = fmin * 2.0 ** (kbin / bpo)
        length = q * sr / f
        taps = int(math.floor(length / 2) - math.floor(-length / 2))
        j = np.arange(taps)
        window = 0.5 - 0.5 * np.cos(2 * math.pi * j / taps)
        kernel = window * np.exp(2j * math.pi * f * j / sr) * math.sqrt(length) / window.sum()
        starts = pad + np.arange(frames) * hop - taps // 2
        segments = np.lib.stride_tricks.sliding_window_view(padded, taps)[starts]
        out[kbin] = np.abs(segments @ kernel)
    db = 20 * np.log10(np.maximum(out, 1e-5)) - 20 * np.log10(max(out.max(), 1e-5))
    return np.maximum(db, -top_db)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    stub = types.ModuleType("soxr")

    def unavailable(*args, **kwargs):
        raise RuntimeError("soxr is not installed; this script asks librosa for res_type='polyphase'")

    stub.resample = unavailable
    stub.__version__ = "stub"
    sys.modules["soxr"] = stub
    import librosa

    print("librosa", librosa.__version__, "from", os.path.dirname(librosa.__file__))
    os.makedirs(OUT, exist_ok=True)
    q = waveform_q15()
    np.save(os.path.join(OUT, "waveform.npy"), q.astype(np.float32) / np.float32(32768))
    for sr, length in ((22050, LENGTH), (16000, 16000)):
        y = q[:length].astype(np.float32) / np.float32(32768)
        mine = direct_cqt_db(y, sr)
        for suffix, sparsity in (("", 0.0), ("_sparse", 0.01)):
            c = librosa.cqt(y, sr=sr, hop_length=512, fmin=librosa.note_to_hz("C1"), n_bins=84,
                            bins_per_octave=12, sparsity=sparsity, res_type="polyphase")
            db = librosa.amplitude_to_db(np.abs(c), ref=np.max, top_db=80.0).astype(np.float32)
            np.save(os.path.join(OUT, f"db_{sr}{suffix}.npy"), np.ascontiguousarray(db))
            diff = np.abs(mine - db)
            loud = db > -60
            top = diff[72:][loud[72:]]
            print(f"sr {sr} sparsity {sparsity}: shape {db.shape}; |sonata - librosa| dB above "
                  f"-60 dB: max {diff[loud].max():.3f}, p99 {np.percentile(diff[loud], 99):.3f}, "
                  f"mean {diff[loud].mean():.4f}; top octave max {top.max():.3f}; all cells max "
                  f"{diff.max():.3f}")

if __name__ == "__main__":
    main()
