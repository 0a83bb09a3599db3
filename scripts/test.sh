#!/usr/bin/env bash
# Sets up, builds and runs every test (GoogleTest and lit, through ctest), then the sanitizer stage.
# Usage: scripts/test.sh [--no-sanitize]   (--no-sanitize: skip the sanitizer stage)
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=1
for a in "$@"; do
  case "$a" in
    --no-sanitize) sanitize=0 ;;
    *) echo "scripts/test.sh: unknown option '$a' (known: --no-sanitize)" >&2; exit 2 ;;
  esac
done
./scripts/setup.sh
cmake --build build
ctest --test-dir build --output-on-failure -j2
# ir/, passes/, runtime/ and the readers again under ASan+UBSan, with their
# unit tests and the fuzz corpora (scripts/sanitize-core.sh, docs/hardening.md).
if [ "$sanitize" = 1 ]; then ./scripts/sanitize-core.sh; fi
