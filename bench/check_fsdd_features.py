#!/usr/bin/env python3
"""sonata's front end against torchaudio's on real 8 kHz recordings (the Free Spoken Digit
Dataset): each clip resampled 8 kHz -> 16 kHz, MelSpectrogram(16000, n_fft 400, hop 160,
n_mels 80), log(x + 1e-6), with and without per-utterance normalisation, exactly as
bench/peer_train_speech.py computes its features, against build/featurize's .npy files with
the trainer's defaults (the features the speech recipe trains on).

  bench/check_fsdd_features.py --manifest runs/realspeech/split/test.tsv [--clips 40]
                               [--build-dir build]

Prints one JSON line per variant: the largest absolute difference over every clip, the
largest relative to the clip's own range, and the frame counts' agreement. Needs torch,
torchaudio, soundfile (bench/peers_env.py picks the interpreter).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", required=True, help="ASR TSV manifest of 8 kHz clips")
    ap.add_argument("--clips", type=int, default=40)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    import numpy as np
    import soundfile
    import torch
    import torchaudio

    base = os.path.dirname(os.path.abspath(a.manifest))
    entries = []
    with open(a.manifest) as f:
        for line in f:
            if line.strip():
                path = line.split("\t", 1)[0]
                entries.append(path if os.path.isabs(path) else os.path.join(base, path))
    entries = entries[:a.clips]
    mel = torchaudio.transforms.MelSpectrogram(16000, n_fft=400, hop_length=160, n_mels=80)
    with tempfile.TemporaryDirectory(prefix="sonata_fsdd_features_") as work:
        manifest = os.path.join(work, "clips.tsv")
        with open(manifest, "w") as f:
            f.writelines("%s\tx\n" % os.path.realpath(p) for p in entries)
        for normalize in ("none", "utterance"):
            cache = os.path.join(work, normalize)
            command = [os.path.join(a.build_dir, "featurize"), "--manifest", manifest, "--out",
                       cache, "--normalize", normalize, "--workers", "1"]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            worst_abs = worst_rel = 0.0
            frames_agree = True
            rates = set()
            for path in entries:
                x, sr = soundfile.read(path, dtype="float32", always_2d=True)
                rates.add(sr)
                x = torch.from_numpy(x.mean(1))
                if sr != 16000:
                    x = torchaudio.functional.resample(x, sr, 16000)
                with torch.no_grad():
                    f = torch.log(mel(x) + 1e-6)
                    if normalize == "utterance":
                        f = (f - f.mean()) / (f.std(unbiased=False) + 1e-5)
                theirs = f.t().numpy()
                ours = np.load(os.path.join(cache, os.path.realpath(path).lstrip("/") + ".npy"))
                if ours.shape != theirs.shape:
                    frames_agree = False
                    continue
                diff = float(np.abs(ours - theirs).max())
                worst_abs = max(worst_abs, diff)
                worst_rel = max(worst_rel, diff / float(theirs.max() - theirs.min()))
            print(json.dumps({"normalize": normalize, "clips": len(entries),
                              "sample_rates": sorted(rates), "frames_agree": frames_agree,
                              "max_abs_diff": worst_abs, "max_diff_over_range": worst_rel,
                              "torch": torch.__version__,
                              "torchaudio": torchaudio.__version__}))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from peers_env import use_peer_python

    use_peer_python()
    sys.exit(main())
