#!/usr/bin/env python3
"""Writes a small synthetic music-genre corpus for the classification demo (VGG19_BN on dB mel
spectrogram images of fixed-length slices, the CCMusic setting): six genres synthesised from
seeded random parameters, as mono 16-bit WAV, split into train/val/test with manifests in the
tab-separated format of data/manifest/class_manifest.h:

  DIR/{train,val,test}.tsv     wav/<split>/<genre>/<file>.wav<TAB><genre>
  DIR/about.txt                the settings, the genres, the counts
  DIR/wav/<split>/<genre>/<split>_<genre>_NNN.wav

Paths in the manifests are relative to DIR; DIR/wav/<split> is also a folder-per-class tree
(GTZAN, torchvision's ImageFolder). Counts are tracks per genre.

  drone       sustained low chords of detuned pairs (slow beating), slow swells
  techno      kick on every beat at 120-135 bpm, off-beat noise hi-hats, plucked bass
  chiptune    fast square/pulse-wave arpeggios over a triangle bass
  piano       harmonic notes with exponential decay, a melody in a key, chords below
  bells       inharmonic partials with long decays, sparse strikes
  noise_rock  distorted sawtooth power chords, noise bursts

Every track draws its tempo, key, timbre, loudness (-20..-6 dBFS peak) and noise floor from its
own generator, seeded by (seed, split, genre, index), so no two tracks, and no two splits,
share material. Some tracks borrow an element of another genre (a pad under the techno, a kick
under the noise rock, a drone under the bells) so that the classes overlap a little.

Usage: tools/make_genre_demo.py --out DIR [--seed 1] [--train 24] [--val 6] [--test 6]
                                [--seconds 6] [--rate 16000] [--jobs 2]

Needs python3 only (standard library). Deterministic: the same settings give byte-identical
files with the same Python and C math library. A second run with the same settings does
nothing; about.txt is written last, so an interrupted run is redone.
"""
import argparse
import array
import cmath
import functools
import math
import multiprocessing
import os
import random
import shutil
import sys
import time
import wave
from itertools import accumulate, chain, islice, repeat, starmap
from operator import add, attrgetter, mul, sub

# Bump when the rendering changes, so that an old corpus is not taken for a current one.
FORMAT_VERSION = 1
SPLITS = ("train", "val", "test")
MAX_SAMPLES = 4_000_000  # per track: 250 s at 16 kHz, some hundreds of MB of Python floats
GENRES = ("drone", "techno", "chiptune", "piano", "bells", "noise_rock")

# Oscillators read one period from a table without interpolation: the rounded phase adds a
# little noise, near -56 dB for a sine, more for the brightest tables (chiptune, noise rock),
# which carry far more noise of their own.
SIZE = 4096
MASK = SIZE - 1
SINE = [math.sin(2.0 * math.pi * i / SIZE) for i in range(SIZE)]

# Band-limited tables are cached per harmonic count; counts are rounded down to these so a
# process builds a few dozen tables, not one per note.
HARMONIC_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)
SHAPES = {
    "saw": lambda k: 1.0 / k,
    "square": lambda k: 1.0 / k if k % 2 else 0.0,
    "pulse25": lambda k: math.sin(math.pi * k * 0.25) / k,
    "pulse12": lambda k: math.sin(math.pi * k * 0.125) / k,
    "triangle": lambda k: (1.0 if k % 4 == 1 else -1.0) / (k * k) if k % 2 else 0.0,
    "soft": lambda k: 1.0 / (k * k),
}
MAJOR = (0, 2, 4, 5, 7, 9, 11)
MINOR = (0, 2, 3, 5, 7, 8, 10)
PENTATONIC = (0, 2, 4, 7, 9)
# Decaying partials stop at this amplitude, -36 dB below a full-scale partial (the loudest of
# a note has amplitude 1 or less): near the noise floor added to every track.
FLOOR = 0.015


# ---- signal building blocks. Tracks are lists of floats; the per-sample loops run inside
# itertools/operator (C), chained as iterators so few intermediate lists are built.

