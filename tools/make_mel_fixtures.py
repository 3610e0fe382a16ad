#!/usr/bin/env python3
"""Writes tests/fixtures/mel/*.txt: spectrogram, mel and filterbank cases computed by
torchaudio 0.13 (the reference behaviour sonata's data/features match), read by
tests/data/test_mel.cpp.

waveform.txt holds the input every case shares: half a second at 16 kHz of a chirp, a tone
and seeded noise, with 800 samples of digital silence in the middle (so that dB's top_db
floor is reached), quantised to 16 bits. It is stored as integers q and the waveform is
q / 32768, which float32 holds exactly.

Case format: one `key value value ...` line per field, numbers in decimal:
  kind log_mel|mel_spectrogram|spectrogram|filterbank
  sample_rate n_fft win_length hop_length f_min f_max n_mels power   (one line each)
  center 0|1   pad_mode reflect|constant   mel_scale htk|slaney   norm none|slaney
  log none|log|db   top_db none|value      length L (the first L samples of the waveform)
  shape d0 d1   values ...  (row-major; log_mel: [frames, n_mels], the transpose of
                             torchaudio's [n_mels, frames]; spectrogram: [freq, frames];
                             filterbank: melscale_fbanks' [n_freqs, n_mels])
Every reference is computed in float64 (torch.set_default_dtype), so it is the exact answer
for the float32 waveform; torchaudio's own float32 result is printed beside it for scale.

Run with /usr/bin/python3 tools/make_mel_fixtures.py from the repository root.
"""
import math
import os

import torch
import torchaudio

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "mel")
SAMPLE_RATE = 16000
LENGTH = 8000


def numbers(values, digits=9):
    return " ".join(f"{float(v):.{digits}g}" for v in values)


def waveform_q15():
    g = torch.Generator().manual_seed(20240601)
    t = torch.arange(LENGTH, dtype=torch.float64) / SAMPLE_RATE
    # A linear chirp from 100 Hz to 7 kHz over the clip, a 440 Hz tone, and white noise.
    f0, f1, duration = 100.0, 7000.0, LENGTH / SAMPLE_RATE
    phase = 2 * math.pi * (f0 * t + (f1 - f0) / (2 * duration) * t * t)
    x = 0.4 * torch.sin(phase) + 0.2 * torch.sin(2 * math.pi * 440.0 * t)
    x += 0.05 * torch.randn(LENGTH, generator=g, dtype=torch.float64)
    x[3000:3800] = 0.0
    return torch.clamp(torch.round(x * 32768), -32768, 32767).to(torch.int64)


def settings(c):
    return [
        f"sample_rate {c['sample_rate']}",
        f"n_fft {c['n_fft']}",
        f"win_length {c['win_length']}",
        f"hop_length {c['hop_length']}",
        f"f_min {c['f_min']!r}",
        f"f_max {c['f_max']!r}",
        f"n_mels {c['n_mels']}",
        f"power {c['power']!r}",
        f"center {int(c['center'])}",
        f"pad_mode {c['pad_mode']}",
        f"mel_scale {c['mel_scale']}",
        f"norm {c['norm']}",
        f"log {c['log']}",
        f"top_db {'none' if c['top_db'] is None else repr(c['top_db'])}",
    ]


def features(wave, c, kind):
    """torchaudio's result for `wave` (1-D) in the dtype of `wave`."""
    if kind == "spectrogram":
        spec = torchaudio.transforms.Spectrogram(
            n_fft=c["n_fft"], win_length=c["win_length"], hop_length=c["hop_length"],
            power=c["power"], center=c["center"], pad_mode=c["pad_mode"]).to(wave.dtype)
        return spec(wave)
    mel = torchaudio.transforms.MelSpectrogram(
        sample_rate=c["sample_rate"], n_fft=c["n_fft"], win_length=c["win_length"],
        hop_length=c["hop_length"], f_min=c["f_min"], f_max=c["f_max"], n_mels=c["n_mels"],
        power=c["power"], center=c["center"], pad_mode=c["pad_mode"], norm=c["norm_arg"],
        mel_scale=c["mel_scale"]).to(wave.dtype)
    y = mel(wave)
    if kind == "mel_spectrogram":
        return y
    if c["log"] == "log":
        y = torch.log(y + 1e-6)
    elif c["log"] == "db":
        y = torchaudio.transforms.AmplitudeToDB(stype="power", top_db=c["top_db"])(y)
    return y.transpose(0, 1)


