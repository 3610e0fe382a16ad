#!/usr/bin/env python3
"""Writes tests/fixtures/resample/*.txt: short signals resampled by torchaudio 0.13's
torchaudio.functional.resample with its defaults (the reference behaviour sonata's resampler
matches), read by tests/data/test_resample.cpp.

Format: one `key value value ...` line per field (tests/support/text_fixture.h):
  orig_rate R    new_rate R
  input_pcm16 ...   the input as 16-bit PCM integers; the float signal is pcm / 32768,
                    as a decoder gives it (and integers keep the files small)
  output ...        resample(signal as float64, orig_rate, new_rate), 9 significant digits
  output_f32 ...    resample(signal as float32, orig_rate, new_rate), 9 significant digits

Both are torchaudio's resample; they differ in how torchaudio rounds. For a float32 waveform
it builds the filter in float32, from times t = base * ((k - width)/O - j/N) that reach a few
hundred before they are clamped to [-6, 6], so for rate pairs with a large reduced O (441 in
11025 -> 16000) its taps carry ~3e-5 of rounding. The float64 output is the algorithm's value
to ~1e-15; sonata builds its filter in double and matches it to float32 rounding, and matches
the float32 output to torchaudio's own rounding.

The signals are a few seeded sines plus noise, so both the passband and the cut-off band are
exercised, and their lengths are not multiples of the reduced rate so the output length's
ceil matters. Run with /usr/bin/python3 tools/make_resample_fixtures.py from the repository
root.
"""
import math
import os

import torch
import torchaudio

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "resample")


def signal(rate, length, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(length, dtype=torch.float64) / rate
    x = torch.zeros(length, dtype=torch.float64)
    # One tone below the new Nyquist frequency, one near it, one above it (removed when
    # downsampling): frequencies as fractions of the input's Nyquist.
    for fraction, amplitude in ((0.05, 0.3), (0.3, 0.2), (0.8, 0.15)):
        phase = float(torch.rand(1, generator=g)) * 2 * math.pi
        x += amplitude * torch.sin(2 * math.pi * fraction * rate / 2 * t + phase)
    x += 0.05 * torch.randn(length, generator=g, dtype=torch.float64)
    return (x * 32768).round().clamp(-32768, 32767).to(torch.int64)


def write_case(orig_rate, new_rate, length, seed):
    pcm = signal(orig_rate, length, seed)
    waveform = pcm.to(torch.float32) / 32768
    output = torchaudio.functional.resample(pcm.to(torch.float64) / 32768, orig_rate, new_rate)
    output_f32 = torchaudio.functional.resample(waveform, orig_rate, new_rate)
    expected = math.ceil(new_rate * length / orig_rate)
    assert output.shape == output_f32.shape == (expected,), (output.shape, expected)
    lines = [
        f"orig_rate {orig_rate}",
        f"new_rate {new_rate}",
        "input_pcm16 " + " ".join(str(int(v)) for v in pcm.tolist()),
        "output " + " ".join(f"{float(v):.9g}" for v in output.tolist()),
        "output_f32 " + " ".join(f"{float(v):.9g}" for v in output_f32.tolist()),
    ]
    name = f"{orig_rate}_to_{new_rate}.txt"
    with open(os.path.join(OUT, name), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(name, length, "->", expected, "float32 vs float64: max |difference|",
          float((output_f32.double() - output).abs().max()))


def main():
    os.makedirs(OUT, exist_ok=True)
    print("torchaudio", torchaudio.__version__)
    write_case(22050, 16000, 2213, seed=1)  # gcd 50: O = 441, N = 320
    write_case(44100, 16000, 4419, seed=2)  # gcd 100: O = 441, N = 160
    write_case(48000, 16000, 4801, seed=3)  # O = 3, N = 1
    write_case(8000, 16000, 1601, seed=4)   # up: O = 1, N = 2
    write_case(11025, 16000, 1103, seed=5)  # up, gcd 25: O = 441, N = 640


if __name__ == "__main__":
    main()
