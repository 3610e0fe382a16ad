"""tools/prepare/librispeech.py on a tiny LibriSpeech tree (FLAC files named, not decoded)."""
import os
import unittest

from prepare_test_util import PreparerTest, read_manifest, run_preparer, touch


class LibriSpeechTest(PreparerTest):
    def make_chapter(self, subset, speaker, chapter, transcripts):
        folder = os.path.join(self.data, subset, str(speaker), str(chapter))
        lines = []
        for utterance, text in enumerate(transcripts):
            name = f"{speaker}-{chapter}-{utterance:04d}"
            touch(os.path.join(folder, name + ".flac"))
            lines.append(f"{name} {text}\n")
        with open(os.path.join(folder, f"{speaker}-{chapter}.trans.txt"), "w") as f:
            f.writelines(lines)
        return folder

    def test_one_manifest_per_subset_with_its_transcripts(self):
        self.make_chapter("dev-clean", 84, 121123, ["GO DO YOU HEAR", "BUT IN LESS THAN FIVE MINUTES"])
        self.make_chapter("dev-clean", 174, 50561, ["FORGOTTEN TOO THE NAME OF GILLIAN"])
        self.make_chapter("test-other", 1688, 142285, ["THERE'S IRON THEY SAY"])
        code, out, err = run_preparer("librispeech.py", self.data, "--out", self.out)
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(os.listdir(self.out)), ["dev-clean.tsv", "test-other.tsv"])
        dev = read_manifest(os.path.join(self.out, "dev-clean.tsv"))
        # Speakers and chapters in name order, utterances in transcript order.
        self.assertEqual([(os.path.basename(p), t) for p, t in dev],
                         [("174-50561-0000.flac", "FORGOTTEN TOO THE NAME OF GILLIAN"),
                          ("84-121123-0000.flac", "GO DO YOU HEAR"),
                          ("84-121123-0001.flac", "BUT IN LESS THAN FIVE MINUTES")])
        for path, _ in dev:
            self.assertTrue(os.path.isfile(path), path)
        other = read_manifest(os.path.join(self.out, "test-other.tsv"))
        self.assertEqual([t for _, t in other], ["THERE'S IRON THEY SAY"])
        self.assertIn("dev-clean.tsv: 3 entries", out)

    def test_subsets_option_picks_and_checks(self):
        self.make_chapter("dev-clean", 1, 2, ["A"])
        self.make_chapter("test-clean", 3, 4, ["B"])
        code, _, err = run_preparer("librispeech.py", self.data, "--out", self.out,
                                    "--subsets", "test-clean")
        self.assertEqual(code, 0, err)
        self.assertEqual(os.listdir(self.out), ["test-clean.tsv"])
        self.assert_fails_naming("librispeech.py", [self.data, "--out", self.out, "--subsets",
                                                    "dev-cleen"], "dev-cleen")
        self.assert_fails_naming("librispeech.py", [self.data, "--out", self.out, "--subsets",
                                                    "dev-other"], "dev-other", "does not exist")

    def test_a_transcript_naming_a_missing_flac_or_a_flac_without_one_is_refused(self):
        folder = self.make_chapter("dev-clean", 1, 2, ["A", "B"])
        os.remove(os.path.join(folder, "1-2-0001.flac"))
        self.assert_fails_naming("librispeech.py", [self.data, "--out", self.out],
                                 "1-2.trans.txt", "line 2", "1-2-0001.flac")
        touch(os.path.join(folder, "1-2-0001.flac"))
        touch(os.path.join(folder, "1-2-0002.flac"))
        self.assert_fails_naming("librispeech.py", [self.data, "--out", self.out],
                                 "1-2-0002.flac", "no line")

    def test_a_folder_without_subsets_is_refused(self):
        self.assert_fails_naming("librispeech.py", [self.data, "--out", self.out], self.data,
                                 "dev-clean")


if __name__ == "__main__":
    unittest.main()
