"""What the preparer tests share: running a tools/prepare/ script as a user does, tiny WAV
files written with the standard library, and manifests read back."""
import os
import subprocess
import sys
import tempfile
import unittest
import wave

PREPARE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "prepare")


def run_preparer(script, *arguments):
    """(exit code, stdout, stderr) of `python3 tools/prepare/<script> arguments...`."""
    done = subprocess.run([sys.executable, os.path.join(PREPARE, script), *arguments],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return done.returncode, done.stdout, done.stderr


def write_wav(path, frames=800, rate=8000):
    """A mono 16-bit WAV of `frames` samples of a ramp."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join((i % 200 * 100).to_bytes(2, "little", signed=True)
                               for i in range(frames)))


def touch(path, data=b"not decoded by the layout tests"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read_manifest(path):
    """[(absolute audio path, text)] of a TSV manifest, paths resolved from its folder as the
    trainer resolves them."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            audio, text = line.rstrip("\n").split("\t")
            rows.append((os.path.normpath(os.path.join(os.path.dirname(path), audio)), text))
    return rows


class PreparerTest(unittest.TestCase):
    """A temporary folder per test: self.data (the dataset) and self.out (the manifests)."""

    def setUp(self):
        self._folder = tempfile.TemporaryDirectory(prefix="sonata_prepare_")
        self.data = os.path.join(self._folder.name, "dataset")
        self.out = os.path.join(self._folder.name, "manifests")
        os.makedirs(self.data)

    def tearDown(self):
        self._folder.cleanup()

    def assert_fails_naming(self, script, arguments, *words):
        code, _, err = run_preparer(script, *arguments)
        self.assertEqual(code, 1, err)
        self.assertEqual(len(err.strip().splitlines()), 1, f"one line expected: {err}")
        for word in words:
            self.assertIn(word, err)