def write_case(name, wave_q15, kind="log_mel", length=LENGTH, **overrides):
    c = dict(sample_rate=SAMPLE_RATE, n_fft=400, win_length=None, hop_length=160, f_min=0.0,
             f_max=None, n_mels=80, power=2.0, center=True, pad_mode="reflect",
             mel_scale="htk", norm="none", log="log", top_db=None)
    c.update(overrides)
    c["win_length"] = c["win_length"] or c["n_fft"]
    c["f_max"] = float(c["f_max"] if c["f_max"] is not None else c["sample_rate"] // 2)
    c["norm_arg"] = None if c["norm"] == "none" else c["norm"]
    wave32 = wave_q15[:length].to(torch.float32) / 32768
    torch.set_default_dtype(torch.float64)
    reference = features(wave32.double(), c, kind)
    torch.set_default_dtype(torch.float32)
    single = features(wave32, c, kind).double()
    scale = reference.abs().max().item()
    print(f"{name}: shape {list(reference.shape)}, torchaudio float32 vs float64: "
          f"{(single - reference).abs().max().item() / scale:.2e} of max")
    lines = [f"kind {kind}"] + settings(c) + [
        f"length {length}",
        "shape " + " ".join(str(d) for d in reference.shape),
        "values " + numbers(reference.flatten().tolist()),
    ]
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_filterbank(name, n_freqs, f_min, f_max, n_mels, sample_rate, norm, mel_scale):
    fb = torchaudio.functional.melscale_fbanks(
        n_freqs, f_min, f_max, n_mels, sample_rate, norm=None if norm == "none" else norm,
        mel_scale=mel_scale)
    torch.set_default_dtype(torch.float64)
    reference = torchaudio.functional.melscale_fbanks(
        n_freqs, f_min, f_max, n_mels, sample_rate, norm=None if norm == "none" else norm,
        mel_scale=mel_scale)
    torch.set_default_dtype(torch.float32)
    print(f"{name}: shape {list(reference.shape)}, float32 vs float64: "
          f"{(fb.double() - reference).abs().max().item():.2e}")
    c = dict(sample_rate=sample_rate, n_fft=2 * (n_freqs - 1), win_length=2 * (n_freqs - 1),
             hop_length=1, f_min=f_min, f_max=f_max, n_mels=n_mels, power=2.0, center=True,
             pad_mode="reflect", mel_scale=mel_scale, norm=norm, log="none", top_db=None)
    lines = ["kind filterbank"] + settings(c) + [
        "shape " + " ".join(str(d) for d in reference.shape),
        "values " + numbers(reference.flatten().tolist(), 17),
    ]
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    q = waveform_q15()
    with open(os.path.join(OUT, "waveform.txt"), "w") as f:
        f.write(f"sample_rate {SAMPLE_RATE}\nq15 " + " ".join(str(int(v)) for v in q) + "\n")

    # DESIGN.md's front end: MelSpectrogram(16000, n_fft=400, hop 160, n_mels 80), log(x + 1e-6).
    write_case("htk_log", q)
    write_case("slaney_log", q, mel_scale="slaney", norm="slaney", f_min=20.0, f_max=7600.0,
               n_mels=40)
    # Magnitude spectrogram with a window shorter than n_fft (zero-padded in the middle).
    write_case("power1_spectrogram", q, kind="spectrogram", length=4000, n_fft=256,
               win_length=200, hop_length=128, power=1.0)
    write_case("no_center_log", q, center=False, hop_length=200, n_mels=64)
    # The silence reaches -100 dB, below the peak minus top_db: the floor applies.
    write_case("db_top80", q, log="db", top_db=80.0, n_mels=40)
    write_case("mel_power_no_log", q, kind="mel_spectrogram", length=2400, n_mels=32)
    # Reflect padding by n_fft / 2 = 200 needs more than 200 samples: 201 is the shortest.
    write_case("short_201_reflect", q, length=201)
    write_case("short_151_constant", q, length=151, pad_mode="constant")
    # Odd n_fft: the unpacked complex FFT.
    write_case("odd_nfft_375", q, length=3001, n_fft=375, hop_length=100, n_mels=40)

    write_filterbank("fbank_htk", 201, 0.0, 8000.0, 80, 16000, "none", "htk")
    write_filterbank("fbank_slaney", 201, 20.0, 7600.0, 40, 16000, "slaney", "slaney")
    # sample_rate // 2 = 5512: torchaudio's bins stop at the integer Nyquist.
    write_filterbank("fbank_htk_sr11025", 129, 0.0, 5512.0, 32, 11025, "none", "htk")


if __name__ == "__main__":
    main()
