#!/usr/bin/env python3
"""The truths from the reference packages themselves (issue 38, item 4): sonata held against
librosa, torchaudio, torchvision, safetensors, jiwer and pyctcdecode as PyPI ships them, in
the environment bench/setup_peers.sh makes (.venv-peers/).

  tests/peers/truths.py CHECK [--build-dir build]      CHECK: one of CHECKS below, or all

Without that environment it prints a line saying so and exits 77, which ctest reports as
skipped (CI has no environment; the committed fixtures stand in for the packages there).
Otherwise it runs itself again under the environment's python, runs the check and exits 0
when it agrees, 1 with the disagreement when not. Each check lives in check_<name>.py beside
this file and defines run(build_dir) -> list of failures (empty: agreed); it prints what it
compared.
"""
import argparse
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHECKS = ["cqt", "mel", "vgg", "safetensors", "error_rate", "beam", "fixtures"]
SKIP = 77


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("check", choices=CHECKS + ["all"])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import peers_env  # stdlib only: safe under any python3

    venv_python = os.environ.get("SONATA_PEERS_PYTHON") or peers_env.VENV_PYTHON
    if not os.path.exists(venv_python):
        print("SKIPPED: no %s (bench/setup_peers.sh makes it)" % venv_python, flush=True)
        return SKIP
    if os.path.abspath(sys.prefix) != os.path.abspath(os.path.join(venv_python, "..", "..")):
        if os.environ.get("SONATA_TRUTHS_REEXEC"):
            sys.exit("truths: %s does not run inside its environment" % venv_python)
        os.environ["SONATA_TRUTHS_REEXEC"] = "1"
        os.execv(venv_python, [venv_python, os.path.abspath(__file__)] + sys.argv[1:])

    sys.path.insert(0, HERE)
    failures = []
    for name in CHECKS if a.check == "all" else [a.check]:
        print("== %s" % name, flush=True)
        found = importlib.import_module("check_" + name).run(os.path.abspath(a.build_dir))
        failures += ["%s: %s" % (name, f) for f in found]
        print("%s: %s" % (name, "agrees" if not found else "DISAGREES"), flush=True)
    for failure in failures:
        print("FAILED " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