@functools.lru_cache(maxsize=None)
def harmonic_table(shape, harmonics):
    """One period of `shape` with its first `harmonics` harmonics, peak 1."""
    table = [0.0] * SIZE
    for k in range(1, harmonics + 1):
        a = SHAPES[shape](k)
        if a:
            # (SINE * k)[::k][j] is SINE[k * j mod SIZE]: harmonic k, without a Python loop.
            table = list(map(add, table, map(a.__mul__, (SINE * k)[::k])))
    peak = max(map(abs, table))
    return [v / peak for v in table]


def table_for(shape, freq, rate, cap=48):
    """The table of `shape` with as many harmonics as stay below 0.45 `rate` at `freq`."""
    allowed = min(cap, int(0.45 * rate / freq))
    return harmonic_table(shape, max([s for s in HARMONIC_STEPS if s <= allowed], default=1))


def osc(table, freq, n, rate, phase=0.0):
    """n samples of `table` played at `freq` Hz from `phase` (in periods), as an iterator."""
    if n <= 0:
        return iter(())
    steps = accumulate(repeat(freq * SIZE / rate, n - 1), initial=phase * SIZE)
    return map(table.__getitem__, map(MASK.__and__, map(int, steps)))


def osc_glide(table, freqs, rate):
    """`table` played at a frequency that changes every sample (freqs in Hz)."""
    steps = accumulate(map((SIZE / rate).__mul__, freqs))
    return map(table.__getitem__, map(MASK.__and__, map(int, steps)))


def decay(n, tau_s, rate, start=1.0):
    """start * exp(-t / tau) for n samples, as an iterator."""
    if n <= 0:
        return iter(())
    return accumulate(repeat(math.exp(-1.0 / (tau_s * rate)), n - 1), mul, initial=float(start))


def rotation(freq, tau_s, rate):
    """The complex factor that turns a partial one sample on: it decays by exp(-1 / tau) and
    advances by 2 pi f / rate."""
    return cmath.rect(math.exp(-1.0 / (tau_s * rate)), 2.0 * math.pi * freq / rate)


def partial(freq, first, tau_s, n, rate):
    """first * exp(-t / tau) * exp(2 pi i f t) for n samples, as an iterator of complex numbers
    whose imaginary parts are a decaying sine (from phase 0 when `first` is imaginary). One
    complex multiply per sample is about half the cost of a table oscillator times an
    envelope."""
    if n <= 0:
        return iter(())
    return accumulate(repeat(rotation(freq, tau_s, rate), n - 1), mul, initial=first)


def audible(amp, tau_s, rate):
    """Samples until amp * exp(-t / tau) falls below FLOOR, where a partial is cut."""
    return int(tau_s * rate * math.log(amp / FLOOR)) if amp > FLOOR else 0


def imaginary(values):
    return list(map(attrgetter("imag"), values))


def times(x, y):
    return list(map(mul, x, y))


def scaled(x, gain):
    return list(map(float(gain).__mul__, x))


def held(values, hop, n):
    """A slowly changing curve computed every `hop` samples, held for `hop` samples (n in all)."""
    return islice(chain.from_iterable(map(repeat, values, repeat(hop))), n)


def mix(buf, start, x, gain=1.0, length=None):
    """Adds gain * x (a list, or an iterator of `length` samples) into buf from sample
    `start`; what falls outside buf is dropped."""
    start = int(start)
    if start >= len(buf):
        return
    length = len(x) if isinstance(x, list) else length
    # map stops at the shorter of the two, so a short x leaves the rest of buf alone.
    end = len(buf) if length is None else min(len(buf), start + length)
    x = iter(x)
    if start < 0:
        x, start = islice(x, -start, None), 0
    part = map(float(gain).__mul__, x) if gain != 1.0 else x
    added = list(map(add, buf[start:end], part))
    buf[start:start + len(added)] = added


def fade(x, n_in, n_out):
    """Linear ramps over the first n_in and the last n_out samples, in place (no clicks)."""
    n_in, n_out = min(n_in, len(x)), min(n_out, len(x))
    for i in range(n_in):
        x[i] *= i / n_in
    for i in range(n_out):
        x[len(x) - 1 - i] *= i / n_out
    return x


