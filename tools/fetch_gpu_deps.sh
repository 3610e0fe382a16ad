#!/usr/bin/env bash
# Run here (a Debian machine with the package registry), before a GPU check: the GPU
# machines have no Debian packages and no network. Unpacks the header-only test and JSON
# libraries (Catch2, nlohmann-json, CLI11), without which configuring fails, into .deps/root
# (git-ignored), which the device call carries with the rest of .deps (carry: [".deps"]) and
# tools/gpu_check.sh passes to CMake. Replaces .deps/root alone: the corpus beside it
# (.deps/speech) stays. Part of tools/prepare_card.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps/root .deps/debs && mkdir -p .deps/debs
(cd .deps/debs && apt-get download catch2 nlohmann-json3-dev libcli11-dev)
for deb in .deps/debs/*.deb; do dpkg -x "$deb" .deps/root; done
rm -rf .deps/debs .deps/root/usr/share/doc
du -sh .deps/root
