#!/usr/bin/env bash
# Sets up, builds and runs the main job: compiles the BERT encoder layer of
# examples/ into a shared library with `dscc compile`, links the small C++
# program examples/bert_main.cpp against it, and runs it at a few shapes; then
# checks one shape against the reference interpreter with `dscc run --check`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --build build
make -C examples run
build/tools/dscc run examples/bert_layer.so --random --seed 1 --dim B=2 --dim S=64 --check
