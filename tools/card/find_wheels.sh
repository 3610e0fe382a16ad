# shellcheck shell=bash disable=SC2154,SC2034
# Sourced by tools/gpu_check.sh: the interpreter whose PyTorch the benchmarks compare against,
# and cuDNN and NCCL from the NVIDIA wheels beside it (site-packages/nvidia/*). Sets
#   py          the interpreter: $PYTHON, else /opt/torch/.venv/bin/python3 (the lent GPU
#               machines' PyTorch, not on their PATH), else the first python3 that imports torch
#   py_torch    "torch 2.11.0+cu130 cuda 13.0", or empty when py does not import torch
#   wheel_site  its site-packages (or $SONATA_WHEEL_SITE: unpacked wheels, no interpreter)
#   cmake_wheels  -DCUDNN_ROOT=... -DNCCL_ROOT=... for what the wheels hold
# and puts every site-packages/nvidia/*/lib on LD_LIBRARY_PATH: cuDNN 9 loads its engine
# libraries, nvrtc and cublasLt by name at run time, which the linker's run path does not
# cover.
py=""
py_torch=""
for candidate in ${PYTHON:-} /opt/torch/.venv/bin/python3 python3; do
  command -v "$candidate" >/dev/null 2>&1 || continue
  if "$candidate" -c 'import torch' >/dev/null 2>&1; then
    py=$(command -v "$candidate")
    py_torch=$("$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1)
    break
  fi
  # $PYTHON is taken without torch too: its wheels may still hold cuDNN and NCCL.
  [ "$candidate" = "${PYTHON:-}" ] && [ -z "$py" ] && py=$(command -v "$candidate")
done
wheel_site=${SONATA_WHEEL_SITE:-}
if [ -z "$wheel_site" ] && [ -n "$py" ]; then
  wheel_site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
fi
cmake_wheels=()
if [ -n "$wheel_site" ] && [ -d "$wheel_site/nvidia" ]; then
  for lib in CUDNN:cudnn NCCL:nccl; do
    root="$wheel_site/nvidia/${lib#*:}"
    [ -f "$root/include/${lib#*:}.h" ] && cmake_wheels+=("-D${lib%%:*}_ROOT=$root")
  done
  for dir in "$wheel_site"/nvidia/*/lib; do
    [ -d "$dir" ] && LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  export LD_LIBRARY_PATH
fi
