#!/usr/bin/env bash
# Builds gpu-pack/ on this machine (LLVM + CUDA toolkit): the 7 workloads compiled for sm_90, CLI11's headers, a MANIFEST.
#
# The GPU machine has no LLVM, Z3 or CLI11, so everything only the compiler can
# make is made here and carried there (scripts/gpu-check.sh runs it):
#   gpu-pack/W.so        `dscc compile --target=cuda:sm_90 -O3` (cubin + PTX fallback inside)
#   gpu-pack/W.ptx       the same kernels' PTX, for reading (`--emit=ptx`)
#   gpu-pack/include/CLI CLI11's headers, so the runtime-only build of dscc-run needs nothing installed
#   gpu-pack/prebuilt/   dscc-run + libdscc_runtime.so built here (runtime-only), used there only if its build fails
#   gpu-pack/diag/       schedule variants of the row reductions, for scripts/gpu-diag.sh
#   gpu-pack/MANIFEST    commit, date, dscc version, files
#
# Usage: scripts/gpu-prepare.sh [--dscc PATH]   (default: build/tools/dscc; never builds it)
# Idempotent: gpu-pack/ is rebuilt from scratch each time, so no stale model survives.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DSCC="$ROOT/build/tools/dscc"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dscc) DSCC="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "gpu-prepare: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

WORKLOADS=(elementwise_chain col_reduce gelu_bias layer_norm rms_norm softmax bert_layer)
# Half-precision variants: the workload with every f32 made f16 (or bf16), written to gpu-pack/src/.
HALF=(bert_layer:f16 layer_norm:f16 softmax:f16 layer_norm:bf16 col_reduce:f16)
PACK="$ROOT/gpu-pack"
CLI_SRC=/usr/include/CLI

die() { echo "gpu-prepare: error: $*" >&2; exit 1; }

[[ -x "$DSCC" ]] || die "$DSCC is not built (build it first: cmake -G Ninja -S . -B build && ninja -C build dscc)"
# (grep -q on a pipe would end it early: under pipefail the SIGPIPE fails the test)
[[ "$("$DSCC" compile --help 2>&1)" == *--target* ]] || die "$DSCC compile has no --target option (too old a build?)"
[[ -f "$CLI_SRC/CLI.hpp" ]] || die "$CLI_SRC/CLI.hpp not found (Debian: libcli11-dev)"
if ! command -v ptxas >/dev/null && [[ ! -x /usr/local/cuda/bin/ptxas ]]; then
  # Without ptxas the artifacts still run (the driver compiles the PTX), but the
  # check would then not test the sm_90 machine code that users get.
  die "ptxas not found (CUDA toolkit): the artifacts would carry PTX only"
fi

rm -rf "$PACK"
mkdir -p "$PACK/include"
cp -r "$CLI_SRC" "$PACK/include/CLI"

