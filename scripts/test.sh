#!/usr/bin/env bash
# Sets up, builds and runs every test (GoogleTest and lit, through ctest), then the sanitizer stage.
# Usage: scripts/test.sh [--full] [--no-sanitize]
#   --full: the sweeps whole too (ctest label `full`: every random batch at its full count, every ONNX backend
#           model); without it each sweep runs its fixed-seed CI subset (test/CMakeLists.txt)
#   --no-sanitize: skip the sanitizer stage
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=1
select=(-LE full)
for a in "$@"; do
  case "$a" in
    --no-sanitize) sanitize=0 ;;
    --full) select=() ;;
    *) echo "scripts/test.sh: unknown option '$a' (known: --full, --no-sanitize)" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
./scripts/setup.sh
set_up=$(date +%s)
cmake --build build
built=$(date +%s)
ctest --test-dir build --output-on-failure -j2 "${select[@]}"
tested=$(date +%s)
echo "test.sh: setup $((set_up - start)) s, build $((built - set_up)) s, ctest $((tested - built)) s"
# ir/, passes/, runtime/ and the readers again under ASan+UBSan, with their
# unit tests and the fuzz corpora (scripts/sanitize-core.sh, docs/hardening.md).
if [ "$sanitize" = 1 ]; then ./scripts/sanitize-core.sh; fi
