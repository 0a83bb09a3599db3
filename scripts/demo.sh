#!/usr/bin/env bash
# Sets up, builds and runs the main job: the BERT encoder layer of examples/ in
# the reference interpreter at B=2, S=64 on random inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --build build
mkdir -p build/demo-out
build/tools/dscc run examples/bert_layer.dsc --random --seed 1 --dim B=2 --dim S=64 -o build/demo-out
