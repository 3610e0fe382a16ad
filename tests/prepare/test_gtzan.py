"""tools/prepare/gtzan.py on a tiny GTZAN tree: a stratified, seeded split; broken WAVs."""
import os
import unittest

from prepare_test_util import PreparerTest, read_manifest, run_preparer, touch, write_wav

GENRES = ["blues", "classical", "jazz"]


class GtzanTest(PreparerTest):
    def make_tracks(self, per_genre, folder="genres_original"):
        for genre in GENRES:
            for n in range(per_genre):
                write_wav(os.path.join(self.data, folder, genre, f"{genre}.{n:05d}.wav"))

    def manifests(self):
        return {s: read_manifest(os.path.join(self.out, f"{s}.tsv")) for s in ("train", "val", "test")}

    def test_every_genre_is_split_alike_and_every_track_lands_once(self):
        self.make_tracks(10)
        code, _, err = run_preparer("gtzan.py", self.data, "--out", self.out)
        self.assertEqual(code, 0, err)
        splits = self.manifests()
        for name, expected in (("train", 8), ("val", 1), ("test", 1)):
            for genre in GENRES:
                self.assertEqual(sum(label == genre for _, label in splits[name]), expected,
                                 f"{name} {genre}")
        paths = [p for rows in splits.values() for p, _ in rows]
        self.assertEqual(len(paths), len(set(paths)))
        for rows in splits.values():
            for path, label in rows:
                self.assertTrue(os.path.isfile(path), path)
                self.assertEqual(os.path.basename(os.path.dirname(path)), label)

    def test_the_split_depends_on_the_seed_only(self):
        self.make_tracks(10)
        run_preparer("gtzan.py", self.data, "--out", self.out, "--seed", "3")
        first = self.manifests()
        run_preparer("gtzan.py", self.data, "--out", self.out, "--seed", "3")
        self.assertEqual(self.manifests(), first)
        run_preparer("gtzan.py", self.data, "--out", self.out, "--seed", "4")
        self.assertNotEqual(self.manifests()["test"], first["test"])

    def test_the_original_tarballs_au_layout_works(self):
        for genre in GENRES:
            touch(os.path.join(self.data, "genres", genre, f"{genre}.00000.au"))
        code, _, err = run_preparer("gtzan.py", self.data, "--out", self.out, "--val-fraction", "0",
                                    "--test-fraction", "0")
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(l for _, l in self.manifests()["train"]), GENRES)

    def test_a_broken_wav_is_left_out_and_named_or_refused_with_strict(self):
        self.make_tracks(3)
        broken = os.path.join(self.data, "genres_original", "jazz", "jazz.00054.wav")
        touch(broken, b"RIFF\x10\x00\x00\x00WAVE")
        code, _, err = run_preparer("gtzan.py", self.data, "--out", self.out)
        self.assertEqual(code, 0, err)
        self.assertIn("jazz.00054.wav", err)
        listed = [p for rows in self.manifests().values() for p, _ in rows]
        self.assertEqual(len(listed), 9)
        self.assertNotIn(os.path.normpath(broken), listed)
        self.assert_fails_naming("gtzan.py", [self.data, "--out", self.out, "--strict"],
                                 "jazz.00054.wav")

    def test_bad_input_gets_one_line_naming_it(self):
        self.assert_fails_naming("gtzan.py", [self.data, "--out", self.out], "genres_original")
        self.make_tracks(2)
        self.assert_fails_naming("gtzan.py", [self.data, "--out", self.out, "--test-fraction", "0.95"],
                                 "--test-fraction")


if __name__ == "__main__":
    unittest.main()