def noise(rng, n):
    """White noise, uniform in -1..1."""
    return list(map((-1.0).__add__, map((2.0).__mul__, starmap(rng.random, repeat((), n)))))


def brighter(x):
    """First difference: +6 dB per octave, to move noise up towards hi-hat territory."""
    return list(map(sub, x, [0.0] + x[:-1]))


def hz(midi):
    return 440.0 * 2.0 ** ((midi - 69) / 12.0)


def scale_note(root, scale, degree):
    """The MIDI note of scale `degree` (0 = root; 7 = the octave for a 7-note scale)."""
    octave, step = divmod(degree, len(scale))
    return root + 12 * octave + scale[step]


def detuned(freq, cents):
    return freq * 2.0 ** (cents / 1200.0)


# ---- instruments shared by several genres

def kick(rng, rate):
    """A sine whose pitch falls fast from 110-200 Hz to 42-60 Hz, with a click."""
    n = int(rng.uniform(0.25, 0.4) * rate)
    f_hi, f_lo = rng.uniform(110.0, 200.0), rng.uniform(42.0, 60.0)
    sweep = decay(n, rng.uniform(0.02, 0.05), rate, f_hi - f_lo)
    out = times(osc_glide(SINE, [f_lo + s for s in sweep], rate),
                decay(n, rng.uniform(0.08, 0.2), rate))
    click = int(0.004 * rate)
    mix(out, 0, times(noise(rng, click), decay(click, 0.001, rate)), rng.uniform(0.1, 0.4))
    return fade(out, int(0.001 * rate), int(0.01 * rate))


