#!/usr/bin/env bash
# Follow-up to gpu-check.sh on a lent GPU: per-kernel times (ncu) of the rows that ran slower than torch, and reduction-schedule variants.
#
# Needs gpu-pack/ from scripts/gpu-prepare.sh, with its schedule variants in gpu-pack/diag/
# (W_rs_WARP_BLOCK_TILE.so: W compiled with --row-schedule WARP,BLOCK,TILE). Uses
# gpu-pack/prebuilt/dscc-run (built by gpu-prepare.sh), so no build step. Writes $OUT/diag.txt and
# the ncu CSVs when OUT is set.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
P=gpu-pack
RUN="$P/prebuilt/dscc-run"
chmod +x "$RUN" 2>/dev/null
export LD_LIBRARY_PATH="$ROOT/$P/prebuilt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
O="${OUT:-/tmp}"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)

# Median ms of 200 timed calls (after a warm-up), one line per model and size.
bench() {
  local so="$1"; shift
  local args=() d
  for d in "$@"; do args+=(--dim "$d"); done
  local t
  t=$(timeout 60 "$RUN" run "$so" --random "${args[@]}" --bench 200 2>&1 | sed -n 's/.*median \([0-9.e-]*\) ms.*/\1/p')
  printf '%-44s %-22s %s ms\n' "$(basename "$so")" "$*" "${t:-FAILED}"
}
{
  echo "## reduction schedules (median of 200 calls): the default model, then its variants"
  declare -A POINTS=(
    [layer_norm]="N=53034,D=256 N=36949,D=1024 N=16384,D=2048 N=23141,D=3072 N=8192,D=4096"
    [layer_norm_f16]="N=53034,D=256 N=36949,D=1024 N=16384,D=2048 N=23141,D=3072 N=8192,D=4096"
    [softmax]="B=32,S=216 B=8,S=384 B=4,S=1024 B=2,S=2048"
    [softmax_f16]="B=32,S=216 B=8,S=384 B=4,S=1024 B=2,S=2048")
  for w in layer_norm layer_norm_f16 softmax softmax_f16; do
    for so in "$P/$w.so" "$P"/diag/"$w"_rs_*.so; do
      [[ -f "$so" ]] || continue
      for pt in ${POINTS[$w]}; do
        # shellcheck disable=SC2086
        bench "$so" ${pt//,/ }
      done
    done
  done
  for pt in "N=53034 D=256" "N=23141 D=3072" "N=1000000 D=32" "N=4096 D=8192"; do
    # shellcheck disable=SC2086
    bench $P/col_reduce.so $pt
  done
  for so in $P/bert_layer.so $P/bert_layer_f16.so; do
    for pt in "B=8 S=384" "B=32 S=216" "B=16 S=216" "B=32 S=128"; do
      # shellcheck disable=SC2086
      bench "$so" $pt
    done
  done
} 2>&1 | tee "$O/diag.txt"

# Per-kernel device times of one call (after ncu's own replay), for the slow bert rows and col_reduce.
if [[ -n "$NCU" ]]; then
  prof() {
    local name="$1" so="$2"; shift 2
    local args=() d
    for d in "$@"; do args+=(--dim "$d"); done
    timeout 120 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
      "$RUN" run "$so" --random "${args[@]}" >"$O/ncu-$name.csv" 2>"$O/ncu-$name.err"
    echo "== $name: $*"
    python3 - "$O/ncu-$name.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if not rows:
    print("  (no ncu rows)"); sys.exit()
h = rows[0]; k = h.index("Kernel Name"); v = h.index("Metric Value"); u = h.index("Metric Unit")
tot = collections.OrderedDict()
for r in rows[1:]:
    scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(r[u], 1.0)
    name = r[k][:70]
    tot[name] = tot.get(name, 0.0) + float(r[v].replace(",", "")) * scale
s = sum(tot.values())
for n, t in sorted(tot.items(), key=lambda x: -x[1]):
    print(f"  {t:10.1f} us {100 * t / s:5.1f}%  {n}")
print(f"  {s:10.1f} us total")
PY
  }
  {
    prof bert16-32x216 $P/bert_layer_f16.so B=32 S=216
    prof bert16-8x384 $P/bert_layer_f16.so B=8 S=384
    prof bert32-32x216 $P/bert_layer.so B=32 S=216
    prof col-53034x256 $P/col_reduce.so N=53034 D=256
  } 2>&1 | tee -a "$O/diag.txt"
else
  echo "no ncu found" | tee -a "$O/diag.txt"
fi