mkdir -p "$PACK/src"
for h in "${HALF[@]}"; do
  w=${h%:*}; dt=${h#*:}
  sed "s/\bf32\b/$dt/g" "$ROOT/bench/workloads/$w.dsc" >"$PACK/src/${w}_$dt.dsc"
done
for w in "${WORKLOADS[@]}" $(for h in "${HALF[@]}"; do echo "${h%:*}_${h#*:}"; done); do
  src="$ROOT/bench/workloads/$w.dsc"
  [[ -f "$src" ]] || src="$PACK/src/$w.dsc"
  [[ -f "$src" ]] || die "$src missing"
  # One invocation writes both: with several --emit kinds, -o is the stem.
  if ! "$DSCC" compile "$src" --target=cuda:sm_90 -O3 --emit=so,ptx -o "$PACK/$w" 2>"$PACK/$w.compile.log"; then
    cat "$PACK/$w.compile.log" >&2
    die "dscc compile $w failed"
  fi
  [[ -s "$PACK/$w.so" && -s "$PACK/$w.ptx" ]] || die "dscc compile $w wrote no .so/.ptx"
  # A warning (e.g. "ptxas failed; the artifact carries PTX only") must be seen, not buried.
  if [[ -s "$PACK/$w.compile.log" ]]; then
    echo "gpu-prepare: $w: compiler said:" >&2
    cat "$PACK/$w.compile.log" >&2
  else
    rm -f "$PACK/$w.compile.log"
  fi
  echo "gpu-prepare: $w.so ($(stat -c %s "$PACK/$w.so") bytes), $w.ptx ($(grep -c '^\.visible \.entry' "$PACK/$w.ptx") kernels)"
done

# Schedule variants for scripts/gpu-diag.sh: the row reductions with the earlier defaults (a block
# from 1024 elements, warps caching their rows) and with a warp up to 8191.
mkdir -p "$PACK/diag"
for w in layer_norm softmax layer_norm_f16 softmax_f16; do
  src="$ROOT/bench/workloads/$w.dsc"
  [[ -f "$src" ]] || src="$PACK/src/$w.dsc"
  for rs in 32,1024,64 32,8192,64; do
    "$DSCC" compile "$src" --target=cuda:sm_90 -O3 --row-schedule "$rs" -o "$PACK/diag/${w}_rs_${rs//,/_}.so" ||
      die "dscc compile $w --row-schedule $rs failed"
  done
done
echo "gpu-prepare: diag/ $(ls "$PACK/diag" | wc -l) schedule variants"

# A fallback for the GPU machine, should its own runtime-only build fail (no C++20 compiler, say):
# the same build made here, in the build folder gpu-check.sh uses (a no-op for it here later).
# glibc and libstdc++ only grow, so binaries from this older Debian run on the newer image.
# Without OpenBLAS, as there (that machine has none, and the runtime would need libopenblas.so.0);
# the setting stays in build-gpu's cache, so gpu-check.sh here builds what the GPU machine builds.
cmake -G Ninja -S "$ROOT" -B "$ROOT/build-gpu" -DDSCC_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DDSCC_OPENBLAS_LIBRARY=OFF >"$PACK/prebuilt.log" 2>&1 || { cat "$PACK/prebuilt.log" >&2; die "runtime-only cmake failed"; }
grep -q "GPU calls enabled" "$PACK/prebuilt.log" || die "the runtime-only build found no CUDA headers here"
grep -q "no OpenBLAS" "$PACK/prebuilt.log" || die "the runtime-only build would need OpenBLAS, which the GPU machine lacks"
ninja -C "$ROOT/build-gpu" dscc-run >>"$PACK/prebuilt.log" 2>&1 || { tail -30 "$PACK/prebuilt.log" >&2; die "runtime-only build failed"; }
mkdir -p "$PACK/prebuilt"
cp "$ROOT/build-gpu/tools/dscc-run" "$ROOT/build-gpu/runtime/libdscc_runtime.so" "$PACK/prebuilt/"
# dscc-run and the models need the runtime by its SONAME (docs/install.md): a copy under that name too.
cp -L "$ROOT/build-gpu/runtime/libdscc_runtime.so" "$PACK/prebuilt/libdscc_runtime.so.0"
if readelf -d "$PACK/prebuilt/libdscc_runtime.so" | grep -q "NEEDED.*openblas"; then die "prebuilt runtime links OpenBLAS"; fi
rm -f "$PACK/prebuilt.log"
echo "gpu-prepare: prebuilt/ dscc-run and libdscc_runtime.so (fallback)"

commit="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  commit="$commit (with uncommitted changes)"
fi
{
  echo "commit: $commit"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "dscc: $("$DSCC" --version 2>&1 | head -1)"
  echo "target: cuda:sm_90 -O3"
  echo "host: $(uname -m), $(ldd --version 2>&1 | head -1)"
  echo "files:"
  (cd "$PACK" && find . -maxdepth 1 -type f ! -name MANIFEST -printf '%P\n' | sort | while read -r f; do
     echo "  $f $(stat -c %s "$f") bytes, sha256 $(sha256sum "$f" | cut -c1-16)"; done)
  echo "  include/CLI: $(find "$PACK/include/CLI" -type f | wc -l) headers from $CLI_SRC"
  echo "  prebuilt/: dscc-run, libdscc_runtime.so (runtime-only Release build of this tree)"
} >"$PACK/MANIFEST"
echo "gpu-prepare: wrote $PACK ($(du -sh "$PACK" | cut -f1)); MANIFEST:"
sed -n '1,5p' "$PACK/MANIFEST"