def hat(rng, rate, length_s, tau_s):
    n = int(length_s * rate)
    return fade(times(brighter(brighter(noise(rng, n))), decay(n, tau_s, rate)), 0, n // 4)


def beating_tone(rng, table, freq, n, rate):
    """A sustained tone that beats and swells. A detuned pair of equal tones is one tone whose
    amplitude follows |cos(pi * beat * t)|; that envelope, times a slow swell, is computed
    every millisecond or so, which costs one oscillator per tone instead of two."""
    beat = rng.uniform(0.15, 1.5)  # Hz between the two tones of the pair
    beat_depth = rng.uniform(0.4, 1.0)
    swell_hz, swell_depth = rng.uniform(0.05, 0.4), rng.uniform(0.2, 0.7)
    beat_phase, swell_phase = rng.uniform(0.0, math.pi), rng.uniform(0.0, 2.0 * math.pi)
    hop = max(1, rate // 1000)
    envelope = [(1.0 - beat_depth + beat_depth * abs(math.cos(math.pi * beat * t + beat_phase)))
                * (1.0 + swell_depth * math.sin(2.0 * math.pi * swell_hz * t + swell_phase))
                for t in (j * hop / rate for j in range(n // hop + 1))]
    return map(mul, osc(table, freq, n, rate, rng.random()), held(envelope, hop, n))


def pad(rng, n, rate, root, intervals, level):
    """A quiet sustained chord of soft beating tones (the drone's texture)."""
    out = [0.0] * n
    for interval in intervals:
        f = hz(root + interval)
        mix(out, 0, beating_tone(rng, table_for("soft", f, rate, cap=6), f, n, rate))
    return fade(scaled(out, level / len(intervals)), int(0.5 * rate), int(0.5 * rate))


def bell_voice(rng):
    """Partial ratios, amplitudes and decay times of one kind of bell."""
    kind = rng.choice(["church", "tubular", "odd"])
    if kind == "church":  # hum, prime, minor third, fifth, nominal and above
        ratios = [0.5, 1.0, 1.19, 1.5, 2.0, 2.5, 3.01]
    elif kind == "tubular":
        ratios = [1.0, 2.76, 5.40, 8.93]
    else:
        ratios = [1.0] + sorted(rng.uniform(1.1, 6.0) for _ in range(rng.randint(3, 5)))
    ratios = [r * rng.uniform(0.985, 1.015) for r in ratios]
    longest = rng.uniform(1.0, 2.5)
    amps = [rng.uniform(0.3, 1.0) / math.sqrt(r) for r in ratios]
    taus = [longest * min(1.0, 1.0 / r) for r in ratios]
    return ratios, amps, taus


def bell_sound(rate, freq, voice, limit):
    """One strike, at most `limit` samples: each partial a decaying sine."""
    lengths = [min(limit, audible(amp, tau, rate)) if freq * ratio < 0.45 * rate else 0
               for ratio, amp, tau in zip(*voice)]
    buf = [0j] * max(lengths)
    for (ratio, amp, tau), m in zip(zip(*voice), lengths):
        mix(buf, 0, partial(freq * ratio, complex(0.0, amp), tau, m, rate), length=m)
    return imaginary(buf)


# ---- the genres: each returns n samples at an arbitrary level (normalised afterwards)

def drone(rng, n, rate):
    root = rng.randint(33, 50)
    intervals = rng.choice([(0, 7, 12), (0, 7, 12, 19), (0, 5, 12), (0, 3, 7, 12), (0, 4, 7, 12),
                            (0, 7, 10, 15), (0, 12, 19, 24)])
    shape = rng.choice(["soft", "soft", "triangle", "saw"])
    cap = rng.choice([3, 6, 12])
    out = [0.0] * n
    for i, interval in enumerate(intervals):
        f = hz(root + interval)
        mix(out, 0, beating_tone(rng, table_for(shape, f, rate, cap), f, n, rate),
            rng.uniform(0.6, 1.0) / (1.0 + 0.4 * i))
    if rng.random() < 0.3:  # a thin high shimmer two or three octaves up
        f = hz(root + rng.choice([24, 31, 36]))
        mix(out, 0, beating_tone(rng, SINE, f, n, rate), rng.uniform(0.1, 0.3))
    if rng.random() < 0.2:  # now and then a soft bell far away
        start = int(rng.uniform(0.0, 0.8) * n)
        sound = bell_sound(rate, hz(root + rng.choice([24, 31, 36])), bell_voice(rng), n - start)
        mix(out, start, sound, rng.uniform(0.2, 0.5))
    if rng.random() < 0.5:
        fade(out, int(rng.uniform(0.5, 2.0) * rate), 0)
    return out


def techno(rng, n, rate):
    beat = 60.0 / rng.uniform(120.0, 135.0) * rate  # samples per beat
    offset = rng.uniform(0.0, beat)  # the track starts anywhere in a beat
    out = [0.0] * n
    the_kick = kick(rng, rate)
    hat_tau = rng.uniform(0.01, 0.04)
    hats = [hat(rng, rate, rng.uniform(0.04, 0.12), hat_tau) for _ in range(3)]
    sixteenths = rng.random() < 0.4
    clap = None
    if rng.random() < 0.5:
        m = int(0.2 * rate)
        clap = times(brighter(noise(rng, m)), decay(m, rng.uniform(0.03, 0.08), rate))
        fade(clap, 0, m // 4)
    root = rng.randint(31, 43)
    bass_shape = rng.choice(["saw", "square", "soft"])
    bass_cap = rng.choice([6, 12, 16])
    bass_tau = rng.uniform(0.05, 0.2)
    bass_len = int(rng.uniform(0.1, 0.2) * rate)
    riff = [rng.choice([0, 0, 0, 12, 7, 3, 10, -2]) for _ in range(8)]
    bass_steps = (1, 3) if rng.random() < 0.4 else (2,)  # 16ths around the beat, or off-beats
    mute_bar = rng.randrange(4) if rng.random() < 0.2 else -1  # a bar without the kick
    kick_gain = rng.uniform(0.8, 1.0)
    hat_gain = rng.uniform(0.15, 0.4)
    bass_gain = rng.uniform(0.3, 0.6)

    b = -1
    while offset + b * beat < n:
        t = offset + b * beat
        if (b // 4) % 4 != mute_bar:
            mix(out, t, the_kick, kick_gain)
        mix(out, t + beat / 2, hats[b % 3], hat_gain)
        if sixteenths:
            mix(out, t + beat / 4, hats[(b + 1) % 3], hat_gain * 0.4)
            mix(out, t + 3 * beat / 4, hats[(b + 2) % 3], hat_gain * 0.4)
        if clap and b % 2 == 1:
            mix(out, t, clap, hat_gain * 1.5)
        for step in bass_steps:
            f = hz(root + riff[(2 * b + step) % len(riff)])
            tone = times(osc(table_for(bass_shape, f, rate, bass_cap), f, bass_len, rate),
                         decay(bass_len, bass_tau, rate))
            fade(tone, int(0.002 * rate), int(0.01 * rate))
            mix(out, t + step * beat / 4, tone, bass_gain)
        b += 1
    if rng.random() < 0.3:  # a pad chord, as in the drone
        mix(out, 0, pad(rng, n, rate, root + 24, rng.choice([(0, 7), (0, 3, 7), (0, 7, 10)]),
                        rng.uniform(0.1, 0.3)))
    return out


def chiptune(rng, n, rate):
    bpm = rng.uniform(130.0, 190.0)
    per_beat = rng.choice([4, 4, 4, 6, 8])  # arpeggio steps per beat
    step = 60.0 / bpm / per_beat * rate
    root = rng.randint(57, 69)
    scale = rng.choice([MAJOR, MINOR])
    progression = [0] + [rng.choice([1, 2, 3, 4, 5]) for _ in range(3)]
    lead_shape = rng.choice(["square", "pulse25", "pulse12"])
    pattern = rng.choice(["up", "down", "updown", "random"])
    octave_up = rng.random() < 0.4
    gate = rng.uniform(0.5, 0.95)
    lead_tau = rng.uniform(0.05, 0.5) if rng.random() < 0.5 else 100.0  # plucked or flat
    bass_every = per_beat // 2 if per_beat % 2 == 0 else per_beat  # 8ths, or beats in triplets
    out = [0.0] * n
    steps_per_bar = 4 * per_beat
    i = 0
    while i * step < n:
        degree = progression[(i // steps_per_bar) % len(progression)]
        chord = [scale_note(root, scale, degree + d) for d in (0, 2, 4, 7)]
        if octave_up:
            chord = chord + [c + 12 for c in chord[1:3]]
        position = i % len(chord)
        if pattern == "down":
            position = len(chord) - 1 - position
        elif pattern == "updown":
            cycle = 2 * len(chord) - 2
            position = i % cycle
            position = position if position < len(chord) else cycle - position
        elif pattern == "random":
            position = rng.randrange(len(chord))
        f = hz(chord[position])
        length = int(step * gate)
        tone = times(osc(table_for(lead_shape, f, rate), f, length, rate),
                     decay(length, lead_tau, rate))
        mix(out, i * step, fade(tone, int(0.001 * rate), int(0.003 * rate)), 0.5)
        if i % bass_every == 0:
            fb = hz(scale_note(root - 24, scale, degree))
            blen = int(min(step * bass_every, 0.4 * rate) * 0.9)
            bass = list(osc(table_for("triangle", fb, rate), fb, blen, rate))
            mix(out, i * step, fade(bass, int(0.002 * rate), int(0.005 * rate)), 0.6)
        i += 1
    if rng.random() < 0.5:  # the noise channel as drums, on every beat
        burst = int(0.06 * rate)
        drum = times(noise(rng, burst), decay(burst, rng.uniform(0.01, 0.03), rate))
        for b in range(int(n / (step * per_beat)) + 1):
            mix(out, b * step * per_beat, drum, rng.uniform(0.15, 0.35))
    return out


def piano_note(buf, start, rate, midi, velocity, hold, ring, stretch):
    """Mixes one note into the complex buffer buf: up to eight slightly stretched harmonics (a
    string's inharmonicity), the higher ones weaker (more so when played softly; those near
    7.5 weakest, as for a string struck 1/7.5 of its length from the end) and shorter, each
    decaying from phase 0, and damped (tau 0.08 s) after `hold` samples."""
    start, hold = int(start), max(1, int(hold))
    remaining = len(buf) - start
    f = hz(midi)
    for k in range(1, 9):
        fk = k * f * math.sqrt(1.0 + stretch * k * k)
        if fk >= 0.45 * rate:
            break
        amp = (velocity * abs(math.sin(math.pi * k / 7.5)) / k ** 1.1
               * (0.5 + 0.4 * velocity) ** (k - 1))
        tau = ring / k
        m = min(remaining, hold, audible(amp, tau, rate))
        mix(buf, start, partial(fk, complex(0.0, amp), tau, m, rate), length=m)
        if m == hold < remaining:  # released while still sounding: continues, damped
            damped = 0.08
            following = complex(0.0, amp) * rotation(fk, tau, rate) ** m
            tail = min(remaining - m, audible(abs(following), damped, rate))
            mix(buf, start + m, partial(fk, following, damped, tail, rate), length=tail)


def piano(rng, n, rate):
    beat = 60.0 / rng.uniform(60.0, 130.0) * rate
    root = rng.randint(48, 62)
    scale = rng.choice([MAJOR, MINOR])
    ring_scale = rng.uniform(0.4, 1.0)
    stretch = rng.uniform(1e-4, 5e-4)
    pedal = rng.uniform(0.5, 2.0) * beat if rng.random() < 0.3 else 0.0  # notes ring on
    buf = [0j] * n
    t, degree = rng.uniform(0.0, 0.5) * beat, rng.randint(5, 10)
    while t < n:
        length = rng.choice([0.5, 0.5, 1.0, 1.0, 1.0, 2.0]) * beat
        if rng.random() < 0.9:  # else a rest
            midi = scale_note(root, scale, degree)
            ring = ring_scale * rng.uniform(0.8, 1.5) * (261.6 / hz(midi)) ** 0.4
            piano_note(buf, t, rate, midi, rng.uniform(0.4, 1.0), length + pedal, ring, stretch)
        degree = max(0, min(14, degree + rng.choice([-3, -2, -1, -1, 0, 1, 1, 2, 3])))
        t += length
    if rng.random() < 0.7:  # a left hand: a chord every bar or half bar
        every = rng.choice([2, 4]) * beat
        t = 0.0
        while t < n:
            degree = rng.choice([0, 3, 4, 5])
            for d in rng.choice([(0, 4), (0, 2, 4), (0, 4, 7)]):
                midi = scale_note(root - 12, scale, degree + d)
                ring = ring_scale * rng.uniform(0.8, 1.5) * (261.6 / hz(midi)) ** 0.4
                piano_note(buf, t, rate, midi, rng.uniform(0.2, 0.5), every + pedal, ring, stretch)
            t += every
    out = imaginary(buf)
    if rng.random() < 0.15:  # a string pad underneath
        mix(out, 0, pad(rng, n, rate, root - 12, (0, 7, 12), rng.uniform(0.1, 0.3)))
    return out


def bells(rng, n, rate):
    """A ring of 3-5 bells tuned to a pentatonic scale, struck one at a time; each bell's sound
    is synthesised at its first strike and reused."""
    voice = bell_voice(rng)
    root = rng.randint(60, 76)
    ring = rng.sample([root + p + o for o in (-12, 0, 12) for p in PENTATONIC], rng.randint(3, 5))
    sounds = {}
    out = [0.0] * n

    def strike(t, note, gain):
        if t < n:
            if note not in sounds:  # later strikes need no more than the rest of the track
                sounds[note] = bell_sound(rate, hz(note), voice, n - int(t))
            mix(out, t, sounds[note], gain)

    t = rng.uniform(0.0, 0.5) * rate
    gap = rng.uniform(0.6, 2.0)
    while t < n:
        strike(t, rng.choice(ring), rng.uniform(0.5, 1.0))
        if rng.random() < 0.25:  # a quick second strike
            strike(t + rng.uniform(0.1, 0.25) * rate, rng.choice(ring), rng.uniform(0.3, 0.7))
        t += gap * rng.uniform(0.7, 1.5) * rate
    if rng.random() < 0.2:  # a drone bed
        mix(out, 0, pad(rng, n, rate, root - 24, (0, 7, 12), rng.uniform(0.2, 0.5)))
    return out


def noise_rock(rng, n, rate):
    beat = 60.0 / rng.uniform(90.0, 170.0) * rate
    root = rng.randint(40, 52)
    drive = rng.uniform(0.3, 3.0)  # on six saws: from crunch to a square-ish fuzz
    spread = rng.uniform(5.0, 20.0)  # cents between the doubled guitars
    palm = rng.uniform(0.06, 0.3) if rng.random() < 0.6 else 2.0  # palm-muted or ringing
    hit = max(1, int(beat / 2))  # strummed in 8ths
    strum = list(decay(hit, palm, rate))
    guitar = [0.0] * n
    t = 0
    while t < n:
        length = min(n - t, int(rng.choice([1, 1, 2, 2, 4]) * beat))
        chord_root = root + rng.choice([0, 0, 3, 5, 7, 10, -2])
        voices = [0.0] * length
        for interval in (0, 7, 12):
            f = hz(chord_root + interval)
            table = table_for("saw", f, rate, cap=32)
            for cents in (-spread / 2, spread / 2):
                mix(voices, 0, osc(table, detuned(f, cents), length, rate, rng.random()))
        mix(guitar, t, map(mul, voices, strum * (length // hit + 1)), length=length)
        t += length
    out = list(map(math.tanh, map(drive.__mul__, guitar)))  # overdrive: a soft clipper
    snare_n = int(0.25 * rate)
    snare = times(noise(rng, snare_n), decay(snare_n, rng.uniform(0.06, 0.15), rate))
    the_kick = kick(rng, rate) if rng.random() < 0.6 else None
    b = 0
    while b * beat < n:
        if b % 2 == 1:
            mix(out, b * beat, snare, rng.uniform(0.4, 0.8))
        elif the_kick:
            mix(out, b * beat, the_kick, rng.uniform(0.6, 1.0))
        b += 1
    for _ in range(rng.randint(0, 3)):  # feedback-like noise bursts
        length = int(rng.uniform(0.2, 0.8) * rate)
        burst = noise(rng, length)
        if rng.random() < 0.5:
            burst = brighter(burst)
        mix(out, rng.uniform(0.0, n), fade(burst, length // 4, length // 4), rng.uniform(0.2, 0.6))
    return out


SYNTHS = {"drone": drone, "techno": techno, "chiptune": chiptune, "piano": piano,
          "bells": bells, "noise_rock": noise_rock}


# ---- the corpus

def plan(args):
    width = max(3, len(str(max(args.train, args.val, args.test) - 1)))
    tracks = []
    for split in SPLITS:
        for genre in GENRES:
            for i in range(getattr(args, split)):
                name = f"{split}_{genre}_{i:0{width}d}.wav"
                tracks.append({"split": split, "genre": genre,
                               "path": f"wav/{split}/{genre}/{name}",
                               "seed": f"genre-demo-{args.seed}-{split}-{genre}-{i}",
                               "seconds": args.seconds, "rate": args.rate})
    return tracks


def render(track, out_dir):
    """Synthesises one track, sets its level and noise floor, writes it. Returns its RMS in dBFS."""
    rng = random.Random(track["seed"])  # a str seed is hashed with SHA-512: stable everywhere
    rate = track["rate"]
    n = max(1, round(track["seconds"] * rate))
    signal = SYNTHS[track["genre"]](rng, n, rate)
    peak = max(map(abs, signal)) or 1.0
    signal = scaled(signal, 10.0 ** (rng.uniform(-20.0, -6.0) / 20.0) / peak)
    rms = math.sqrt(sum(map(mul, signal, signal)) / n)
    noise_rms = rms * 10.0 ** (-rng.uniform(30.0, 45.0) / 20.0)
    mix(signal, 0, noise(rng, n), noise_rms * math.sqrt(3.0))  # uniform noise has RMS 1/sqrt(3)
    fade(signal, int(0.005 * rate), int(0.005 * rate))
    # The peak is at most -6 dBFS and the noise's at least 30 dB below the RMS: nothing clips.
    out = array.array("h", map(round, map((32767.0).__mul__, signal)))
    if sys.byteorder != "little":
        out.byteswap()
    with wave.open(os.path.join(out_dir, track["path"]), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(out.tobytes())
    return 20.0 * math.log10(max(rms, 1e-12))


def render_into(job):
    return render(*job)


def settings_text(args):
    return (f"settings: format {FORMAT_VERSION}, seed {args.seed}, train {args.train}, "
            f"val {args.val}, test {args.test}, seconds {args.seconds:.17g}, rate {args.rate}")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train", type=int, default=24, help="training tracks per genre")
    parser.add_argument("--val", type=int, default=6, help="validation tracks per genre")
    parser.add_argument("--test", type=int, default=6, help="test tracks per genre")
    parser.add_argument("--seconds", type=float, default=6.0, help="length of every track")
    parser.add_argument("--rate", type=int, default=16000, help="sample rate in Hz")
    parser.add_argument("--jobs", type=int, default=2, help="processes rendering tracks")
    args = parser.parse_args()
    for name in ("train", "val", "test", "jobs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, not {getattr(args, name)}")
    if not (args.seconds > 0.0 and math.isfinite(args.seconds)):
        parser.error(f"--seconds must be a positive number of seconds, not {args.seconds:g}")
    if not 8000 <= args.rate <= 192000:
        parser.error(f"--rate must be between 8000 and 192000 Hz, not {args.rate}")
    if args.seconds * args.rate > MAX_SAMPLES:
        parser.error(f"--seconds must be at most {MAX_SAMPLES / args.rate:g} at --rate {args.rate} "
                     f"(tracks are built in memory), not {args.seconds:g}")
    return args


def main():
    args = parse_args()
    settings = settings_text(args)
    about_path = os.path.join(args.out, "about.txt")
    if os.path.exists(about_path):
        with open(about_path) as f:
            if f.readline().strip() == settings:
                print(f"make_genre_demo: {args.out} already holds this corpus ({settings})")
                return

    start = time.time()
    tracks = plan(args)
    for split in SPLITS:
        shutil.rmtree(os.path.join(args.out, "wav", split), ignore_errors=True)  # no stale tracks
        for genre in GENRES:
            os.makedirs(os.path.join(args.out, "wav", split, genre))
    if os.path.exists(about_path):
        os.remove(about_path)
    # imap keeps the plan's order, so nothing depends on the scheduling.
    with multiprocessing.Pool(args.jobs) as pool:
        levels = list(pool.imap(render_into, [(t, args.out) for t in tracks], chunksize=2))

    for split in SPLITS:
        with open(os.path.join(args.out, f"{split}.tsv"), "w") as tsv:
            for track in tracks:
                if track["split"] == split:
                    tsv.write(f"{track['path']}\t{track['genre']}\n")

    lines = [settings,
             "",
             "A synthetic music-genre corpus made by tools/make_genre_demo.py: mono 16-bit WAV,",
             f"{args.seconds:g} s per track at {args.rate} Hz, peak level -20..-6 dBFS, "
             "white noise 30-45 dB below the music.",
             f"Genres ({len(GENRES)}): {' '.join(GENRES)}",
             "Manifests: {train,val,test}.tsv (path<TAB>genre); wav/<split>/ is a folder per",
             "genre."]
    for split in SPLITS:
        count = getattr(args, split)
        lines.append(f"{split}: {count * len(GENRES)} tracks ({count} per genre), "
                     f"{count * len(GENRES) * args.seconds / 60:.1f} min")
    for genre in GENRES:
        values = [lv for lv, t in zip(levels, tracks) if t["genre"] == genre]
        lines.append(f"{genre}: RMS {min(values):.1f}..{max(values):.1f} dBFS")
    with open(about_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    elapsed = time.time() - start
    print(f"make_genre_demo: wrote {len(tracks)} tracks to {args.out} in {elapsed:.1f} s")


if __name__ == "__main__":
    main()
