#!/usr/bin/env bash
# One-shot GPU proof, run from the repo root on the GPU machine with gpu-pack/ carried: build, correctness, benchmark, one table.
#
#   (a) runtime-only build of dscc-run in build-gpu/ (no LLVM, Z3, OpenBLAS; CLI11 from gpu-pack/include)
#   (b) the device: nvidia-smi -L, and dscc's own view of it
#   (c) correctness: `dscc-run run gpu-pack/W.so --random --check` at ~12 sizes per workload (1, 7/8/9,
#       15/16/17, 63/64/65 on the innermost dims, range ends with inputs capped at 256 MiB) against the
#       reference interpreter, plus one out-of-range size that must be refused cleanly; all of them run,
#       in parallel, whatever fails
#   (d) the benchmark: bench/bench_gpu.py (dscc vs torch eager vs torch.compile)
#   (e) one summary table on stdout and in $OUT/summary.md, with the logs in $OUT when OUT is set
#
# Without a GPU, (c) and (d) say why they are skipped; (a) still runs, and so does a host-side
# check that each model loads against the new runtime and is refused with "no CUDA device".
# Exit status: 0 when every step that ran passed. Meant to finish in well under 6 minutes on an H200.
#
# Usage: scripts/gpu-check.sh [--jobs N] [--budget-s S]
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PACK=gpu-pack
BUILD=build-gpu
RUN="$BUILD/tools/dscc-run"
RUNTIME="$BUILD/runtime/libdscc_runtime.so"
LOGS="$BUILD/gpu-check-logs"
JOBS=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
BUDGET_S=330   # the whole script, on the GPU machine; the benchmark gets what the earlier steps leave
while [[ $# -gt 0 ]]; do
  case "$1" in
    --jobs) JOBS="$2"; shift 2 ;;
    --budget-s) BUDGET_S="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
WORKLOADS=(elementwise_chain col_reduce gelu_bias layer_norm rms_norm softmax bert_layer
           bert_layer_f16 layer_norm_f16 softmax_f16 layer_norm_bf16 col_reduce_f16)
T0=$SECONDS
FAILED=0
rm -rf "$LOGS"
mkdir -p "$LOGS"
: >"$LOGS/steps.tsv"   # step \t result \t detail, for the summary

step() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$LOGS/steps.tsv"; echo "gpu-check: [$1] $2 — $3" >&2; }
fail() { FAILED=1; step "$1" FAIL "$2"; }

[[ -f "$PACK/MANIFEST" ]] || { echo "gpu-check: error: $PACK/MANIFEST missing: run scripts/gpu-prepare.sh here first and carry $PACK" >&2; exit 2; }
step pack ok "$(sed -n 's/^commit: //p' "$PACK/MANIFEST" | cut -c1-12), made $(sed -n 's/^date: //p' "$PACK/MANIFEST")"

# ---------------------------------------------------------------------------------------------
# (a) build
t=$SECONDS
# The same configuration on every machine: CLI11 from the pack even where one is installed, and
# no OpenBLAS (the GPU machine has none; GPU models use cuBLAS).
cmake_args=(-G Ninja -S . -B "$BUILD" -DDSCC_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release
            -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON "-DCLI11_INCLUDE_DIR=$ROOT/$PACK/include"
            -DDSCC_OPENBLAS_LIBRARY=OFF)
# CUDA headers (types and constants only; the runtime dlopens the driver and cuBLAS): the
# toolkit's folder, else wherever nvcc lives, else the pip packages that PyTorch brings.
if [[ ! -f /usr/local/cuda/include/cublas_v2.h ]]; then
  for d in "$(dirname "$(command -v nvcc 2>/dev/null || echo /nonexistent/bin/nvcc)")/../include" \
           $(python3 -c 'import nvidia, os; [print(os.path.join(p, s, "include")) for p in nvidia.__path__ for s in ("cu13", "cuda_runtime", "cublas")]' 2>/dev/null); do
    [[ -f "$d/cuda.h" ]] && cmake_args+=("-DDSCC_CUDA_INCLUDE_DIR=$d")
    [[ -f "$d/cublas_v2.h" ]] && cmake_args+=("-DDSCC_CUBLAS_INCLUDE_DIR=$d")
  done
