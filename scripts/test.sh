#!/usr/bin/env bash
# Sets up, builds and runs every test (GoogleTest and lit, through ctest), then the sanitizer stage.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --build build
ctest --test-dir build --output-on-failure -j2
# ir/, passes/, runtime/ and the readers again under ASan+UBSan, with their
# unit tests and the fuzz corpora (scripts/sanitize-core.sh, docs/hardening.md).
./scripts/sanitize-core.sh
