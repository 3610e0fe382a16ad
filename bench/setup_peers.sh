#!/usr/bin/env bash
# One command sets up the PyTorch peers and the reference libraries: a virtual environment in
# the repository (.venv-peers/, git-ignored) with pinned versions from PyPI, reused when it is
# already there and complete. Prints the environment's python on the last line of stdout.
#
#   bench/setup_peers.sh [--venv DIR] [--python PY] [--full] [--force]
#
# Pinned: torch 2.15.0, torchaudio 2.11.1 (2.11.0 is built for CUDA 13.0 and refuses to
# import beside torch 2.15.0, built for 13.2), torchvision 0.29.2, librosa 0.11.0 (the newest
# on PyPI; the package lists name a 1.0.0 that PyPI does not serve), safetensors 0.8.0,
# jiwer 4.0.0, pyctcdecode 0.5.0 (which caps numpy below 2).
#
# PyPI's torch for Linux x86-64 is its CUDA build: libtorch_cuda.so links cuDNN, cuBLAS, NCCL,
# cuFFT, cuSPARSE(Lt), cuFile, NVSHMEM, NVRTC and CUPTI at load time, so `import torch` fails
# without them even on a machine with no GPU, and the CPU-only wheels live on an index these
# machines cannot reach. The default install is therefore the smallest set that imports and
# runs on the CPU: torch, torchvision and torchaudio without dependencies, then torch's
# declared dependencies less the ones nothing loads until CUDA work or GPU compilation asks
# (triton, cuda-bindings, cuSOLVER, NVTX), then the other packages with theirs: 2.6 GB to
# download instead of 3.2 GB (bench/RESULTS.md has the measured cost). pip then reports that
# torch requires triton and cuda-bindings, which is expected and harmless on the CPU. --full
# installs everything as pip resolves it (for CUDA peers on a machine with a GPU).
#
# The interpreter: --python, else $SONATA_PEERS_BASE_PYTHON, else the first of python3 on the
# PATH and /usr/bin/python3 that is Python 3.11 to 3.13 (torch 2.15 needs 3.11 or newer; every
# pin has wheels for 3.11) and has the venv module.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv-peers"
python=${SONATA_PEERS_BASE_PYTHON:-}
full=0
force=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --venv) venv=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --full) full=1; shift ;;
    --force) force=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup_peers: unknown option '$1' (see bench/setup_peers.sh --help)" >&2; exit 2 ;;
  esac
done

# The pins, in one place (the torch family first); check() below verifies them.
pins=(torch==2.15.0 torchaudio==2.11.1 torchvision==0.29.2 librosa==0.11.0 safetensors==0.8.0
      jiwer==4.0.0 pyctcdecode==0.5.0)
vpy="$venv/bin/python"

# Exit 0 when the venv imports every pinned package at its pinned version and torch runs.
check() {
  "$vpy" - "${pins[@]}" <<'EOF'
import importlib, importlib.metadata as md, sys
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    have = md.version(name)
    if have != want:
        sys.exit("%s is %s, not %s" % (name, have, want))
for module in ("torch", "torchaudio", "torchvision", "librosa", "safetensors.torch", "jiwer",
               "pyctcdecode"):
    importlib.import_module(module)
import torch
x = torch.nn.Conv2d(1, 2, 3)(torch.ones(1, 1, 5, 5))
assert x.shape == (1, 2, 3, 3)
EOF
}

if [ -x "$vpy" ] && [ "$force" = 0 ] && check 2>/dev/null; then
  echo "setup_peers: reusing $venv" >&2
  echo "$vpy"
  exit 0
fi

supported() {  # an interpreter the pinned wheels support, with venv
  "$1" -c 'import sys, venv, ensurepip; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' \
    2>/dev/null
}
if [ -z "$python" ]; then
  for candidate in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$candidate" ] && supported "$candidate"; then python=$candidate; break; fi
  done
  [ -n "$python" ] || { echo "setup_peers: no Python 3.11-3.13 with venv found (pass --python)" >&2; exit 2; }
elif ! supported "$python"; then
  echo "setup_peers: --python $python is not Python 3.11-3.13 with the venv module" >&2
  exit 2
fi

if [ -e "$venv" ] && [ ! -f "$venv/pyvenv.cfg" ]; then
  echo "setup_peers: $venv exists and is not a virtual environment: not replacing it" >&2
  exit 2
fi
echo "setup_peers: creating $venv with $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')" >&2
rm -rf "$venv"
started=$(date +%s)  # after the removal: the figure is the install alone
"$python" -m venv "$venv"
pip=("$vpy" -m pip install --disable-pip-version-check --no-input --progress-bar off)

if [ "$full" = 1 ]; then
  "${pip[@]}" "${pins[@]}"
else
  "${pip[@]}" --no-deps "${pins[@]:0:3}"
  # torch's own Requires-Dist, less what is only loaded for CUDA work or GPU compilation.
  mapfile -t torch_deps < <("$vpy" - <<'EOF'
import importlib.metadata as md, re
skip_packages = {"triton", "cuda-bindings"}
skip_extras = {"cusolver", "nvtx"}
for req in md.requires("torch") or []:
    if "extra ==" in req:
        continue
    spec = req.split(";")[0].strip()
    name = re.match(r"[A-Za-z0-9_.-]+", spec).group(0).lower()
    if name in skip_packages:
        continue
    m = re.match(r"([A-Za-z0-9_.-]+)\[([^\]]*)\](.*)", spec)
    if m:  # cuda-toolkit[cublas,...]==x: keep the extras that load with libtorch_cuda
        extras = [e for e in m.group(2).split(",") if e.strip() not in skip_extras]
        spec = "%s[%s]%s" % (m.group(1), ",".join(extras), m.group(3))
    print(spec)
EOF
  )
  # torchvision's own dependencies (numpy, pillow) beside the rest of the pins.
  "${pip[@]}" "${torch_deps[@]}" numpy "pillow!=8.3.*,>=5.3.0" "${pins[@]:3}"
fi

if ! check; then
  echo "setup_peers: $venv was installed but fails its check (above)" >&2
  exit 1
fi
elapsed=$(( $(date +%s) - started ))
echo "setup_peers: ready in ${elapsed}s, $(du -sh "$venv" | cut -f1) on disk: $venv" >&2
echo "$vpy"