fi
if cmake "${cmake_args[@]}" >"$LOGS/cmake.log" 2>&1 && ninja -C "$BUILD" -j"$(nproc)" dscc-run >"$LOGS/build.log" 2>&1; then
  cuda_hdr=$(grep -q "GPU calls enabled" "$LOGS/cmake.log" && echo "CUDA headers found" || echo "NO CUDA headers: every GPU call will fail")
  blas=$(grep -q "no OpenBLAS" "$LOGS/cmake.log" && echo "no OpenBLAS" || echo "OpenBLAS")
  step build ok "$RUN in $((SECONDS - t)) s; $cuda_hdr; $blas; $(c++ --version | head -1)"
else
  fail build "see build-gpu/gpu-check-logs/{cmake,build}.log: $(cat "$LOGS/cmake.log" "$LOGS/build.log" 2>/dev/null | grep -i -m1 error | cut -c1-140)"
  # The checks and the benchmark still run, on the copy gpu-prepare.sh built (the build stays failed).
  if [[ -x "$PACK/prebuilt/dscc-run" ]] || chmod +x "$PACK/prebuilt/dscc-run" 2>/dev/null; then
    RUN="$PACK/prebuilt/dscc-run"
    RUNTIME="$PACK/prebuilt/libdscc_runtime.so"
    export LD_LIBRARY_PATH="$ROOT/$PACK/prebuilt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    step fallback ok "using $PACK/prebuilt/ (dscc-run and the runtime built by gpu-prepare.sh)"
  fi
fi

# cuBLAS for bert_layer's matmuls: the runtime dlopens libcublas.so.13/.12 by name, then under
# /usr/local/cuda/lib64; PyTorch's pip copy is elsewhere, so name its folder when nothing else has one.
if ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.1[23]' && ! ls /usr/local/cuda/lib64/libcublas.so.1[23] >/dev/null 2>&1; then
  d=$(python3 -c 'import nvidia, glob, os; print(next(os.path.dirname(f) for p in nvidia.__path__ for f in glob.glob(p + "/**/libcublas.so.1[23]", recursive=True)))' 2>/dev/null)
  [[ -n "$d" ]] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && step cublas ok "from $d"
fi

# ---------------------------------------------------------------------------------------------
# (b) device
HAVE_GPU=0
NO_GPU_WHY=""
if ! command -v nvidia-smi >/dev/null; then
  NO_GPU_WHY="nvidia-smi not found"
elif ! nvidia-smi -L >"$LOGS/nvidia-smi.txt" 2>&1 || ! grep -q '^GPU 0' "$LOGS/nvidia-smi.txt"; then
  NO_GPU_WHY="nvidia-smi -L lists no GPU: $(head -1 "$LOGS/nvidia-smi.txt")"
else
  HAVE_GPU=1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv >>"$LOGS/nvidia-smi.txt" 2>&1
  step device ok "$(head -1 "$LOGS/nvidia-smi.txt" | cut -c1-60); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
fi
if [[ $HAVE_GPU == 0 ]]; then
  step device "skipped: no GPU" "$NO_GPU_WHY"
fi

