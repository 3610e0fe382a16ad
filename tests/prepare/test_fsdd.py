"""tools/prepare/fsdd.py on a tiny FSDD tree: speaker-disjoint and FSDD's index split."""
import os
import unittest

from prepare_test_util import PreparerTest, read_manifest, run_preparer, write_wav

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


class FsddTest(PreparerTest):
    def make_recordings(self, speakers, indices):
        for speaker in speakers:
            for digit in (3, 7):
                for index in indices:
                    write_wav(os.path.join(self.data, "recordings", f"{digit}_{speaker}_{index}.wav"))

    def test_speaker_split_holds_the_test_speakers_out(self):
        self.make_recordings(["anna", "bert", "carl"], [0, 1, 12, 30])
        code, out, err = run_preparer("fsdd.py", self.data, "--out", self.out,
                                      "--test-speakers", "bert", "--dev-indices", "2")
        self.assertEqual(code, 0, err)
        splits = {s: read_manifest(os.path.join(self.out, f"{s}.tsv"))
                  for s in ("train", "dev", "test")}
        speaker = lambda path: os.path.basename(path).split("_")[1]
        index = lambda path: int(os.path.basename(path).split("_")[2][:-4])
        self.assertEqual({speaker(p) for p, _ in splits["test"]}, {"bert"})
        self.assertEqual({speaker(p) for p, _ in splits["train"]}, {"anna", "carl"})
        self.assertEqual({speaker(p) for p, _ in splits["dev"]}, {"anna", "carl"})
        self.assertTrue(all(index(p) < 2 for p, _ in splits["dev"]))
        self.assertTrue(all(index(p) >= 2 for p, _ in splits["train"]))
        self.assertEqual(len(splits["test"]) + len(splits["train"]) + len(splits["dev"]), 24)
        for rows in splits.values():
            for path, text in rows:
                self.assertTrue(os.path.isfile(path), path)
                self.assertEqual(text, WORDS[int(os.path.basename(path)[0])])
        self.assertIn("test speakers: bert", out)

    def test_default_test_speaker_is_the_last_by_name(self):
        self.make_recordings(["anna", "zoe"], [0, 7])
        code, _, err = run_preparer("fsdd.py", self.data, "--out", self.out)
        self.assertEqual(code, 0, err)
        test = read_manifest(os.path.join(self.out, "test.tsv"))
        self.assertEqual({os.path.basename(p).split("_")[1] for p, _ in test}, {"zoe"})

    def test_index_split_is_fsdds_own(self):
        self.make_recordings(["anna", "bert"], [0, 4, 5, 9, 10, 49])
        code, _, err = run_preparer("fsdd.py", self.data, "--out", self.out, "--split", "index")
        self.assertEqual(code, 0, err)
        index = lambda row: int(os.path.basename(row[0]).split("_")[2][:-4])
        self.assertEqual(sorted({index(r) for r in read_manifest(os.path.join(self.out, "test.tsv"))}),
                         [0, 4])
        self.assertEqual(sorted({index(r) for r in read_manifest(os.path.join(self.out, "dev.tsv"))}),
                         [5, 9])
        self.assertEqual(sorted({index(r) for r in read_manifest(os.path.join(self.out, "train.tsv"))}),
                         [10, 49])

    def test_bad_input_gets_one_line_naming_it(self):
        self.assert_fails_naming("fsdd.py", [os.path.join(self.data, "missing"), "--out", self.out],
                                 "missing", "does not exist")
        self.assert_fails_naming("fsdd.py", [self.data, "--out", self.out], "recordings")
        self.make_recordings(["anna", "bert"], [0])
        write_wav(os.path.join(self.data, "recordings", "hello.wav"))
        self.assert_fails_naming("fsdd.py", [self.data, "--out", self.out], "hello.wav")
        os.remove(os.path.join(self.data, "recordings", "hello.wav"))
        self.assert_fails_naming("fsdd.py", [self.data, "--out", self.out, "--test-speakers", "carl"],
                                 "carl", "anna, bert")
        self.assertFalse(os.path.exists(os.path.join(self.out, "train.tsv")))

    def test_help(self):
        code, out, _ = run_preparer("fsdd.py", "--help")
        self.assertEqual(code, 0)
        self.assertIn("--test-speakers", out)


if __name__ == "__main__":
    unittest.main()
