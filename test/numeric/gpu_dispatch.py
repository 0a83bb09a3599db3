#!/usr/bin/python3
"""GPU models' generated host code, run on the CPU: the versions it launches are the ones `dscc explain` names.

Usage: /usr/bin/python3 test/numeric/gpu_dispatch.py PATH/TO/dscc PATH/TO/libdscc-cuda-record.so [-v]

Each shared workload (and layer_norm and bert_layer in f16) is compiled for
cuda:sm_90 and run with `dscc run W.so --random` under LD_PRELOAD of the
test's CUDA stand-in (test/shim/cuda_record.cpp: host memory as device
memory, launches and gemms printed instead of run), at sizes around every
guard: the vector width (the kernel's 16-byte width, 4 or 8), the warp,
block, tile and split thresholds, range ends. The generated host code runs
for real: input checks, facts, the guard cascade, the arena and the
workspace, the launch sequence. For every size:

* the kernels launched, in order, are exactly those `dscc explain` says run
  (`runs:` per kernel; a split version as its phases + 1 launches, `_p0`,
  `_p1`, ...), besides the operand copies of library kernels;
* each launch's grid is what the schedule needs: ceil(units / W / 256) for
  loop kernels, ceil(units / 256) one per thread, ceil(32 units / 256) a warp
  per row, units a block per row, ceil(units / 32) column tiles (a tile
  split: ceil(chunks x units / 32), then ceil(units / 256)), units x
  ceil(row / 2048) split chunks (capped at 2^20), with 256 threads a block;
* bert_layer's gemms are the 8 matmuls of a layer, f16 ones as hgemm;
* a size breaking a `where` fact is refused (FACT_VIOLATED) before any launch.

Exit 77 (skipped, as ctest reports it) when the CUDA toolkit's libdevice is
missing, since the workloads' exp/erf/tanh need it to compile; exit 1 on any
mismatch.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOADS = os.path.join(ROOT, "bench", "workloads")
LIBDEVICE = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
BLOCK = 256
CHUNK = 2048

SIZES = {
    "elementwise_chain": [{"N": 3, "D": 7}, {"N": 5, "D": 8}, {"N": 1, "D": 4096}, {"N": 1000, "D": 1}],
    "col_reduce": [{"N": 63, "D": 64}, {"N": 64, "D": 64}, {"N": 64, "D": 66}, {"N": 1, "D": 1}, {"N": 1023, "D": 40},
                   {"N": 1024, "D": 40}, {"N": 100000, "D": 3}],
    "gelu_bias": [{"T": 1}, {"T": 17}],
    "layer_norm": [{"N": 5, "D": 31}, {"N": 5, "D": 32}, {"N": 5, "D": 1023}, {"N": 5, "D": 1024},
                   {"N": 5, "D": 3071}, {"N": 5, "D": 3072},
                   {"N": 2, "D": 8191}, {"N": 2, "D": 8192}, {"N": 64, "D": 8192}, {"N": 65, "D": 8192},
                   {"N": 1, "D": 16384}, {"N": 3, "D": 1}, {"N": 65536, "D": 2}],
    "rms_norm": [{"T": 1}, {"T": 65}],
    "softmax": [{"B": 1, "S": 31}, {"B": 1, "S": 32}, {"B": 2, "S": 1023}, {"B": 1, "S": 1024}, {"B": 1, "S": 2048}],
    "bert_layer": [{"B": 1, "S": 1}, {"B": 2, "S": 9}, {"B": 1, "S": 32}, {"B": 3, "S": 64}],
    "layer_norm_f16": [{"N": 3, "D": 8}, {"N": 3, "D": 12}, {"N": 2, "D": 8192}, {"N": 7, "D": 1000}],
    "bert_layer_f16": [{"B": 1, "S": 16}],
}
REJECT = {"layer_norm": {"N": 1, "D": 16385}, "softmax": {"B": 65, "S": 1}, "bert_layer": {"B": 1, "S": 513}}


def preload_env(shim):
    """The environment with the CUDA stand-in preloaded after whatever is preloaded already (a sanitizer build's
    ASan runtime must stay first)."""
    return dict(os.environ, LD_PRELOAD=" ".join(p for p in (os.environ.get("LD_PRELOAD", ""), shim) if p))


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    return p.returncode, p.stdout, p.stderr


def dims(env):
    out = []
    for k, v in env.items():
        out += ["--dim", f"{k}={v}"]
    return out


def cident(name):
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def expected_grid(version, units, row):
    """Blocks the host should launch for `version` of a kernel with `units` units of `row` elements."""
    parts = version.split(".")
    w = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d+", p)), 1)
    if "warp" in parts:
        t = units * 32
    elif "block" in parts:
        t = units * BLOCK
    elif "tile" in parts:
        t = -(-units // 32) * BLOCK
    elif "split" in parts:
        t = units * max(1, -(-row // CHUNK)) * BLOCK
    else:
        t = -(-units // w) if row == 1 else units  # loop kernels: blocks of W elements; reductions: a thread each
    return min(-(-t // BLOCK), 1 << 20)


def check_size(dscc, shim, src, so, env, verbose):
    rc, out, err = run([dscc, "explain", src, "--target=cuda:sm_90"] + dims(env))
    if rc != 0:
        return f"explain failed: {err.strip()[-300:]}"
    kernels = []  # (function name, units, row)
    units = row = None
    for line in out.splitlines():
        m = re.match(r"\s+units .* = (\d+), elements per unit (\d+)", line)
        if m:
            units, row = int(m.group(1)), int(m.group(2))
        m = re.match(r"\s+runs: (\S+)", line)
        if m:
            kernels.append((m.group(1), units, row))
    renv = preload_env(shim)
    rc, out, err = run([dscc, "run", so, "--random", "--seed", "3"] + dims(env), env=renv)
    if rc != 0:
        return f"run failed (rc={rc}): {err.strip()[-300:]}"
    launches = [(m.group(1), int(m.group(2))) for m in re.finditer(r"dscc-cuda-record: launch (\S+) grid=(\d+) block=256", err)]
    gemms = re.findall(r"dscc-cuda-record: gemm (\w+)", err)
    launches = [l for l in launches if "_copy_" not in l[0]]
    want = []
    for name, u, r in kernels:
        version = name.split(".", 3)[3] if name.count(".") >= 3 else ""
        if u == 0 or r is None:
            continue  # an empty kernel is not launched
        g = expected_grid(version, u, r)
        if ".tile.rows" in name:
            # tile split (col_reduce: the reduced rows are the unit's elements): chunks of
            # max(ceil(rows / 64), 256) rows; launch 0 a block per 32 (chunk, output) units,
            # launch 1 a thread per output
            chunk_rows = max(-(-r // 64), 256)
            chunks = max(1, -(-r // chunk_rows))
            want += [(cident(name) + "_p0", min(-(-(chunks * u) // 32), 1 << 20)),
                     (cident(name) + "_p1", min(-(-u // BLOCK), 1 << 20))]
        elif ".split." in name or name.split(".")[3:4] == ["split"]:
            phases = 3 if "layer_norm" in name else 2  # layer_norm: mean, variance, elements; sums: sum, store
            want += [(cident(name) + f"_p{p}", g) for p in range(phases)]
        else:
            want.append((cident(name), g))
    if verbose:
        print("   ", env, [l[0] for l in launches])
    if [l[0] for l in launches] != [w[0] for w in want]:
        return f"launched {[l[0] for l in launches]}, explain says {[w[0] for w in want]}"
    for (n, g), (_, wg) in zip(launches, want):
        if g != wg:
            return f"{n}: grid {g}, expected {wg}"
    if "bert_layer" in src and len(gemms) != 8:
        return f"{len(gemms)} gemms, expected 8: {gemms}"
    if "bert_layer_f16" in src and set(gemms) != {"hgemm"}:
        return f"f16 gemms are {set(gemms)}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dscc")
    ap.add_argument("shim")
    ap.add_argument("-v", action="store_true")
    opt = ap.parse_args()
    if not os.path.exists(LIBDEVICE):
        print(f"gpu_dispatch: skipped: {LIBDEVICE} not found (the CUDA toolkit compiles exp/erf/tanh for the GPU)")
        return 77
    dscc, shim = os.path.abspath(opt.dscc), os.path.abspath(opt.shim)
    failures, total = [], 0
    with tempfile.TemporaryDirectory(prefix="dscc-dispatch-") as tmp:
        for w, sizes in SIZES.items():
            base = w.replace("_f16", "")
            src = os.path.join(WORKLOADS, base + ".dsc")
            if w.endswith("_f16"):
                text = re.sub(r"\bf32\b", "f16", open(src).read())
                src = os.path.join(tmp, w + ".dsc")
                open(src, "w").write(text)
            so = os.path.join(tmp, w + ".so")
            rc, out, err = run([dscc, "compile", src, "--target=cuda:sm_90", "-o", so])
            if rc != 0:
                failures.append(f"{w}: compile: {err.strip()[-300:]}")
                continue
            for env in sizes:
                total += 1
                e = check_size(dscc, shim, src, so, env, opt.v)
                if e:
                    failures.append(f"{w} {env}: {e}")
            if base in REJECT and not w.endswith("_f16"):
                total += 1
                renv = preload_env(shim)
                rc, out, err = run([dscc, "run", so, "--random"] + dims(REJECT[base]), env=renv)
                if rc != 1 or "FACT_VIOLATED" not in err or "dscc-cuda-record: launch" in err:
                    failures.append(f"{w} {REJECT[base]}: not refused before any launch (rc={rc}): {err.strip()[-300:]}")
    print(f"gpu_dispatch: {total - len(failures)} of {total} cases passed")
    for f in failures:
        print("  FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
