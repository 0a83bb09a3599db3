#!/usr/bin/env bash
# Installs the Debian packages dscc needs (only the missing ones) and configures
# the build directory. Safe to run any number of times.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake ninja-build g++ python3 python3-numpy python3-yaml libcli11-dev libgtest-dev libopenblas-pthread-dev libdnnl-dev libz3-dev libyaml-cpp-dev llvm-19-tools llvm-19-dev libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler python3-onnx python3-torch help2man pybind11-dev python3-pybind11 python3-dev pkgconf graphviz libgraphviz-dev chromium)
# The Slurm job-array test (test/tuner/slurm_shards_test.py) starts munged, slurmctld and slurmd itself.
PACKAGES+=(slurm-wlm munge)
# --fuzz: also clang and its libFuzzer/sanitizer runtimes, and a build-fuzz/
# folder with the fuzz targets (docs/hardening.md).
FUZZ=0
[ "${1:-}" = "--fuzz" ] && FUZZ=1 && PACKAGES+=(clang-19 libclang-rt-19-dev)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi


if [ ! -f "build/build.ninja" ]; then
  cmake -S . -B "build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
if [ "$FUZZ" = 1 ] && [ ! -f "build-fuzz/build.ninja" ]; then
  CC=clang-19 CXX=clang++-19 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSCC_FUZZ=ON
fi
