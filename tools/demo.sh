#!/usr/bin/env bash
# README command 1: set up, build, and run the main job. Until the trainer lands this is the
# core's smoke run: an MLP trained with sonata's autograd on the GPU if present, else CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build_dir=${SONATA_BUILD_DIR:-build}
"$build_dir/smoke" "$@"
