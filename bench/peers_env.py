"""Which Python runs the PyTorch peers: the one place bench/compare and the peer scripts ask.

Default: the virtual environment that bench/setup_peers.sh makes in the repository
(.venv-peers/: PyTorch 2.x, torchaudio, torchvision, librosa, safetensors, jiwer, pyctcdecode
from PyPI). Without it, Debian's /usr/bin/python3 and its PyTorch 1.13, with one line on
stderr that says so. SONATA_PEERS_PYTHON names another interpreter outright.

A peer script calls use_peer_python() before it imports torch: when it runs under another
interpreter it replaces itself (os.execv) with the same command under the chosen one, once.
Without the venv, an interpreter that imports torch already (a GPU machine's PyTorch, which
tools/gpu_check.sh names) keeps the script: only one without torch falls back to Debian's.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv-peers")
VENV_PYTHON = os.path.join(VENV, "bin", "python")
DEBIAN_PYTHON = "/usr/bin/python3"
_REEXEC = "SONATA_PEERS_REEXEC"  # set across the exec: never more than one hop


def peer_python(announce=True):
    """The interpreter for the peers; prints the fallback line when it is Debian's."""
    chosen = os.environ.get("SONATA_PEERS_PYTHON")
    if chosen:
        return chosen
    if os.path.exists(VENV_PYTHON):
        return VENV_PYTHON
    if announce:
        print("peers: no %s (bench/setup_peers.sh makes it): falling back to Debian's "
              "PyTorch 1.13 under %s" % (os.path.relpath(VENV, os.getcwd()), DEBIAN_PYTHON),
              file=sys.stderr, flush=True)
    return DEBIAN_PYTHON


def use_peer_python():
    """Re-executes this script under peer_python() unless it already runs there."""
    if os.environ.get(_REEXEC):
        return
    if not os.environ.get("SONATA_PEERS_PYTHON") and not os.path.exists(VENV_PYTHON):
        import importlib.util

        if importlib.util.find_spec("torch") is not None:
            print("peers: no %s: PyTorch under %s" % (os.path.relpath(VENV, os.getcwd()),
                                                      sys.executable), file=sys.stderr, flush=True)
            return
    target = peer_python()
    if target == VENV_PYTHON and os.path.abspath(sys.prefix) == VENV:
        return  # already inside the venv, started as bin/python3 or the like
    if os.path.abspath(sys.executable) == os.path.abspath(target) or not os.path.exists(target):
        return
    os.environ[_REEXEC] = "1"
    os.execv(target, [target, os.path.abspath(sys.argv[0])] + sys.argv[1:])
