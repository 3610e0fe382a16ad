#!/usr/bin/env python3
"""Writes a small synthetic music-genre corpus for the classification demo (VGG19_BN on dB mel
spectrogram images of fixed-length slices, the CCMusic setting): 16 genres synthesised from
seeded random parameters, differing in tempo, instruments, rhythm and key, as mono 16-bit WAV
at 22050 Hz (the trainer resamples), split into train/val/test with manifests in the
tab-separated format of data/manifest/class_manifest.h:

  DIR/{train,val,test}.tsv     wav/<split>/<genre>/<file>.wav<TAB><genre>
  DIR/about.txt                the settings, the genres, the counts
  DIR/wav/<split>/<genre>/<split>_<genre>_NNN.wav

Paths in the manifests are relative to DIR; DIR/wav/<split> is also a folder-per-class tree
(GTZAN, torchvision's ImageFolder). Counts are tracks per genre.

  drone          sustained low chords of detuned pairs (slow beating), slow swells
  techno         kick on every beat at 120-135 bpm, off-beat noise hi-hats, plucked bass
  chiptune       fast square/pulse-wave arpeggios over a triangle bass
  piano          harmonic notes with exponential decay, a melody in a key, chords below
  bells          inharmonic partials with long decays, sparse strikes
  noise_rock     distorted sawtooth power chords, noise bursts
  reggae         one drop at 70-90 bpm (kick and rim shot on beat 3 only), off-beat skank
                 chords (muted plucked strings or keys), a deep bass riff
  waltz          3/4 at 100-180 bpm: oom-pah-pah (bass on 1, short chords on 2 and 3) under a
                 sustained melody with vibrato (strings, flute or music box)
  drum_and_bass  breakbeat at 165-178 bpm (kick on 1 and the and of 2, snare on 2 and 4, ghost
                 notes, busy hats) over long sub-bass sine notes
  blues_shuffle  swung 8ths at 80-130 bpm through a 12-bar form: boogie bass, plucked
                 (Karplus-Strong) dyads alternating fifth and sixth, blues-scale licks
  organ_chorale  slow four-voice chords (40-72 bpm) with voice leading on an additive drawbar
                 organ, tremulant, a church's reverb
  synth_arp      saw arpeggios in 16ths or triplets at 100-140 bpm through a resonant lowpass
                 whose cutoff sweeps, a saw bass, a delay
  folk_flute     breathy flute (sine-like with vibrato, breath noise, grace notes) playing a
                 jig, reel or air over a bagpipe-like tonic-and-fifth drone
  metal          double kick in 16ths at 140-200 bpm, palm-muted low power chords through heavy
                 distortion, open chords as accents, snare on 2 and 4 or blast beats, crashes
  jazz           swing at 110-220 bpm: walking bass, the ride's ding ding-da-ding, hi-hat on 2
                 and 4, sparse comping chords (piano or electric piano)
  ambient_pad    slow detuned pads of extended chords with long attacks and releases, echoing
                 high glints, a long reverb-like tail

Every track draws its tempo, key, timbre, loudness (-20..-6 dBFS peak) and noise floor from its
own generator, seeded by (seed, split, genre, index), so no two tracks, and no two splits,
share material. Some tracks borrow an element of another genre (a pad under the techno or the
drum and bass, a kick under the noise rock or the synth arpeggios, a drone under the bells,
piano chords in the waltz, an organ in the blues, a flute over the jazz, a bell in the organ
chorale or the ambient pad) so that the classes overlap a little.

Usage: tools/demo/make_genre_demo.py --out DIR [--seed 1] [--train 16] [--val 4] [--test 4]
                                [--seconds 6] [--rate 22050] [--jobs 2]

The defaults (384 tracks, 38 min of audio) take about a minute on two cores.

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
from itertools import accumulate, chain, islice, repeat
from operator import add, attrgetter, mul, sub

# Bump when the rendering changes, so that an old corpus is not taken for a current one.
FORMAT_VERSION = 2
SPLITS = ("train", "val", "test")
MAX_SAMPLES = 4_000_000  # per track: 181 s at 22050 Hz, some hundreds of MB of Python floats
GENRES = ("drone", "techno", "chiptune", "piano", "bells", "noise_rock", "reggae", "waltz",
          "drum_and_bass", "blues_shuffle", "organ_chorale", "synth_arp", "folk_flute", "metal",
          "jazz", "ambient_pad")

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
MIXOLYDIAN = (0, 2, 4, 5, 7, 9, 10)
DORIAN = (0, 2, 3, 5, 7, 9, 10)
BLUES = (0, 3, 5, 6, 7, 10)
# Decaying partials stop at this amplitude, -36 dB below a full-scale partial (the loudest of
# a note has amplitude 1 or less): near the noise floor added to every track.
FLOOR = 0.015


# ---- signal building blocks. Tracks are lists of floats; the per-sample loops run inside
# itertools/operator (C), chained as iterators so few intermediate lists are built.

@functools.lru_cache(maxsize=None)
def harmonic(k):
    """One period of harmonic k: SINE[k * j mod SIZE], without a Python loop."""
    return list(map(SINE.__getitem__, map(MASK.__and__, range(0, k * SIZE, k))))


def build_table(amps):
    """One period with harmonic k at amplitude amps[k - 1] (zeros cost nothing), peak 1."""
    table = [0.0] * SIZE
    for k, a in enumerate(amps, 1):
        if a:
            table = list(map(add, table, map(float(a).__mul__, harmonic(k))))
    peak = max(map(abs, table)) or 1.0
    return [v / peak for v in table]


@functools.lru_cache(maxsize=None)
def harmonic_table(shape, harmonics):
    """One period of `shape` with its first `harmonics` harmonics, peak 1."""
    return build_table([SHAPES[shape](k) for k in range(1, harmonics + 1)])


def harmonic_step(allowed):
    """The largest of HARMONIC_STEPS not above `allowed` (at least 1)."""
    return max([s for s in HARMONIC_STEPS if s <= allowed], default=1)


# A resonant lowpass is swept by choosing, note by note, a table whose harmonics have been
# through it; cutoffs are rounded to quarter octaves so that a process builds a few hundred.
@functools.lru_cache(maxsize=512)
def resonant_table(harmonics, cutoff_step, q):
    """A saw's first `harmonics` harmonics through a two-pole lowpass with resonance q whose
    cutoff is harmonic 2 ** (cutoff_step / 4), peak 1."""
    kc = 2.0 ** (cutoff_step / 4.0)
    return build_table([1.0 / k / math.sqrt((1.0 - (k / kc) ** 2) ** 2 + (k / kc / q) ** 2)
                        for k in range(1, harmonics + 1)])


# Organ stops as harmonics of the 16' pitch: 16', 8', 5 1/3', 4', 2 2/3', 2', 1 3/5', 1 1/3', 1'.
DRAWBAR_HARMONICS = (1, 2, 3, 4, 6, 8, 10, 12, 16)
ORGAN_PRESETS = ((0, 8, 0, 6, 0, 4, 0, 0, 3),  # principal chorus
                 (6, 8, 0, 5, 0, 0, 0, 0, 0),  # flutes 16' 8' 4'
                 (6, 8, 6, 8, 4, 6, 3, 3, 5),  # full organ
                 (0, 8, 7, 0, 6, 0, 4, 0, 0),  # odd harmonics: reedy
                 (4, 8, 3, 6, 2, 5, 0, 2, 6))  # bright mixture


@functools.lru_cache(maxsize=256)
def organ_table(drawbars, harmonics):
    """One period at the 16' pitch of the stops `drawbars` (0..8, 3 dB a step), keeping the
    first `harmonics` harmonics, peak 1."""
    amps = [0.0] * harmonics
    for h, level in zip(DRAWBAR_HARMONICS, drawbars):
        if h <= harmonics and level:
            amps[h - 1] = 10.0 ** (3.0 * (level - 8) / 20.0)
    return build_table(amps)


@functools.lru_cache(maxsize=64)
def flute_table(second, third):
    """A flute: nearly a sine, with weak second and third harmonics (amplitudes in hundredths)."""
    return build_table([1.0, second / 100.0, third / 100.0])


def table_for(shape, freq, rate, cap=48):
    """The table of `shape` with as many harmonics as stay below 0.45 `rate` at `freq`."""
    return harmonic_table(shape, harmonic_step(min(cap, int(0.45 * rate / freq))))


def osc(table, freq, n, rate, phase=0.0):
    """n samples of `table` played at `freq` Hz from `phase` (in periods), as an iterator."""
    if n <= 0:
        return iter(())
    steps = accumulate(repeat(freq * SIZE / rate, n - 1), initial=phase * SIZE)
    return map(table.__getitem__, map(MASK.__and__, map(int, steps)))


def sustained(table, freq, n, rate, phase=0.0):
    """osc() as a list, for a long held note at a fraction of the cost: one block of a whole
    number of periods about a second long, repeated. Rounding the block to whole samples moves
    the pitch by at most half a sample a second, under 0.05 cent."""
    periods = max(1, round(freq))
    block = max(1, round(periods * rate / freq))
    if n <= block:
        return list(osc(table, freq, n, rate, phase))
    one = list(osc(table, periods * rate / block, block, rate, phase))
    return (one * (n // block + 1))[:n]


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
    """White noise, uniform in -1..1 in 16-bit steps, from one draw of 16 n random bits (a
    call of the generator per sample would cost more than everything done with the noise)."""
    if n <= 0:
        return []
    samples = array.array("h", rng.getrandbits(16 * n).to_bytes(2 * n, "little"))
    if sys.byteorder != "little":
        samples.byteswap()
    return list(map((1.0 / 32768.0).__mul__, samples))


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

def kick(rng, rate, length=(0.25, 0.4), body=(0.08, 0.2), click=(0.1, 0.4)):
    """A sine whose pitch falls fast from 110-200 Hz to 42-60 Hz, with a click. length and body
    (its decay time) are ranges in seconds, click one of amplitudes: the defaults make a dance
    kick; a metal kick is shorter, with more click."""
    n = int(rng.uniform(*length) * rate)
    f_hi, f_lo = rng.uniform(110.0, 200.0), rng.uniform(42.0, 60.0)
    sweep = decay(n, rng.uniform(0.02, 0.05), rate, f_hi - f_lo)
    out = times(osc_glide(SINE, [f_lo + s for s in sweep], rate),
                decay(n, rng.uniform(*body), rate))
    click_n = int(0.004 * rate)
    mix(out, 0, times(noise(rng, click_n), decay(click_n, 0.001, rate)), rng.uniform(*click))
    return fade(out, int(0.001 * rate), int(0.01 * rate))


def hat(rng, rate, length_s, tau_s):
    n = int(length_s * rate)
    return fade(times(brighter(brighter(noise(rng, n))), decay(n, tau_s, rate)), 0, n // 4)


def beating_tone(rng, table, freq, n, rate, shape=None):
    """A sustained tone that beats and swells. A detuned pair of equal tones is one tone whose
    amplitude follows |cos(pi * beat * t)|; that envelope, times a slow swell (and times
    `shape`, a list from grid(n, rate, ...), if given), is computed every millisecond or so,
    which costs one oscillator per tone instead of two."""
    beat = rng.uniform(0.15, 1.5)  # Hz between the two tones of the pair
    beat_depth = rng.uniform(0.4, 1.0)
    swell_hz, swell_depth = rng.uniform(0.05, 0.4), rng.uniform(0.2, 0.7)
    beat_phase, swell_phase = rng.uniform(0.0, math.pi), rng.uniform(0.0, 2.0 * math.pi)
    hop = max(1, rate // 1000)
    envelope = [(1.0 - beat_depth + beat_depth * abs(math.cos(math.pi * beat * t + beat_phase)))
                * (1.0 + swell_depth * math.sin(2.0 * math.pi * swell_hz * t + swell_phase))
                for t in (j * hop / rate for j in range(n // hop + 1))]
    if shape:
        envelope = list(map(mul, envelope, shape))
    return map(mul, sustained(table, freq, n, rate, rng.random()), held(envelope, hop, n))


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


def smooth(x, width):
    """The mean of the last `width` samples of x at each sample (a box filter: a gentle
    lowpass with its first null at rate / width), from a running sum."""
    if width <= 1:
        return list(x)
    sums = list(accumulate(x, initial=0.0))
    inv = 1.0 / width
    head = islice(sums, 1, width)  # fewer than `width` samples so far
    return list(map(inv.__mul__, chain(head, map(sub, islice(sums, width, None), sums))))


def upsample(points, hop, n):
    """n samples through `points`, one every `hop` samples, joined by straight lines (then
    towards 0 after the last), built a phase at a time by strided slice assignment."""
    steps = list(map(sub, points[1:] + [0.0], points))
    out = [0.0] * (len(points) * hop)
    for j in range(hop):
        out[j::hop] = list(map(add, points, map((j / hop).__mul__, steps)))
    return out[:n] + [0.0] * (n - len(out))


def slow_noise(rng, n, hop):
    """Noise that wanders: random points every `hop` samples joined by straight lines (most of
    its power below rate / hop), scaled to an RMS near 1 (a line between two independent
    uniform values has, on average, 2/3 of their variance, 1/3)."""
    return upsample(scaled(noise(rng, n // hop + 2), 3.0 / math.sqrt(2.0)), hop, n)


def tone(table, freq, length, rate, tau_s, attack_s=0.002, release_s=0.01, phase=0.0):
    """A note of `table` decaying from its start with time constant tau_s (a large one holds
    it), with short ramps at both ends."""
    length = max(0, int(length))
    out = times(osc(table, freq, length, rate, phase), decay(length, tau_s, rate))
    return fade(out, int(attack_s * rate), int(release_s * rate))


def pluck(rng, freq, n, rate, tau_s, darkness=1):
    """n samples of a plucked string (Karplus-Strong): a period of noise, smoothed `darkness`
    samples wide, circulating through a weighted average of two neighbouring samples that
    loses exp(-period / tau) per period, so the higher harmonics die sooner, as on a string.
    The weights make up the fraction of a sample in the period (a linear-interpolation delay),
    which keeps the pitch within a few cents where a rounded period would be tens of cents
    off above 500 Hz. Computed a period at a time."""
    n = max(0, int(n))
    delay = max(2.0, rate / freq)
    period = int(delay)
    g = math.exp(-delay / (tau_s * rate))
    late = delay - period  # the weight of the older sample
    near, far = g * (1.0 - late), g * late
    out = [0.0] + smooth(noise(rng, period), darkness)  # out[0] stands for y[-1] = 0
    while len(out) <= n:
        s = len(out)
        out += map(add, map(near.__mul__, out[s - period:s]),
                   map(far.__mul__, out[s - period - 1:s - 1]))
    return fade(out[1:n + 1], 0, min(n // 4, int(0.005 * rate)))


def snare(rng, rate, pitch=(160.0, 260.0), rattle_tau=(0.04, 0.12)):
    """A drum head (a decaying sine at `pitch` Hz) and the rattle of the snares (bright noise)."""
    n = int(rng.uniform(0.15, 0.3) * rate)
    out = times(brighter(noise(rng, n)), decay(n, rng.uniform(*rattle_tau), rate))
    head = partial(rng.uniform(*pitch), complex(0.0, rng.uniform(0.4, 1.0)),
                   rng.uniform(0.02, 0.06), n, rate)
    mix(out, 0, imaginary(head))
    return fade(out, int(0.0005 * rate), n // 4)


def cymbal(rng, rate, length_s, tau_s, ping=0.3):
    """A ride or crash: doubly brightened noise that rings for tau_s, and a few inharmonic
    partials between 2.5 and 7 kHz (the ping of a ride), `ping` loud."""
    n = int(length_s * rate)
    # Twice brightened uniform noise has an RMS near 1.4: 0.3 of it is as loud as a ping.
    out = times(brighter(brighter(noise(rng, n))), decay(n, tau_s, rate, 0.3))
    buf = [0j] * n
    for _ in range(rng.randint(3, 6)):
        f = rng.uniform(2500.0, 7000.0)
        if f < 0.45 * rate:
            m = min(n, audible(ping, tau_s * 1.5, rate))
            amp = complex(0.0, ping * rng.uniform(0.3, 1.0))
            mix(buf, 0, partial(f, amp, tau_s * 1.5, m, rate), length=m)
    mix(out, 0, imaginary(buf))
    return fade(out, 0, n // 4)


def grid(n, rate, value):
    """value(t) for t in seconds every millisecond or so (every rate // 1000 samples), over n
    samples."""
    hop = max(1, rate // 1000)
    return [value(j * hop / rate) for j in range(n // hop + 1)]


def curve(n, rate, value):
    """value(t) for t in seconds, computed every millisecond or so and held: n samples."""
    return held(grid(n, rate, value), max(1, rate // 1000), n)


def vibrato(rng, table, freq, n, rate, depth_cents, speed_hz, onset_s=0.2):
    """n samples of `table` around `freq` with a vibrato that grows over onset_s, as an
    iterator."""
    phase = rng.uniform(0.0, 2.0 * math.pi)
    depth = depth_cents / 1200.0
    freqs = curve(n, rate, lambda t: freq * 2.0 ** (
        depth * min(1.0, t / onset_s) * math.sin(2.0 * math.pi * speed_hz * t + phase)))
    return osc_glide(table, freqs, rate)


def echo(x, delay, feedback, repeats):
    """Adds `repeats` copies of x, each `delay` samples after the last and `feedback` times as
    loud (a tape delay), in place."""
    dry = list(x)
    for k in range(1, repeats + 1):
        mix(x, k * delay, dry, feedback ** k)
    return x


def reverb(rng, x, rate, length_s, wet, stages=5):
    """Adds a reverb-like tail in place: x through `stages` delays in series, each adding a
    copy of what it gets at an irregular delay, so 2 ** stages - 1 copies at the sums of those
    delays, their gains falling by 60 dB over length_s and their signs mixed (a sparse, cheap
    stand-in for a room; on sustained sounds the copies blur into a tail). The tail is dark:
    it is computed at a quarter of the rate (sums of four samples), where a pass over the
    track costs a quarter as much, and brought back up by linear interpolation."""
    m = len(x) // 4
    if m < 2:
        return x
    end = 4 * m
    slow = list(map(add, map(add, x[0:end:4], x[1:end:4]), map(add, x[2:end:4], x[3:end:4])))
    tail = list(slow)
    for k in range(stages):
        d = length_s * rng.uniform(0.6, 1.4) * 2.0 ** (k - stages)  # about 1/32 .. 1/2 of it
        mix(tail, d * rate / 4, list(tail), 10.0 ** (-3.0 * d / length_s) * rng.choice((-1.0, 1.0)))
    mix(x, 0, upsample(list(map(sub, tail, slow)), 4, len(x)), 0.25 * wet)
    return x


def organ_note(drawbars, midi, length, rate, attack_s=0.015, release_s=0.05):
    """A held organ note of the stops `drawbars`: no decay, quick ends."""
    f16 = hz(midi) / 2.0  # the table is at the 16' pitch
    table = organ_table(drawbars, min(16, int(0.45 * rate / f16)))
    out = sustained(table, f16, max(0, int(length)), rate)
    return fade(out, int(attack_s * rate), int(release_s * rate))


def flute(rng, n, rate, root, scale, unit, rhythm, low=2, high=10):
    """A breathy flute melody in `scale` from MIDI `root`, notes of `rhythm` units (samples)
    each, stepping between scale degrees `low` and `high`: a nearly sine tone with vibrato,
    noise around each harmonic (the breath in the tone) and high breath noise that follows the
    notes; now and then a grace note a step or two above (a cut). n samples."""
    table = flute_table(rng.randint(10, 40), rng.randint(3, 15))
    depth, speed = rng.uniform(8.0, 25.0), rng.uniform(4.5, 6.0)
    breath = rng.uniform(0.04, 0.15)
    legato = rng.uniform(0.85, 1.0)
    notes, envelope = [0.0] * n, [0.0] * n
    degree = rng.randint(low, high)
    t = rng.uniform(0.0, 0.5) * unit
    while t < n:
        length = int(rng.choice(rhythm) * unit)
        if rng.random() < 0.92:  # else a breath
            f = hz(scale_note(root, scale, degree))
            m = int(length * legato)
            env = fade(list(decay(m, rng.uniform(1.0, 4.0), rate)),
                       int(rng.uniform(0.02, 0.06) * rate), int(0.03 * rate))
            mix(notes, t, times(vibrato(rng, table, f, m, rate, depth, speed), env))
            mix(envelope, t, env)
            if m > 0.15 * rate and rng.random() < 0.2:
                g = hz(scale_note(root, scale, degree + rng.choice([1, 2])))
                cut = int(0.03 * rate)
                mix(notes, t - cut, fade(list(osc(table, g, cut, rate)), cut // 3, cut // 3), 0.8)
        degree = max(low, min(high, degree + rng.choice([-2, -1, -1, 0, 1, 1, 2, 3, -3])))
        t += length
    air = noise(rng, n)
    hiss = map(sub, air, chain((0.0, 0.0), air))  # x[i] - x[i-2]: a broad band around rate / 4
    mix(notes, 0, times(notes, slow_noise(rng, n, max(1, rate // 300))), 1.5 * breath)
    mix(notes, 0, times(envelope, hiss), 0.5 * breath)
    return notes


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


def reggae(rng, n, rate):
    """One drop at 70-90 bpm: kick and rim shot together on beat 3 only, short skank chords off
    the beat, hi-hats in lightly swung 8ths, a deep round bass riff repeated every bar."""
    beat = 60.0 / rng.uniform(70.0, 90.0) * rate
    offset = -rng.uniform(0.0, 4.0) * beat  # the track starts anywhere in a bar
    root = rng.randint(55, 65)
    scale = rng.choice([MAJOR, MINOR])
    progression = rng.choice([(0, 3), (0, 4), (0, 3, 4, 3), (0, 5, 3, 4), (5, 4), (0, 0, 3, 4)])
    per_chord = rng.choice([2, 4])  # beats
    swing = rng.uniform(0.5, 0.6)
    double = rng.random() < 0.4  # a skank on every off-beat 8th, else on beats 2 and 4
    guitar = rng.random() < 0.65  # else a keyboard
    skank_n = int(rng.uniform(0.08, 0.16) * rate)
    skank_tau = rng.uniform(0.03, 0.08)
    keys_shape = rng.choice(["square", "saw", "pulse25"])
    skanks = {}

    def skank(degree):
        if degree not in skanks:
            chord = [0.0] * skank_n
            for i, d in enumerate((0, 2, 4)):
                f = hz(scale_note(root, scale, degree + d))
                if guitar:  # muted strings, strummed down in a few ms
                    note = brighter(pluck(rng, f, skank_n, rate, skank_tau * 3.0, 1))
                    mix(chord, i * int(0.004 * rate), note)
                else:
                    mix(chord, 0, tone(table_for(keys_shape, f, rate, 16), f, skank_n, rate,
                                       skank_tau))
            skanks[degree] = fade(chord, 0, skank_n // 3)
        return skanks[degree]

    the_kick = kick(rng, rate, body=(0.1, 0.25))
    rim = snare(rng, rate, pitch=(400.0, 700.0), rattle_tau=(0.005, 0.015))
    hats = [hat(rng, rate, rng.uniform(0.03, 0.08), rng.uniform(0.008, 0.02)) for _ in range(2)]
    open_hat = hat(rng, rate, 0.3, rng.uniform(0.08, 0.15)) if rng.random() < 0.5 else None
    bass_shape = rng.choice(["soft", "soft", "triangle"])
    bass_tau = rng.uniform(0.4, 1.2)
    riff, slot = [], 0  # (8th of the bar, scale degree above the chord, length in 8ths)
    while slot < 8:
        length = rng.choice([1, 1, 2, 2, 3])
        if rng.random() < 0.7 and not (slot == 0 and rng.random() < 0.5):  # beat 1 often rests
            riff.append((slot, rng.choice([0, 0, 0, 2, 4, 4, 7, 5, -1]), length))
        slot += length
    gains = [rng.uniform(0.6, 0.9), rng.uniform(0.8, 1.0), rng.uniform(0.15, 0.3),
             rng.uniform(0.25, 0.5), rng.uniform(0.4, 0.7)]  # kick, rim, hats, skank, bass
    out, skank_track = [0.0] * n, [0.0] * n
    b = -4
    while offset + b * beat < n:
        t = offset + b * beat
        pos = b % 4
        degree = progression[(b // per_chord) % len(progression)]
        if pos == 2:  # the one drop
            mix(out, t, the_kick, gains[0])
            mix(out, t, rim, gains[1])
        mix(out, t, hats[0], gains[2])
        if open_hat and pos == 3:
            mix(out, t + swing * beat, open_hat, gains[2])
        else:
            mix(out, t + swing * beat, hats[1], gains[2] * 0.7)
        if double:
            mix(skank_track, t + swing * beat, skank(degree), gains[3])
        elif pos % 2 == 1:
            mix(skank_track, t, skank(degree), gains[3])
        if pos == 0:
            for start, step, length in riff:
                f = hz(scale_note(root - 24, scale, degree + step))
                when = t + (start // 2) * beat + (start % 2) * swing * beat
                note = tone(table_for(bass_shape, f, rate, 4), f, length * beat * 0.45, rate,
                            bass_tau, 0.005, 0.02)
                mix(out, when, note, gains[4])
        b += 1
    if rng.random() < 0.35:  # dub: the skanks echo
        echo(skank_track, int(rng.choice([0.75, 1.5]) * beat), rng.uniform(0.3, 0.5), 4)
    mix(out, 0, skank_track)
    if rng.random() < 0.2:  # an organ pad, as in the drone
        mix(out, 0, pad(rng, n, rate, root, (0, 4, 7) if scale == MAJOR else (0, 3, 7),
                        rng.uniform(0.1, 0.2)))
    return out


def waltz(rng, n, rate):
    """3/4 at 100-180 bpm: oom-pah-pah (a low bass note on beat 1, short chords on 2 and 3)
    under a sustained melody with vibrato (strings or flute), mostly in a major key."""
    beat = 60.0 / rng.uniform(100.0, 180.0) * rate
    offset = -rng.uniform(0.0, 3.0) * beat
    root = rng.randint(55, 65)
    scale = MAJOR if rng.random() < 0.75 else MINOR
    progression = rng.choice([(0, 0, 4, 4), (0, 3, 4, 0), (0, 4, 4, 0), (0, 5, 3, 4), (0, 1, 4, 4)])
    bar0 = rng.randrange(len(progression))
    bass_shape = rng.choice(["soft", "triangle", "saw"])
    bass_tau = rng.uniform(0.2, 0.5)
    pah_shape = rng.choice(["soft", "square", "triangle", "saw"])
    pah_n = rng.uniform(0.25, 0.5) * beat
    pah_piano = rng.random() < 0.25  # the chords from the piano genre
    stretch = rng.uniform(1e-4, 5e-4)
    melody = rng.choice(["strings", "strings", "flute", "music_box"])
    flute_lead = flute_table(rng.randint(10, 30), rng.randint(3, 10))
    depth, speed = rng.uniform(10.0, 30.0), rng.uniform(4.5, 6.5)
    voice = bell_voice(rng) if melody == "music_box" else None
    gains = rng.uniform(0.6, 0.9), rng.uniform(0.25, 0.45), rng.uniform(0.4, 0.7)
    out = [0.0] * n
    buf = [0j] * n if pah_piano else None
    music_box = {}
    degree = rng.randint(2, 7)
    bar = -1
    while offset + 3 * bar * beat < n:
        t = offset + 3 * bar * beat
        chord_degree = progression[(bar + bar0) % len(progression)]
        bass_degree = chord_degree + (4 if bar % 2 else 0)  # root and fifth in turn
        f = hz(scale_note(root - 24, scale, bass_degree))
        mix(out, t, tone(table_for(bass_shape, f, rate, 8), f, 0.9 * beat, rate, bass_tau,
                         0.005, 0.03), gains[0])
        for pah in (1, 2):
            for d in (2, 4, 7):
                midi = scale_note(root - 12, scale, chord_degree + d)
                if pah_piano:
                    piano_note(buf, t + pah * beat, rate, midi, 0.5, pah_n, 0.6, stretch)
                else:
                    f = hz(midi)
                    mix(out, t + pah * beat, tone(table_for(pah_shape, f, rate, 12), f, pah_n,
                                                  rate, 0.15, 0.004, 0.02), gains[1] / 3)
        start = 0
        for length in rng.choice([(3,), (2, 1), (1, 1, 1), (1, 2), (3,)]):
            # the first note of a bar on a chord tone, near the last one
            if start == 0:
                tones = [chord_degree + d + 7 * o for d in (0, 2, 4) for o in (-1, 0, 1)]
                degree = min(tones, key=lambda x: (abs(x - degree), x))
            else:
                degree += rng.choice([-2, -1, 1, 2])
            degree = max(0, min(9, degree))
            f = hz(scale_note(root + 12, scale, degree))
            when = t + start * beat
            if voice:
                if f not in music_box:
                    music_box[f] = bell_sound(rate, f * 2.0, voice, int(2.0 * rate))
                mix(out, when, music_box[f], gains[2])
            else:
                m = int(length * beat * 0.95)
                env = fade(list(decay(m, rng.uniform(1.0, 3.0), rate)),
                           int(rng.uniform(0.04, 0.12) * rate), int(0.05 * rate))
                lead = table_for("saw", f, rate, 12) if melody == "strings" else flute_lead
                mix(out, when, times(vibrato(rng, lead, f, m, rate, depth, speed), env), gains[2])
            start += length
        bar += 1
    if buf:
        mix(out, 0, imaginary(buf), gains[1] * 2.0)
    return out


def drum_and_bass(rng, n, rate):
    """A breakbeat at 165-178 bpm (kick on 1 and the and of 2, snare on 2 and 4, ghost notes,
    busy hats) over a sub bass of long sine notes, often with a growling detuned bass above
    it and now and then a pad."""
    beat = 60.0 / rng.uniform(165.0, 178.0) * rate
    sixteenth = beat / 4
    offset = -rng.uniform(0.0, 4.0) * beat
    bars = []
    for _ in range(2):  # two bars of 16 steps, played in turn
        kicks = {0, 10} | {s for s in (3, 7, 11, 14) if rng.random() < 0.3}
        snares = {4, 12} | ({rng.choice([9, 15])} if rng.random() < 0.4 else set())
        ghosts = {s for s in range(16) if s not in kicks | snares and rng.random() < 0.2}
        bars.append((kicks, snares, ghosts))
    the_kick = kick(rng, rate, length=(0.15, 0.25))
    the_snare = snare(rng, rate, rattle_tau=(0.06, 0.12))
    hats = [hat(rng, rate, rng.uniform(0.03, 0.06), rng.uniform(0.005, 0.015)) for _ in range(2)]
    sixteenth_hats = rng.random() < 0.6
    ride = cymbal(rng, rate, 0.6, rng.uniform(0.2, 0.4)) if rng.random() < 0.3 else None
    gains = (rng.uniform(0.7, 1.0), rng.uniform(0.6, 0.9), rng.uniform(0.05, 0.12),
             rng.uniform(0.1, 0.2))  # kick, snare, hats, ghosts
    out = [0.0] * n
    step = -16
    while offset + step * sixteenth < n:
        t = offset + step * sixteenth
        kicks, snares, ghosts = bars[(step // 16) % 2]
        s = step % 16
        if s in kicks:
            mix(out, t, the_kick, gains[0])
        if s in snares:
            mix(out, t, the_snare, gains[1])
        elif s in ghosts:
            mix(out, t, the_snare, gains[3])
        if ride and s % 4 == 0:
            mix(out, t, ride, gains[2])
        elif sixteenth_hats or s % 2 == 0:
            mix(out, t, hats[s % 2], gains[2] * (1.0 if s % 2 == 0 else 0.5))
        step += 1
    root = rng.randint(26, 36)
    bass = [0.0] * n
    t = offset
    while t < n:
        length = rng.choice([4, 8, 8, 16, 6]) * beat / 2
        f = hz(root + rng.choice([0, 0, 3, 5, 7, -2, -4]))
        mix(bass, t, tone(SINE, f, length, rate, rng.uniform(1.0, 4.0), 0.01, 0.05))
        t += length
    mix(out, 0, bass, rng.uniform(0.6, 0.9))
    if rng.random() < 0.35:  # a reese: a beating saw an octave up
        f = hz(root + 12)
        mix(out, 0, beating_tone(rng, table_for("saw", f, rate, 12), f, n, rate),
            rng.uniform(0.1, 0.25))
    if rng.random() < 0.4:  # a pad (the drone's)
        mix(out, 0, pad(rng, n, rate, root + 36, rng.choice([(0, 3, 7), (0, 7, 10), (0, 5, 10)]),
                        rng.uniform(0.15, 0.3)))
    return out


TWELVE_BAR = (0, 0, 0, 0, 5, 5, 0, 0, 7, 5, 0, 7)


def blues_shuffle(rng, n, rate):
    """A shuffle at 80-130 bpm: swung 8ths (long-short, near triplets) on a boogie bass line
    through a 12-bar form, guitar-like plucked dyads (root and fifth, root and sixth), often
    a lick from the blues scale, light drums."""
    beat = 60.0 / rng.uniform(80.0, 130.0) * rate
    swing = rng.uniform(0.62, 0.7)
    offset = -rng.uniform(0.0, 4.0) * beat
    key = rng.randint(28, 38)  # E1..D2
    bar0 = rng.randrange(12)
    line = rng.choice([(0, 4, 7, 9, 10, 9, 7, 4), (0, 0, 4, 4, 7, 7, 9, 9),
                       (0, 7, 9, 7, 10, 9, 7, 4), (0, 12, 10, 7, 9, 7, 4, 2)])  # in swung 8ths
    pluck_bass = rng.random() < 0.6
    bass_tau = rng.uniform(0.3, 0.8)
    comp_tau = rng.uniform(0.08, 0.25)
    comp_gain = rng.uniform(0.3, 0.5)
    licks = rng.random() < 0.5
    drums = rng.random() < 0.7
    hats = [hat(rng, rate, 0.06, rng.uniform(0.01, 0.03)) for _ in range(2)]
    the_snare = snare(rng, rate) if rng.random() < 0.6 else None
    the_kick = kick(rng, rate) if rng.random() < 0.5 else None
    organ = rng.random() < 0.2  # sustained chords, as in the organ chorale
    drawbars = rng.choice(ORGAN_PRESETS)
    out = [0.0] * n
    dyads = {}
    b = -4
    while offset + b * beat < n:
        t = offset + b * beat
        bar = (b // 4 + bar0) % 12
        chord = key + TWELVE_BAR[bar]
        for half in (0, 1):
            when = t + half * swing * beat
            length = (swing if half == 0 else 1.0 - swing) * beat
            eighth = 2 * (b % 4) + half
            f = hz(chord + line[eighth])
            if pluck_bass:
                note = pluck(rng, f, length * 1.1, rate, bass_tau, 4)
            else:
                note = tone(table_for("soft", f, rate, 6), f, length * 1.1, rate, bass_tau)
            mix(out, when, note, 0.7)
            upper = 7 if b % 2 == 0 else 9  # the shuffle: fifth, sixth, fifth, sixth
            if (chord, upper) not in dyads:
                m = int(0.5 * rate)
                dyad = pluck(rng, hz(chord + 12), m, rate, comp_tau, 2)
                second = pluck(rng, hz(chord + 12 + upper), m, rate, comp_tau, 2)
                mix(dyad, int(0.006 * rate), second)  # strummed
                dyads[chord, upper] = dyad
            mix(out, when, dyads[chord, upper][:int(length * 1.2)], comp_gain)
            if drums:
                mix(out, when, hats[half], 0.15 if half == 0 else 0.08)
        if drums and the_snare and b % 2 == 1:
            mix(out, t, the_snare, 0.35)
        if drums and the_kick and b % 2 == 0:
            mix(out, t, the_kick, 0.5)
        if organ and b % 4 == 0:
            for interval in (0, 4, 7, 10):
                mix(out, t, organ_note(drawbars, chord + 24 + interval, 4 * beat, rate, 0.02, 0.1),
                    0.08)
        b += 1
    if licks:  # a phrase of triplets high up, from the blues scale
        t = rng.uniform(0.0, 0.6) * n
        degree = rng.randint(5, 10)
        for _ in range(rng.randint(4, 10)):
            f = hz(scale_note(key + 24, BLUES, degree))
            length = rng.choice([1, 1, 2, 3]) * beat / 3
            mix(out, t, pluck(rng, f, length + 0.2 * rate, rate, rng.uniform(0.3, 0.7), 1), 0.6)
            degree = max(0, min(13, degree + rng.choice([-2, -1, -1, 1, 2])))
            t += length
    return out


CHORALE_NEXT = {0: (3, 4, 5, 1, 4), 1: (4, 4, 6), 2: (5, 3), 3: (4, 0, 1), 4: (0, 5, 0),
                5: (1, 3, 4), 6: (0,)}


def organ_chorale(rng, n, rate):
    """Slow four-voice chords (40-72 bpm, a chord every one to four beats, voices moving to the
    nearest chord tone) on an additive organ (drawbar stops), often with a tremulant and a
    church's reverb; now and then a bell."""
    beat = 60.0 / rng.uniform(40.0, 72.0) * rate
    key = rng.randint(48, 58)
    scale = MAJOR if rng.random() < 0.7 else MINOR
    drawbars = tuple(min(8, max(0, d + rng.randint(-1, 1))) if d else 0
                     for d in rng.choice(ORGAN_PRESETS))
    ranges = ((key - 14, key + 4), (48, 67), (55, 74), (60, 81))  # bass, tenor, alto, soprano
    voices = [key - 12, 57, 64, 69]
    parts = [[] for _ in voices]  # per voice: [start, end, midi]
    t = -rng.uniform(0.0, 1.0) * beat
    degree = rng.choice([0, 0, 3, 4])
    while t < n:
        length = rng.choice([1, 1, 1, 2, 2, 3, 4]) * beat
        chord = [scale_note(key, scale, degree + d) % 12 for d in (0, 2, 4)]
        for v, (low, high) in enumerate(ranges):
            pcs = chord[:1] if v == 0 else chord
            candidates = [m for m in range(low, high + 1) if m % 12 in pcs]
            voices[v] = min(candidates, key=lambda m: (abs(m - voices[v]), m))
            if parts[v] and parts[v][-1][2] == voices[v] and parts[v][-1][1] == t:
                parts[v][-1][1] = t + length  # a held note is tied over
            else:
                parts[v].append([t, t + length, voices[v]])
        degree = rng.choice(CHORALE_NEXT[degree])
        t += length
    out = [0.0] * n
    chiff = rng.uniform(0.0, 0.3)  # the pipes' speech at each onset
    for v, part in enumerate(parts):
        for start, end, midi in part:
            gain = 0.35 if v == 0 else 0.25
            mix(out, start, organ_note(drawbars, midi, end - start, rate), gain)
            if chiff:
                m = int(0.03 * rate)
                mix(out, start, times(brighter(noise(rng, m)), decay(m, 0.008, rate)), chiff * gain)
    if rng.random() < 0.4:  # tremulant
        depth, speed = rng.uniform(0.1, 0.3), rng.uniform(5.0, 7.0)
        wobble = curve(n, rate, lambda s: 1.0 + depth * math.sin(2.0 * math.pi * speed * s))
        out = list(map(mul, out, wobble))
    if rng.random() < 0.2:  # a church bell
        start = int(rng.uniform(0.0, 0.7) * n)
        mix(out, start, bell_sound(rate, hz(key + rng.choice([0, 12])), bell_voice(rng), n - start),
            rng.uniform(0.3, 0.6))
    if rng.random() < 0.7:
        reverb(rng, out, rate, rng.uniform(1.5, 3.5), rng.uniform(0.2, 0.45))
    return out


def synth_arp(rng, n, rate):
    """Saw arpeggios in 16ths or triplets at 100-140 bpm through a resonant lowpass whose cutoff
    sweeps (an LFO or a ramp), over a pulsing or held saw bass, often with a delay; now and
    then a four-on-the-floor kick."""
    beat = 60.0 / rng.uniform(100.0, 140.0) * rate
    per_beat = rng.choice([4, 4, 3])
    step = beat / per_beat
    root = rng.randint(52, 64)
    scale = rng.choice([MINOR, MINOR, MAJOR])
    progression = rng.choice([(0, 5, 2, 6), (0, 3, 4, 0), (0, 5, 3, 4), (0, 6, 5, 6)])
    chord_span = rng.choice([(0, 2, 4, 7), (0, 2, 4, 7, 9, 11), (0, 4, 7, 11), (0, 2, 4)])
    pattern = rng.choice(["up", "down", "updown", "skip"])
    q = rng.choice([1.0, 2.5, 5.0])
    low, high = math.log(rng.uniform(200.0, 600.0)), math.log(rng.uniform(2500.0, 8000.0))
    sweep = rng.choice(["lfo", "lfo", "up", "down"])
    period, phase = rng.uniform(1.5, 6.0) * rate, rng.uniform(0.0, 2.0 * math.pi)

    def cutoff(t):  # in Hz, at sample t
        if sweep == "lfo":
            x = 0.5 + 0.5 * math.sin(2.0 * math.pi * t / period + phase)
        else:
            x = t / n if sweep == "up" else 1.0 - t / n
        return math.exp(low + (high - low) * x)

    gate, tau = rng.uniform(0.5, 0.9), rng.uniform(0.08, 0.4)
    bass_pulse, bass_cap = rng.random() < 0.5, rng.choice([4, 6, 8])
    out, arp = [0.0] * n, [0.0] * n
    steps_per_bar = 4 * per_beat
    i = 0
    while i * step < n:
        t = i * step
        chord_root = progression[(i // steps_per_bar) % len(progression)]
        notes = [scale_note(root, scale, chord_root + d) for d in chord_span]
        k = len(notes)
        if pattern == "up":
            position = i % k
        elif pattern == "down":
            position = k - 1 - i % k
        elif pattern == "updown":
            position = i % (2 * k - 2)
            position = position if position < k else 2 * k - 2 - position
        else:  # skip: every other note, wrapping
            position = (2 * i) % k if k % 2 else (2 * i + (2 * i // k)) % k
        f = hz(notes[position])
        cutoff_step = max(0, min(22, round(4.0 * math.log2(cutoff(t) / f))))
        wanted = min(s for s in HARMONIC_STEPS if s >= min(48.0, 3.0 * 2.0 ** (cutoff_step / 4.0)))
        table = resonant_table(min(wanted, harmonic_step(int(0.45 * rate / f))), cutoff_step, q)
        mix(arp, t, tone(table, f, step * gate, rate, tau, 0.002, 0.005), 0.5)
        pulse = per_beat // 2 if per_beat == 4 else per_beat  # 8ths, or beats in triplets
        if i % steps_per_bar == 0 or (bass_pulse and i % pulse == 0):
            fb = hz(scale_note(root - 24, scale, chord_root))
            length = 0.8 * pulse * step if bass_pulse else steps_per_bar * step
            mix(out, t, tone(table_for("saw", fb, rate, bass_cap), fb, length, rate,
                             0.3 if bass_pulse else 2.0, 0.003, 0.02), 0.35)
        i += 1
    if rng.random() < 0.6:  # a delay of a dotted 8th or so
        echo(arp, int(3 * step if per_beat == 4 else 2 * step), rng.uniform(0.3, 0.5), 3)
    mix(out, 0, arp)
    if rng.random() < 0.3:  # the techno kick, on every beat
        the_kick, b = kick(rng, rate), 0
        while b * beat < n:
            mix(out, b * beat, the_kick, 0.8)
            b += 1
    return out


def folk_flute(rng, n, rate):
    """A breathy flute melody (a jig, a reel or a slow air) in a major, mixolydian or dorian
    mode, over a drone of the tonic and fifth (a bagpipe's) or, now and then, plucked chords;
    sometimes a frame drum."""
    style = rng.choice(["jig", "reel", "air"])
    if style == "jig":  # 6/8: 8ths in threes
        beat = 60.0 / rng.uniform(100.0, 125.0) * rate
        unit, rhythm = beat / 3, (1, 1, 1, 1, 2, 3)
    elif style == "reel":
        beat = 60.0 / rng.uniform(95.0, 120.0) * rate
        unit, rhythm = beat / 2, (1, 1, 1, 1, 2)
    else:
        beat = 60.0 / rng.uniform(60.0, 90.0) * rate
        unit, rhythm = beat, (1, 1, 1, 2, 2, 3)
    root = rng.randint(62, 74)
    scale = rng.choice([MAJOR, MIXOLYDIAN, DORIAN])
    out = flute(rng, n, rate, root, scale, unit, rhythm)
    if rng.random() < 0.75:  # the drone
        shape, cap = rng.choice(["soft", "saw", "triangle"]), rng.choice([4, 8, 12])
        for interval, gain in ((-24, rng.uniform(0.2, 0.4)), (-17, rng.uniform(0.1, 0.3))):
            f = hz(root + interval)
            mix(out, 0, beating_tone(rng, table_for(shape, f, rate, cap), f, n, rate), gain)
    else:  # plucked chords on the beat, as in the blues
        b = 0
        while b * beat < n:
            for i, d in enumerate((0, 2, 4)):  # the mode's own triad
                f = hz(scale_note(root - 12, scale, d))
                mix(out, b * beat + i * int(0.01 * rate), pluck(rng, f, beat, rate, 0.5, 2), 0.2)
            b += 1
    if rng.random() < 0.3:  # a frame drum on the beat
        drum, b = kick(rng, rate, body=(0.05, 0.12)), 0
        while b * beat < n:
            mix(out, b * beat, drum, rng.uniform(0.3, 0.5))
            b += 1
    return out


def metal(rng, n, rate):
    """140-200 bpm: a double kick in 16ths, palm-muted chugs on a very low power chord through
    heavy distortion and a cabinet's lowpass, open chords as accents, snare on 2 and 4 (or a
    blast beat), crashes; now and then noise bursts (as in the noise rock)."""
    beat = 60.0 / rng.uniform(140.0, 200.0) * rate
    sixteenth = beat / 4
    root = rng.randint(28, 38)  # E1..D2: down-tuned
    drive = rng.uniform(4.0, 12.0)
    palm = rng.uniform(0.03, 0.07)
    spread = rng.uniform(5.0, 15.0)
    patterns = rng.sample([(1, 1, 1, 1), (1, 0, 1, 1), (1, 1, 0, 1), (1, 0, 1, 0), (1, 1, 1, 0)], 2)
    riff = [rng.choice([0, 0, 0, 0, 1, 3, 5, 6, 7]) for _ in range(8)]  # chord per beat
    accents = {rng.randrange(8) for _ in range(rng.randint(0, 2))}  # open chords
    guitar = [0.0] * n
    b = 0
    while b * beat < n:
        t = int(b * beat)
        length = min(n - t, int(beat) + 1)
        chord = root + riff[b % 8]
        is_open = b % 8 in accents
        voices = [0.0] * length
        for interval in (0, 7, 12) if is_open else (0, 7):  # the octave adds little, muted
            f = hz(chord + interval)
            table = table_for("saw", f, rate, cap=24 if is_open else 8)
            for cents in (-spread / 2, spread / 2):
                mix(voices, 0, osc(table, detuned(f, cents), length, rate, rng.random()))
        if is_open:
            envelope = list(decay(length, 1.0, rate))
        else:
            envelope = []
            pattern = patterns[(b // 4) % 2]
            for s in range(4):
                m = int((s + 1) * sixteenth) - int(s * sixteenth)
                envelope += decay(m, palm, rate) if pattern[s] else repeat(0.0, m)
        mix(guitar, t, fade(times(voices, envelope), int(0.002 * rate), int(0.004 * rate)))
        b += 1
    out = smooth(list(map(math.tanh, map(drive.__mul__, guitar))), rng.choice([2, 3]))
    the_kick = kick(rng, rate, length=(0.1, 0.16), body=(0.03, 0.06), click=(0.4, 0.8))
    the_snare = snare(rng, rate, pitch=(180.0, 260.0))
    crash = cymbal(rng, rate, 1.5, rng.uniform(0.5, 1.0), 0.1)
    blast = rng.random() < 0.2
    s = 0
    while s * sixteenth < n:
        t = s * sixteenth
        mix(out, t, the_kick, 0.5)
        if s % 4 == 0:
            beat_index = s // 4
            if beat_index % 2 == 1 and not blast:  # 2 and 4
                mix(out, t, the_snare, 0.6)
            if beat_index % 8 == 0:
                mix(out, t, crash, 0.15)
        if blast and s % 2 == 0:  # a blast beat: the snare on every 8th
            mix(out, t, the_snare, 0.45)
        s += 1
    if rng.random() < 0.25:  # feedback-like noise bursts
        for _ in range(rng.randint(1, 2)):
            length = int(rng.uniform(0.2, 0.6) * rate)
            burst = fade(brighter(noise(rng, length)), length // 4, length // 4)
            mix(out, rng.uniform(0.0, n), burst, rng.uniform(0.2, 0.4))
    return out


JAZZ_FORMS = (((2, "m7"), (7, "7"), (0, "maj7"), (0, "maj7")),  # ii-V-I, a bar each
              ((2, "m7b5"), (7, "7"), (0, "m7"), (0, "m7")),  # minor ii-V-i
              ((0, "maj7"), (9, "m7"), (2, "m7"), (7, "7")),  # I-vi-ii-V, two beats each
              ((0, "7"), (5, "7"), (0, "7"), (7, "7")))  # a blues's corners
QUALITIES = {"maj7": (0, 4, 7, 11), "m7": (0, 3, 7, 10), "7": (0, 4, 7, 10), "m7b5": (0, 3, 6, 10)}


def jazz(rng, n, rate):
    """Swing at 110-220 bpm: a walking bass in quarters (chord root on the change, chord tones,
    a chromatic approach to the next root), the ride's ding ding-da-ding, the hi-hat on 2 and 4,
    sparse comping chords (piano or electric piano); now and then a flute over the top."""
    beat = 60.0 / rng.uniform(110.0, 220.0) * rate
    swing = rng.uniform(0.6, 0.7)
    form = rng.randrange(len(JAZZ_FORMS))
    per_chord = 2 if form == 2 else 4
    chords = JAZZ_FORMS[form]
    key = rng.randint(29, 40)
    offset = -rng.uniform(0.0, 4.0) * beat
    ride = cymbal(rng, rate, 1.2, rng.uniform(0.4, 0.9))
    foot = hat(rng, rate, 0.05, 0.01)
    bass_tau, bass_dark = rng.uniform(0.3, 0.7), rng.randint(3, 6)
    piano_comp = rng.random() < 0.5
    stretch = rng.uniform(1e-4, 5e-4)
    ep_table = table_for("soft", 440.0, rate, 4)
    gains = rng.uniform(0.05, 0.1), rng.uniform(0.6, 0.9), rng.uniform(0.2, 0.4)  # ride, bass, comp
    out = [0.0] * n
    buf = [0j] * n if piano_comp else None
    note = key + 7
    b = -4
    while offset + b * beat < n:
        t = offset + b * beat
        index, position = divmod(b, per_chord)
        chord_root, quality = chords[index % len(chords)]
        chord = [key + chord_root + i for i in QUALITIES[quality]]
        if position == 0:
            target = chord[0]
        elif position == per_chord - 1:  # approach the next root
            following = key + chords[(index + 1) % len(chords)][0]
            target = following + rng.choice([-1, 1, 1, -2, 7])
        else:
            target = rng.choice(chord[1:] + [note + rng.choice([-2, -1, 1, 2])])
        note = min((target + 12 * o for o in range(-3, 4) if 28 <= target + 12 * o <= 50),
                   key=lambda m: (abs(m - note), m))
        mix(out, t, pluck(rng, hz(note), 1.05 * beat, rate, bass_tau, bass_dark), gains[1])
        accent = 1.0 if b % 2 == 1 else 0.7
        mix(out, t, ride, gains[0] * accent)
        if b % 2 == 1:
            mix(out, t + swing * beat, ride, gains[0] * 0.5)  # the skip note before 3 and 1
            mix(out, t, foot, gains[0] * 0.8)
        if position == 0 and rng.random() < 0.7:  # comping: one or two hits a chord
            voicing = sorted((p - 52) % 12 + 52 for p in chord[1:] + [chord[0] + 14])
            places = [p for p in (0.0, swing, 1.0 + swing, 2.0, 2.0 + swing, 3.0 + swing)
                      if p < per_chord]  # in beats: on the beat or on a swung and
            for hit in rng.sample(places, rng.randint(1, 2)):
                when = t + hit * beat
                hold = rng.uniform(0.15, 0.5) * rate
                for midi in voicing:
                    if piano_comp:
                        piano_note(buf, when, rate, midi, rng.uniform(0.3, 0.6), hold, 0.8, stretch)
                    else:
                        f = hz(midi)
                        mix(out, when, tone(ep_table if f < 0.1 * rate else SINE, f, hold, rate,
                                            0.5, 0.003, 0.03), gains[2] / 3)
        b += 1
    if buf:
        mix(out, 0, imaginary(buf), gains[2])
    if rng.random() < 0.2:  # a flute solo
        mix(out, 0, flute(rng, n, rate, key + 36, MIXOLYDIAN, beat / 2, (1, 1, 2, 3)), 0.4)
    return out


def ambient_pad(rng, n, rate):
    """Slow detuned pads of extended chords (sus, add9, maj7) in the middle register, each
    chord swelling in over 1-3 s and fading out over 1.5-3 s into the next, sparse high glints
    that echo, the whole in a long reverb-like tail; now and then a bell."""
    root = rng.randint(52, 64)
    shape = rng.choice(["saw", "triangle", "soft", "saw"])
    cap = rng.choice([4, 6, 8, 12])
    attack, release = rng.uniform(1.0, 3.0), rng.uniform(1.5, 3.0)
    out = [0.0] * n
    t = -rng.uniform(0.0, 2.0) * rate
    while t < n:
        length = rng.uniform(3.5, 7.0) * rate
        start = max(0, int(t))
        m = int(t + length) - start
        intervals = rng.choice([(0, 4, 7, 11, 14), (0, 2, 7, 12), (0, 7, 14, 16), (0, 3, 7, 10, 14),
                                (0, 5, 7, 12, 19), (0, 4, 7, 9, 14)])
        shift = rng.choice([0, 0, 2, 5, 7, -2, -3, -4])
        # the envelope as if the chord had started at t, even where t < 0
        late, seconds = (start - t) / rate, m / rate

        envelope = grid(m, rate, lambda s: (
            math.sin(0.5 * math.pi * min(1.0, (s + late) / attack)) ** 2
            * math.sin(0.5 * math.pi * min(1.0, (seconds - s) / release)) ** 2))

        for interval in intervals:
            f = hz(root + shift + interval)
            mix(out, start, beating_tone(rng, table_for(shape, f, rate, cap), f, m, rate, envelope),
                1.0 / len(intervals), length=m)
        if rng.random() < 0.5:  # a shimmer two octaves up
            f = hz(root + shift + 24)
            mix(out, start, beating_tone(rng, SINE, f, m, rate, envelope), 0.3 / len(intervals),
                length=m)
        t += length - release * rate * rng.uniform(0.6, 1.0)  # the next swells as this fades
    delay, feedback = rng.uniform(0.25, 0.5) * rate, rng.uniform(0.4, 0.6)
    for _ in range(rng.randint(1, 4)):  # glints that echo
        f = hz(root + 24 + rng.choice(PENTATONIC) + rng.choice([0, 12]))
        tau = rng.uniform(0.2, 0.6)
        glint = imaginary(partial(f, 1j, tau, audible(1.0, tau, rate), rate))
        start, gain = rng.uniform(0.0, 0.8) * n, rng.uniform(0.1, 0.25)
        for k in range(6):
            mix(out, start + k * delay, glint, gain * feedback ** k)
    if rng.random() < 0.2:  # a soft bell, as in the bells
        start = int(rng.uniform(0.0, 0.7) * n)
        mix(out, start, bell_sound(rate, hz(root + 12), bell_voice(rng), n - start),
            rng.uniform(0.15, 0.3))
    return reverb(rng, out, rate, rng.uniform(2.0, 4.0), rng.uniform(0.3, 0.6))


SYNTHS = {"drone": drone, "techno": techno, "chiptune": chiptune, "piano": piano,
          "bells": bells, "noise_rock": noise_rock, "reggae": reggae, "waltz": waltz,
          "drum_and_bass": drum_and_bass, "blues_shuffle": blues_shuffle,
          "organ_chorale": organ_chorale, "synth_arp": synth_arp, "folk_flute": folk_flute,
          "metal": metal, "jazz": jazz, "ambient_pad": ambient_pad}


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
    # The gain is applied where the samples become integers, saving a pass over the track.
    gain = 10.0 ** (rng.uniform(-20.0, -6.0) / 20.0) / (max(map(abs, signal)) or 1.0)
    rms = gain * math.sqrt(sum(map(mul, signal, signal)) / n)
    noise_rms = rms * 10.0 ** (-rng.uniform(30.0, 45.0) / 20.0)
    # uniform noise has RMS 1/sqrt(3)
    mix(signal, 0, noise(rng, n), noise_rms * math.sqrt(3.0) / gain)
    fade(signal, int(0.005 * rate), int(0.005 * rate))
    # The peak is at most -6 dBFS and the noise's at least 30 dB below the RMS: nothing clips.
    out = array.array("h", map(round, map((32767.0 * gain).__mul__, signal)))
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
    parser.add_argument("--train", type=int, default=16, help="training tracks per genre")
    parser.add_argument("--val", type=int, default=4, help="validation tracks per genre")
    parser.add_argument("--test", type=int, default=4, help="test tracks per genre")
    parser.add_argument("--seconds", type=float, default=6.0, help="length of every track")
    parser.add_argument("--rate", type=int, default=22050, help="sample rate in Hz")
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
             "A synthetic music-genre corpus made by tools/demo/make_genre_demo.py: mono 16-bit WAV,",
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
