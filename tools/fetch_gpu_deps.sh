#!/usr/bin/env bash
# Run here (a Debian machine with the package registry), before a GPU check: the GPU
# machines have no Debian packages and no network. Unpacks the header-only test and JSON
# libraries into .deps/ (git-ignored), which the device call then carries along
# (carry: [".deps"]) and tools/gpu_check.sh finds by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs
(cd .deps/debs && apt-get download catch2 nlohmann-json3-dev libcli11-dev)
for deb in .deps/debs/*.deb; do dpkg -x "$deb" .deps/root; done
rm -rf .deps/debs
du -sh .deps