# ---------------------------------------------------------------------------------------------
# (c) correctness. One line per check: workload | dims | atol,rtol or "reject".
# Sizes: 1; 7/8/9, 15/16/17, 63/64/65 on the innermost dim (vector versions and their tails);
# range ends, with inputs of 256 MiB at most (gelu_bias's T=32768: 400 MB); then sizes just outside
# the `where` ranges, which the model must refuse. Why not 1 GB: the reference interpreter needed
# 95 s and 13.7 GB of RAM for `chain` at N=65536 D=4096 (1 GiB) on the 2-core build machine, and
# the checks run 8 at a time.
# Around the reduction schedules' thresholds (32 and 3072 elements per row, 64 rows per column
# tile, split rows of >= 8192 elements when <= 64 rows): the last size of one schedule and the
# first of the next.
# Half-precision models ("dtype"): dscc-run's tolerances by dtype (f16 1e-2, bf16 6e-2); bert in
# f16 5e-2 (f16 tensor-op matmuls with fp32 accumulation vs the interpreter's).
# bert_layer's tolerance is wider: exact-fp32 cuBLAS against the interpreter's matmuls through
# two layer norms (docs/gpu-runtime.md); the others keep dscc-run's default 1e-4.
checks() {
  local d=1e-4,1e-4
  cat <<EOF
elementwise_chain|N=16384 D=4096|$d
elementwise_chain|N=1000000 D=1|$d
elementwise_chain|N=1 D=4096|$d
elementwise_chain|N=1 D=1|$d
elementwise_chain|N=3 D=7|$d
elementwise_chain|N=5 D=8|$d
elementwise_chain|N=2 D=9|$d
elementwise_chain|N=17 D=15|$d
elementwise_chain|N=16 D=16|$d
elementwise_chain|N=9 D=17|$d
elementwise_chain|N=33 D=63|$d
elementwise_chain|N=64 D=64|$d
elementwise_chain|N=65 D=65|$d
elementwise_chain|N=0 D=8|reject
elementwise_chain|N=1 D=4097|reject
col_reduce|N=8192 D=8192|$d
col_reduce|N=1000000 D=1|$d
col_reduce|N=1 D=8192|$d
col_reduce|N=1 D=1|$d
col_reduce|N=7 D=7|$d
col_reduce|N=8 D=8|$d
col_reduce|N=9 D=9|$d
col_reduce|N=15 D=16|$d
col_reduce|N=17 D=17|$d
col_reduce|N=63 D=64|$d
col_reduce|N=65 D=65|$d
col_reduce|N=64 D=33|$d
col_reduce|N=100000 D=3|$d
col_reduce|N=4097 D=1000|$d
col_reduce|N=0 D=8|reject
col_reduce|N=1 D=8193|reject
gelu_bias|T=32768|$d
gelu_bias|T=1|$d
gelu_bias|T=7|$d
gelu_bias|T=8|$d
gelu_bias|T=9|$d
gelu_bias|T=16|$d
gelu_bias|T=17|$d
gelu_bias|T=65|$d
gelu_bias|T=0|reject
layer_norm|N=4096 D=16384|$d
layer_norm|N=65536 D=1024|$d
layer_norm|N=65536 D=1|$d
layer_norm|N=1 D=16384|$d
layer_norm|N=1 D=1|$d
layer_norm|N=7 D=7|$d
layer_norm|N=8 D=8|$d
layer_norm|N=9 D=9|$d
layer_norm|N=15 D=15|$d
layer_norm|N=16 D=16|$d
layer_norm|N=17 D=17|$d
layer_norm|N=63 D=63|$d
layer_norm|N=64 D=64|$d
layer_norm|N=65 D=65|$d
layer_norm|N=3 D=513|$d
layer_norm|N=5 D=31|$d
layer_norm|N=5 D=32|$d
layer_norm|N=5 D=1023|$d
layer_norm|N=5 D=1024|$d
layer_norm|N=5 D=1025|$d
layer_norm|N=5 D=3071|$d
layer_norm|N=5 D=3072|$d
layer_norm|N=5 D=3073|$d
layer_norm|N=2 D=8191|$d
layer_norm|N=2 D=8192|$d
layer_norm|N=64 D=12288|$d
layer_norm|N=65 D=8192|$d
layer_norm|N=1 D=10001|$d
layer_norm|N=5 D=0|reject
layer_norm|N=1 D=16385|reject
rms_norm|T=16384|$d
rms_norm|T=1|$d
rms_norm|T=7|$d
rms_norm|T=8|$d
rms_norm|T=9|$d
rms_norm|T=16|$d
rms_norm|T=17|$d
rms_norm|T=64|$d
rms_norm|T=0|reject
softmax|B=1 S=2048|$d
softmax|B=64 S=256|$d
softmax|B=64 S=1|$d
softmax|B=1 S=1|$d
softmax|B=1 S=7|$d
softmax|B=2 S=8|$d
softmax|B=3 S=9|$d
softmax|B=1 S=15|$d
softmax|B=2 S=16|$d
softmax|B=1 S=17|$d
softmax|B=1 S=63|$d
softmax|B=2 S=64|$d
softmax|B=1 S=65|$d
softmax|B=1 S=31|$d
softmax|B=1 S=32|$d
softmax|B=1 S=1023|$d
softmax|B=1 S=1024|$d
softmax|B=0 S=8|reject
softmax|B=65 S=1|reject
bert_layer|B=2 S=512|1e-3,1e-3
bert_layer|B=64 S=16|1e-3,1e-3
bert_layer|B=1 S=1|1e-3,1e-3
bert_layer|B=1 S=7|1e-3,1e-3
bert_layer|B=2 S=8|1e-3,1e-3
bert_layer|B=1 S=9|1e-3,1e-3
bert_layer|B=3 S=17|1e-3,1e-3
bert_layer|B=1 S=64|1e-3,1e-3
bert_layer|B=2 S=65|1e-3,1e-3
bert_layer|B=0 S=8|reject
bert_layer|B=1 S=513|reject
bert_layer_f16|B=8 S=128|5e-2,5e-2
bert_layer_f16|B=1 S=1|5e-2,5e-2
bert_layer_f16|B=2 S=17|5e-2,5e-2
bert_layer_f16|B=1 S=64|5e-2,5e-2
layer_norm_f16|N=64 D=4096|dtype
layer_norm_f16|N=1 D=16384|dtype
layer_norm_f16|N=1000 D=768|dtype
layer_norm_f16|N=7 D=31|dtype
layer_norm_f16|N=9 D=33|dtype
layer_norm_f16|N=3 D=1023|dtype
layer_norm_f16|N=3 D=1025|dtype
layer_norm_f16|N=3 D=3071|dtype
layer_norm_f16|N=3 D=3072|dtype
layer_norm_bf16|N=64 D=4096|dtype
layer_norm_bf16|N=1000 D=768|dtype
layer_norm_bf16|N=7 D=31|dtype
layer_norm_bf16|N=5 D=1024|dtype
softmax_f16|B=2 S=512|dtype
softmax_f16|B=1 S=31|dtype
softmax_f16|B=1 S=32|dtype
softmax_f16|B=1 S=1024|dtype
col_reduce_f16|N=4096 D=1000|dtype
col_reduce_f16|N=63 D=64|dtype
col_reduce_f16|N=64 D=65|dtype
EOF
}

