#!/usr/bin/env bash
# Seeds the fuzz corpora from the test files, and replays a target over its corpus and crash regressions.
#
#   scripts/fuzz-corpus.sh seed CORPUS_ROOT          writes CORPUS_ROOT/TARGET/ for every target
#   scripts/fuzz-corpus.sh --replay BIN TARGET ROOT  runs BIN once over ROOT/TARGET and test/fuzz/TARGET
#                                                    (seeding ROOT first when it is missing); fails on a crash
set -euo pipefail
cd "$(dirname "$0")/.."

seed() {
  local root=$1
  mkdir -p "$root"/{fuzz_parse,fuzz_pipeline,fuzz_npy,fuzz_shapes,fuzz_tuning,fuzz_onnx,fuzz_lower}
  # Programs: every .dsc of the tests and workloads (the pipeline's and lowering's only the small ones).
  find test bench/workloads examples -name '*.dsc' -size -64k -print0 | while IFS= read -r -d '' f; do
    h=$(sha1sum "$f" | cut -c1-16)
    cp "$f" "$root/fuzz_parse/$h"
    if [ "$(stat -c %s "$f")" -le 4096 ]; then
      cp "$f" "$root/fuzz_pipeline/$h"
      cp "$f" "$root/fuzz_lower/$h"
    fi
  done
  find test -name '*.npy' -print0 | while IFS= read -r -d '' f; do cp "$f" "$root/fuzz_npy/$(sha1sum "$f" | cut -c1-16)"; done
  find bench/workloads/shapes test/tuner/inputs -name '*.yaml' -print0 |
    while IFS= read -r -d '' f; do cp "$f" "$root/fuzz_shapes/$(sha1sum "$f" | cut -c1-16)"; done
  find test/fuzz/seeds/tuning -name '*.yaml' -print0 |
    while IFS= read -r -d '' f; do cp "$f" "$root/fuzz_tuning/$(sha1sum "$f" | cut -c1-16)"; done
  # ONNX: the importer's own test models and the first hundred node tests of libonnx-testdata.
  { find test/onnx -name '*.onnx' 2>/dev/null; find /usr/share/libonnx-testdata/data/node -name model.onnx 2>/dev/null | sort | sed -n 1,100p; } |
    while read -r f; do cp "$f" "$root/fuzz_onnx/$(sha1sum "$f" | cut -c1-16)"; done
  # Corpora kept from fuzz campaigns (test/fuzz/corpus/TARGET, minimized with -merge=1) and the crash regressions are seeds too.
  # Not every target has such a folder, and a folder may be empty: find copies what there is, and a
  # copy that fails still fails the script.
  for t in fuzz_parse fuzz_pipeline fuzz_npy fuzz_shapes fuzz_tuning fuzz_onnx fuzz_lower; do
    for d in "test/fuzz/corpus/$t" "test/fuzz/$t"; do
      if [ -d "$d" ]; then find "$d" -maxdepth 1 -type f -exec cp {} "$root/$t/" \;; fi
    done
  done
}

if [ "${1:-}" = seed ]; then
  seed "$2"
  exit 0
fi
if [ "${1:-}" = --replay ]; then
  bin=$2 target=$3 root=$4
  [ -d "$root/$target" ] || seed "$root"
  dirs=("$root/$target")
  [ -d "test/fuzz/$target" ] && dirs+=("test/fuzz/$target")
  # -runs=0 with directories: execute every file once, no mutation.
  exec "$bin" -runs=0 -rss_limit_mb=4096 -timeout=60 "${dirs[@]}"
fi
echo "usage: $0 seed CORPUS_ROOT | --replay BIN TARGET CORPUS_ROOT" >&2
exit 2
