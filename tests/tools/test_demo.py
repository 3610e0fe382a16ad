"""tools/demo.sh in a copy of the tree whose setup, corpus writer and trainer are stand-ins
that record what they were given: the setup installs matplotlib for tools/plot_metrics.py,
and a run shorter than the recipe's keeps the recipe's share of warmup."""
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def write_script(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(path, 0o755)


class DemoTest(unittest.TestCase):
    def run_demo(self, *arguments, env=None, fails=False):
        with tempfile.TemporaryDirectory() as tree:
            os.makedirs(os.path.join(tree, "tools", "demo"))
            shutil.copy(os.path.join(ROOT, "tools", "demo.sh"), os.path.join(tree, "tools"))
            shutil.copy(os.path.join(ROOT, "tools", "demo", "short_run.py"),
                        os.path.join(tree, "tools", "demo"))
            shutil.copytree(os.path.join(ROOT, "tools", "recipes"),
                            os.path.join(tree, "tools", "recipes"))
            write_script(os.path.join(tree, "tools", "setup.sh"),
                         '#!/bin/sh\necho "$SONATA_EXTRA_PACKAGES" > "$(dirname "$0")/../packages"\n')
            for writer in ("demo/make_genre_demo.py", "demo/make_speech_demo.py",
                           "prepare/fsdd.py"):
                write_script(os.path.join(tree, "tools", writer), "")
            write_script(os.path.join(tree, "build", "trainer"),
                         '#!/bin/sh\nfor a in "$@"; do echo "$a"; done > "$(dirname "$0")/../args"\n')
            result = subprocess.run([os.path.join(tree, "tools", "demo.sh"), *arguments],
                                    capture_output=True, text=True, timeout=60,
                                    cwd=tree, env={**os.environ, **(env or {}),
                                                   "SONATA_DEMO_DATA": os.path.join(tree, "d")})
            if fails:
                self.assertNotEqual(result.returncode, 0)
                return result.stderr
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(tree, "packages"), encoding="utf-8") as packages, \
                    open(os.path.join(tree, "args"), encoding="utf-8") as args:
                return packages.read().split(), args.read().split("\n")[:-1]

    def test_setup_installs_matplotlib(self):
        for demo in ("genre", "speech"):
            packages, _ = self.run_demo(demo)
            self.assertIn("python3-matplotlib", packages, demo)

    def test_short_run_scales_the_warmup(self):
        _, args = self.run_demo("genre", "--epochs", "2")
        self.assertIn("--warmup", args)
        self.assertEqual(args[args.index("--warmup") + 1], "0.133")  # 2 of 30 epochs, at 2
        self.assertEqual(args[-2:], ["--epochs", "2"])
        # A warmup of one's own, or the recipe's length, is left alone.
        _, args = self.run_demo("genre", "--epochs", "2", "--warmup", "1")
        self.assertEqual(args.count("--warmup"), 1)
        _, args = self.run_demo("genre")
        self.assertNotIn("--warmup", args)

    def test_fsdd_needs_its_folder_named(self):
        # The recordings are not in the repository: without a folder the demo says where to
        # get them instead of looking outside the checkout.
        env = {"SONATA_FSDD": ""}
        error = self.run_demo("fsdd", env=env, fails=True)
        self.assertIn("github.com/Jakobovski/free-spoken-digit-dataset", error)
        self.assertIn("SONATA_FSDD", error)
        error = self.run_demo("fsdd", "no_such_folder", env=env, fails=True)
        self.assertIn("no_such_folder", error)
        with tempfile.TemporaryDirectory() as fsdd:
            os.makedirs(os.path.join(fsdd, "recordings"))
            _, args = self.run_demo("fsdd", fsdd, "--epochs", "1", env=env)
            self.assertIn("tools/recipes/fsdd.yaml", args)
            self.assertEqual(args[-2:], ["--epochs", "1"])
            _, args = self.run_demo("fsdd", env={"SONATA_FSDD": fsdd})
            self.assertIn("tools/recipes/fsdd.yaml", args)


if __name__ == "__main__":
    unittest.main()
