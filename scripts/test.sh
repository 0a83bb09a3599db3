#!/usr/bin/env bash
# Sets up, builds and runs every test (GoogleTest and lit, through ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --build build
ctest --test-dir build --output-on-failure -j2
