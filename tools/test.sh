#!/usr/bin/env bash
# README command 2: set up, build (CPU and, where nvcc exists, CUDA code), run every test.
# CUDA tests run when a GPU is present and are reported by ctest as skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build_dir=${SONATA_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 600