# Runs check number $1 (a line of checks()) and leaves check-N.log / check-N.rc.
run_check() {
  local n="$1" w dims tol cmd rc
  IFS='|' read -r w dims tol <<<"$2"
  cmd=("$RUN" run "$PACK/$w.so" --random --seed "$n" --check)
  for d in $dims; do cmd+=(--dim "$d"); done
  [[ "$tol" != reject && "$tol" != dtype ]] && cmd+=(--atol "${tol%,*}" --rtol "${tol#*,}")
  echo "\$ ${cmd[*]}" >"$LOGS/check-$n.log"
  # A hang must not eat the lease: 150 s is ten times the slowest check seen on the CPU side.
  timeout 150 "${cmd[@]}" >>"$LOGS/check-$n.log" 2>&1
  rc=$?
  echo "$rc" >"$LOGS/check-$n.rc"
}

: >"$LOGS/checks.tsv"   # workload \t dims \t kind \t result \t detail
t=$SECONDS
if [[ ! -x "$RUN" ]]; then
  fail checks "not run: dscc-run was not built"
elif [[ $HAVE_GPU == 0 ]]; then
  # Host side only: every model must load against the new runtime and be refused cleanly.
  bad=0
  for w in "${WORKLOADS[@]}"; do
    out=$("$RUN" run "$PACK/$w.so" --random --dim B=1 --dim S=1 --dim N=1 --dim D=1 --dim T=1 --check 2>&1); rc=$?
    if [[ $rc == 1 && "$out" == *"no CUDA device can be used here"* ]]; then :; else
      bad=$((bad + 1)); echo "$w: rc=$rc: $out" >>"$LOGS/host-side.log"; fi
  done
  if [[ $bad == 0 ]]; then
    step checks "skipped: no GPU" "each of the ${#WORKLOADS[@]} models loads against $RUNTIME and is refused with 'no CUDA device can be used here'"
  else
    fail checks "$bad model(s) did not load or were not refused cleanly (gpu-check-logs/host-side.log)"
  fi
