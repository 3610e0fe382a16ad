"""tools/prepare/common_voice.py on a tiny Common Voice language folder (MP3s named only)."""
import os
import unittest

from prepare_test_util import PreparerTest, read_manifest, run_preparer, touch

HEADER = "client_id\tpath\tsentence\tup_votes\tdown_votes\tage\tgender\taccents\tlocale\tsegment\n"


class CommonVoiceTest(PreparerTest):
    def make_table(self, split, rows, header=HEADER):
        with open(os.path.join(self.data, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write(header)
            for clip, sentence in rows:
                touch(os.path.join(self.data, "clips", clip))
                f.write(f"abc123\t{clip}\t{sentence}\t2\t0\t\t\t\ten\t\n")

    def test_train_dev_test_tables_become_manifests(self):
        self.make_table("train", [("common_voice_en_1.mp3", 'He said "hello"  there.'),
                                  ("common_voice_en_2.mp3", "Café au lait, s'il vous plaît")])
        self.make_table("dev", [("common_voice_en_3.mp3", "One more.")])
        self.make_table("test", [("common_voice_en_4.mp3", "The last one")])
        code, out, err = run_preparer("common_voice.py", self.data, "--out", self.out)
        self.assertEqual(code, 0, err)
        train = read_manifest(os.path.join(self.out, "train.tsv"))
        self.assertEqual([(os.path.basename(p), t) for p, t in train],
                         [("common_voice_en_1.mp3", 'He said "hello" there.'),
                          ("common_voice_en_2.mp3", "Café au lait, s'il vous plaît")])
        for path, _ in train:
            self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(len(read_manifest(os.path.join(self.out, "dev.tsv"))), 1)
        self.assertEqual(len(read_manifest(os.path.join(self.out, "test.tsv"))), 1)
        self.assertIn("train.tsv: 2 entries", out)

    def test_columns_are_found_by_their_header(self):
        header = "path\tclient_id\tsentence_id\tsentence\n"
        with open(os.path.join(self.data, "validated.tsv"), "w") as f:
            f.write(header + "a.mp3\tx\ty\tFirst words\n")
        touch(os.path.join(self.data, "clips", "a.mp3"))
        code, _, err = run_preparer("common_voice.py", self.data, "--out", self.out,
                                    "--splits", "validated")
        self.assertEqual(code, 0, err)
        self.assertEqual([t for _, t in read_manifest(os.path.join(self.out, "validated.tsv"))],
                         ["First words"])

    def test_bad_input_gets_one_line_naming_it(self):
        self.assert_fails_naming("common_voice.py", [self.data, "--out", self.out], "clips")
        self.make_table("train", [("a.mp3", "Words")])
        self.assert_fails_naming("common_voice.py", [self.data, "--out", self.out], "dev.tsv")
        os.remove(os.path.join(self.data, "clips", "a.mp3"))
        self.assert_fails_naming("common_voice.py", [self.data, "--out", self.out, "--splits",
                                                     "train"], "train.tsv", "line 2", "a.mp3")
        self.make_table("train", [("a.mp3", "Words")], header="client_id\tfile\ttext\n")
        self.assert_fails_naming("common_voice.py", [self.data, "--out", self.out, "--splits",
                                                     "train"], "train.tsv", "sentence")
        self.make_table("train", [("a.mp3", "   ")])
        self.assert_fails_naming("common_voice.py", [self.data, "--out", self.out, "--splits",
                                                     "train"], "line 2", "empty")


if __name__ == "__main__":
    unittest.main()
