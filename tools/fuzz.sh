#!/usr/bin/env bash
# libFuzzer on the untrusted-file readers (safetensors, .npy): configures a clang build in
# build-fuzz/ (the engine under ASan + UBSan with coverage instrumentation, only the two
# fuzz targets built) and runs each target for a bounded time from the seed corpus in
# tests/fuzz/corpus/. Any finding fails the run: a crash, a sanitizer report, an exception
# other than sonata::Error, a leak, an input slower than 5 s or a process above 2 GB.
#   tools/fuzz.sh [seconds per target, default 45]
# Reproduce a finding: build-fuzz/fuzz_<reader> build-fuzz/findings/<file>
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-45}
build=build-fuzz

# clang's libFuzzer and sanitizer runtimes are in libclang-rt-dev (Debian 12), its OpenMP
# in libomp-dev; the rest is what tools/setup.sh installs for the main build.
packages=(clang libclang-rt-dev libomp-dev cmake ninja-build catch2 nlohmann-json3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "fuzz: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi

# -O1: fast enough to fuzz, quicker to compile than -O2; assertions stay on (no NDEBUG); line
# tables are all a finding's stack trace needs.
# No BLAS: the readers need no GEMM, and OpenBLAS's libgomp would meet clang's libomp.
start=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DSONATA_CUDA=OFF \
  -DSONATA_MPI=OFF -DSONATA_BLAS=OFF -DSONATA_CPU_VARIANTS=OFF -DSONATA_FUZZ=ON >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target fuzz_safetensors fuzz_npy
echo "fuzz: build took $(($(date +%s) - start)) s"

mkdir -p "$build/findings"
for reader in safetensors npy; do
  # New inputs go to the first folder, so the committed seeds stay as they are.
  work="$build/corpus/$reader"
  mkdir -p "$work"
  log="$build/fuzz_$reader.log"
  echo "fuzz: $reader for ${seconds} s"
  if ! "$build/fuzz_$reader" "$work" "tests/fuzz/corpus/$reader" -max_total_time="$seconds" \
    -timeout=5 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$build/findings/$reader-" >"$log" 2>&1; then
    tail -60 "$log"
    echo "fuzz: FINDING in the $reader reader; the input is in $build/findings/ (log: $log)"
    exit 1
  fi
  awk -v r="$reader" '/^stat::/ { s[$1] = $2 }
    END { printf "fuzz: %s: %d runs, %d/s, peak RSS %d MB, no finding\n", r,
          s["stat::number_of_executed_units:"], s["stat::average_exec_per_sec:"],
          s["stat::peak_rss_mb:"] }' "$log"
done