else
  mapfile -t LINES < <(checks)
  # Largest first (they are listed first), so the long ones overlap the many short ones.
  for i in "${!LINES[@]}"; do
    while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n; done
    run_check "$i" "${LINES[$i]}" &
  done
  wait
  pass=0; total=${#LINES[@]}
  for i in "${!LINES[@]}"; do
    IFS='|' read -r w dims tol <<<"${LINES[$i]}"
    rc=$(cat "$LOGS/check-$i.rc" 2>/dev/null || echo 255)
    log="$LOGS/check-$i.log"
    if [[ "$tol" == reject ]]; then
      # Refused by the model itself: exit 1 with FACT_VIOLATED and no "ran @" line (a model that ran and
      # left the interpreter to object fails), not a crash (signal), a hang (124) or a pass.
      if [[ $rc == 1 ]] && grep -q "FACT_VIOLATED" "$log" && ! grep -q "^ran @" "$log"; then r=ok; else r=FAIL; fi
      detail="rc=$rc: $(grep -m1 "error" "$log" | cut -c1-100)"
    else
      if [[ $rc == 0 ]] && grep -q "^check: ok" "$log"; then r=ok; else r=FAIL; fi
      # the worst max_abs_err over the outputs, as dscc-run prints it
      detail="rc=$rc $(grep -o 'max_abs_err=[^ ]* max_rel_err=[^ ]*' "$log" | sort -t= -k2 -g | tail -1)"
      [[ $r == FAIL ]] && detail="$detail $(grep -m1 -E 'FAIL|error' "$log" | cut -c1-120)"
    fi
    [[ $r == ok ]] && pass=$((pass + 1))
    printf '%s\t%s\t%s\t%s\t%s\n' "$w" "$dims" "$( [[ $tol == reject ]] && echo reject || echo check)" "$r" "$detail" >>"$LOGS/checks.tsv"
  done
  if [[ $pass == "$total" ]]; then step checks ok "$pass/$total in $((SECONDS - t)) s ($JOBS in parallel)"
  else fail checks "$((total - pass)) of $total failed (gpu-check-logs/checks.tsv)"; fi
fi

# ---------------------------------------------------------------------------------------------
# (d) benchmark, with what is left of the budget
t=$SECONDS
left=$(( BUDGET_S - (SECONDS - T0) ))
(( left < 60 )) && left=60
PY=python3
if [[ $HAVE_GPU == 0 && -x bench/.venv/bin/python ]]; then PY=bench/.venv/bin/python; fi   # here: torch without CUDA
PYTHONUNBUFFERED=1 timeout $((left + 60)) "$PY" bench/bench_gpu.py --runtime "$RUNTIME" \
  --pack "$PACK" --budget-s "$left" --out "$LOGS/bench.md" --json "$LOGS/bench.json" >"$LOGS/bench.log" 2>&1
rc=$?
if [[ $rc != 0 ]]; then
  fail bench "bench_gpu.py exit $rc after $((SECONDS - t)) s: $(grep -m1 -E '✗|error|Error' "$LOGS/bench.log" | cut -c1-140)"
elif grep -q "skipped: no GPU" "$LOGS/bench.log"; then
  step bench "skipped: no GPU" "$(grep -m1 -o 'no GPU (.*)' "$LOGS/bench.log")"
else
  step bench ok "$((SECONDS - t)) s; full table in bench.md"
fi

# ---------------------------------------------------------------------------------------------
# (e) the one table
step total "$([[ $FAILED == 0 ]] && echo PASS || echo FAIL)" "$((SECONDS - T0)) s"
python3 - "$LOGS" >"$LOGS/summary.md" <<'PY'
import json, sys
from pathlib import Path
logs = Path(sys.argv[1])
steps = [l.split("\t") for l in (logs / "steps.tsv").read_text().splitlines() if l]
checks = [l.split("\t") for l in (logs / "checks.tsv").read_text().splitlines() if l]
bench = {}
if (logs / "bench.json").exists():
    bench = json.loads((logs / "bench.json").read_text())
copy = bench.get("copy_gbs")
rows = {r["name"]: r for r in bench.get("results", [])}

def ms(t):
    return "n/a" if t is None else (f"{t * 1e3:.3g}" if t < 0.1 else f"{t * 1e3:.0f}")

print("| item | result | checks (pass/all, worst abs err) | largest bench point | dscc ms | GB/s (% copy) | eager ms | compile ms | notes |")
print("|---|---|---|---|---:|---|---:|---:|---|")
for name, result, detail in steps:
    if name in ("checks", "bench", "total"):
        continue
    print(f"| {name} | {result} | | | | | | | {detail} |")
names = list(dict.fromkeys([c[0] for c in checks] + list(rows)))
for w in names:
    cs = [c for c in checks if c[0] == w]
    ok = sum(c[3] == "ok" for c in cs)
    # abs, not rel: relative errors of near-zero outputs are large and meaningless (the pass test is atol + rtol)
    rels = [float(x.split("=")[1]) for c in cs for x in c[4].split() if x.startswith("max_abs_err=")]
    failed = [c[1] for c in cs if c[3] != "ok"]
    r = rows.get(w, {})
    timed = [x for x in r.get("rows", []) if x.get("dscc")]
    big = timed[-1] if timed else {}
    d = big.get("dscc")
    gbs = big["mb"] * 1e6 / d / 1e9 if d else None
    bad_pts = sum(1 for x in r.get("rows", []) if x.get("bad") or x.get("error"))
    res = "FAIL" if failed or r.get("failed") else "ok"
    notes = []
    if failed:
        notes.append("failed: " + ", ".join(failed))
    if bad_pts:
        notes.append(f"{bad_pts} bench point(s) differ from eager")
    if w == "bert_layer" and r.get("rows"):
        rec = sum(x.get("recompiles", 0) for x in r["rows"])
        notes.append(f"torch.compile graphs over {len(r['rows'])} shapes: {rec}")
    notes += r.get("notes", [])
    pt = " ".join(f"{k}={v}" for k, v in big.get("point", {}).items()) or "—"
    gb = "n/a" if gbs is None else f"{gbs:.0f}" + (f" ({100 * gbs / copy:.0f}%)" if copy else "")
    worst = f", {max(rels):.2g}" if rels else ""
    print(f"| {w} | {res} | {ok}/{len(cs)}{worst} | {pt} | {ms(d)} | {gb} | "
          f"{ms(big.get('eager'))} | {ms(big.get('compile'))} | {'; '.join(notes)} |")
for name, result, detail in steps:
    if name in ("checks", "bench", "total"):
        print(f"| {name} | {result} | | | | | | | {detail} |")
if copy:
    print(f"\ncopy bandwidth {copy:.0f} GB/s on {bench.get('device')}; per-point numbers: bench.md")
PY
[[ -s "$LOGS/summary.md" ]] || { echo "gpu-check: the summary could not be made" >&2; FAILED=1; }
if [[ -n "${OUT:-}" ]]; then
  # $OUT brings back at most 8 files: the table, the bench report, the check list, and one archive of the rest.
  cp "$LOGS/summary.md" "$OUT/summary.md"
  cp "$LOGS/checks.tsv" "$OUT/checks.tsv"
  [[ -f "$LOGS/bench.md" ]] && cp "$LOGS/bench.md" "$OUT/bench.md"
  tar -czf "$OUT/gpu-check-logs.tar.gz" -C "$BUILD" gpu-check-logs
fi
cat "$LOGS/summary.md"
exit $FAILED
