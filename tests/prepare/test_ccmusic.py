"""tools/prepare/ccmusic.py on a tiny CCMusic genre tree, as audio tracks and as an image zip."""
import os
import unittest
import zipfile

from prepare_test_util import PreparerTest, read_manifest, run_preparer, touch, write_wav

# (folders, file) in the database's <id>_<Name> tree; classical pieces have two levels.
TREE = [
    (["1_Classic", "3_Symphony"], "a"),
    (["1_Classic", "4_Opera"], "b"),
    (["2_Non_classic", "7_Pop", "12_Pop_vocal_ballad"], "c"),
    (["2_Non_classic", "7_Pop", "14_Teen_pop"], "d"),
    (["2_Non_classic", "11_Rock", "21_Soft_rock"], "e"),
]
EXPECTED = {
    "fst": ["Classic", "Classic", "Non_classic", "Non_classic", "Non_classic"],
    "sec": ["Symphony", "Opera", "Pop", "Pop", "Rock"],
    "thr": ["Symphony", "Opera", "Pop_vocal_ballad", "Teen_pop", "Soft_rock"],
}


class CcmusicTest(PreparerTest):
    def all_rows(self):
        rows = []
        for split in ("train", "val", "test"):
            rows += read_manifest(os.path.join(self.out, f"{split}.tsv"))
        return rows

    def labels_by_file(self):
        return {os.path.splitext(os.path.basename(p))[0]: label for p, label in self.all_rows()}

    def test_audio_tracks_get_the_label_of_the_chosen_level(self):
        for folders, name in TREE:
            write_wav(os.path.join(self.data, *folders, name + ".wav"))
        for level, labels in EXPECTED.items():
            code, out, err = run_preparer("ccmusic.py", "--audio", self.data, "--out", self.out,
                                          "--level", level, "--val-fraction", "0",
                                          "--test-fraction", "0")
            self.assertEqual(code, 0, err)
            self.assertEqual(self.labels_by_file(), dict(zip("abcde", labels)), level)
            self.assertIn(f"{len(set(labels))} labels at level {level}", out)
            for path, _ in self.all_rows():
                self.assertTrue(os.path.isfile(path), path)

    def test_an_image_zip_is_extracted_and_listed(self):
        archive = os.path.join(self.data, "mel.zip")
        with zipfile.ZipFile(archive, "w") as zip_file:
            for folders, name in TREE:
                for slice_index in range(2):
                    zip_file.writestr("/".join(["mel", *folders, f"{name}{slice_index}.jpg"]),
                                      f"image {name}{slice_index}")
            zip_file.writestr("__MACOSX/mel/1_Classic/._x.jpg", "resource fork")
            zip_file.writestr("mel/readme.txt", "not an image")
        code, _, err = run_preparer("ccmusic.py", "--images", archive, "--out", self.out,
                                    "--level", "sec", "--val-fraction", "0", "--test-fraction", "0")
        self.assertEqual(code, 0, err)
        rows = self.all_rows()
        self.assertEqual(len(rows), 10)
        for path, label in rows:
            self.assertTrue(path.startswith(os.path.join(self.out, "images")), path)
            name = os.path.basename(path)
            with open(path) as f:
                self.assertEqual(f.read(), f"image {name[:-4]}")
            self.assertEqual(label, dict(zip("abcde", EXPECTED["sec"]))[name[0]])

    def test_splits_are_stratified_by_label(self):
        for genre in ("1_Classic", "2_Non_classic"):
            for n in range(10):
                write_wav(os.path.join(self.data, genre, f"{n}.wav"))
        code, _, err = run_preparer("ccmusic.py", "--audio", self.data, "--out", self.out,
                                    "--level", "fst")
        self.assertEqual(code, 0, err)
        for split, count in (("train", 8), ("val", 1), ("test", 1)):
            labels = [l for _, l in read_manifest(os.path.join(self.out, f"{split}.tsv"))]
            self.assertEqual(sorted(labels), sorted(["Classic", "Non_classic"] * count), split)

    def test_bad_input_gets_one_line_naming_it(self):
        self.assert_fails_naming("ccmusic.py", ["--audio", os.path.join(self.data, "nope"),
                                                "--out", self.out], "nope")
        write_wav(os.path.join(self.data, "1_Classic", "misc", "x.wav"))
        self.assert_fails_naming("ccmusic.py", ["--audio", self.data, "--out", self.out],
                                 "x.wav", "misc")
        touch(os.path.join(self.data, "broken.zip"), b"PK not really")
        self.assert_fails_naming("ccmusic.py", ["--images", os.path.join(self.data, "broken.zip"),
                                                "--out", self.out], "broken.zip", "zip")
        code, _, err = run_preparer("ccmusic.py", "--out", self.out)
        self.assertEqual(code, 2, err)  # argparse: one of --audio or --images is required


if __name__ == "__main__":
    unittest.main()
