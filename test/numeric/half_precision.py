#!/usr/bin/python3
"""f16 and bf16 in generated code: compiled models against the reference interpreter.

Usage: /usr/bin/python3 test/numeric/half_precision.py PATH/TO/dscc [-j JOBS] [-v]

1. Rounding, exactly: a program that casts chosen f32 values (rounding ties
   to even and odd, the largest finite, values that overflow to infinity,
   subnormals, values that flush to zero, -0, NaN, +-inf) to f16 or bf16, runs
   elementwise ops on them (each op's f16/bf16 result must be rounded, as the
   interpreter rounds every op's result), and casts back, is compiled for the
   CPU and run with `--check --atol 0 --rtol 0`: every output bit-equal to the
   interpreter's (NaN-ness equal).
2. The six memory-bound shared workloads with every f32 made f16 and bf16
   (elementwise, stitch and input kernels, vector and scalar versions) are
   compiled once and run with `--random --check` at sizes around the vector
   widths (1, 7/8/9, 15/16/17, 31/32/33, 63/64/65 on the innermost dim) and a
   few larger ones; the tolerance is dscc-run's default for the dtype (f16:
   1e-2 absolute + 1e-2 relative, about 10 units in the last place; bf16:
   6e-2, about 8), which the check line must show.
3. Refusals: an f32 .npy given for an f16 argument (a dtype mismatch, exit 1
   naming the input and both dtypes), and bert_layer in f16 for the CPU target (matmul of
   f16 needs a GPU target: a clear error, exit 1).

Prints a line per case and a summary; exits 1 on any failure.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOADS = os.path.join(ROOT, "bench", "workloads")

ROUNDING = """\
func @round(%x: f32[N]) -> (f32[N], f32[N], f32[N], DT[N])
    where N in [1, 4096] {
  %h = cast %x {to = DT}
  %s = add %h, %h
  %p = mul %h, %h
  %e = exp %h
  %q = sub %p, %s
  %back = cast %h {to = f32}
  %sq = cast %q {to = f32}
  %ee = cast %e {to = f32}
  return %back, %sq, %ee, %p
}
"""

# (workload, list of size dicts)
SIZES = {
    "elementwise_chain": [{"N": n, "D": d} for n, d in
                          [(1, 1), (3, 7), (5, 8), (2, 9), (4, 15), (3, 16), (2, 17), (3, 31), (2, 32), (3, 33),
                           (2, 63), (2, 64), (2, 65), (257, 768)]],
    "col_reduce": [{"N": n, "D": d} for n, d in
                   [(1, 1), (7, 7), (8, 8), (9, 9), (63, 15), (64, 16), (65, 17), (3, 64), (100, 65), (1000, 96)]],
    "gelu_bias": [{"T": t} for t in [1, 2, 7, 8, 9, 33]],
    "layer_norm": [{"N": n, "D": d} for n, d in
                   [(1, 1), (7, 7), (8, 8), (9, 9), (3, 15), (3, 16), (3, 17), (5, 31), (5, 32), (5, 33),
                    (4, 63), (4, 64), (4, 65), (3, 768), (2, 1023), (2, 1024), (2, 3000)]],
    "rms_norm": [{"T": t} for t in [1, 2, 7, 8, 9, 17]],
    "softmax": [{"B": b, "S": s} for b, s in [(1, 1), (1, 7), (1, 8), (1, 9), (1, 16), (1, 17), (2, 31), (1, 32),
                                              (1, 33), (1, 64), (1, 65)]],
}
TOL = {"f16": "atol=0.01 rtol=0.01", "bf16": "atol=0.06 rtol=0.06"}


def run(cmd, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def rounding_inputs(dt):
    """Values that exercise every branch of the f32 -> dt conversion."""
    if dt == "f16":
        ulp1 = 2.0 ** -10
        v = [0.1, 1 / 3, 65504.0, 65519.0, 65520.0, 1e5, 6e-8, 3e-8, 2.9e-8, 1e-9, 6.1e-5, 1 + ulp1 / 2,
             1 + 3 * ulp1 / 2, 2048 + 1, 2048 + 3, 255.9, -0.0, 0.0]
    else:
        ulp1 = 2.0 ** -7
        v = [0.1, 1 / 3, 3.3895e38, 3.4e38, 1e-39, 1e-45, 1 + ulp1 / 2, 1 + 3 * ulp1 / 2, 256 + 1, 256 + 3,
             -0.0, 0.0, 7.0e4]
    v += [float("nan"), float("inf"), float("-inf"), -2.5, 11.0]
    rng = np.random.default_rng(5)
    v += list(rng.uniform(-20, 20, 64 - len(v)))  # random non-zero data too
    return np.array(v, dtype=np.float32)


def case_rounding(dscc, dt, tmp):
    src = os.path.join(tmp, f"round_{dt}.dsc")
    open(src, "w").write(ROUNDING.replace("DT", dt))
    so = os.path.join(tmp, f"round_{dt}.so")
    rc, out, err = run([dscc, "compile", src, "-o", so])
    if rc != 0:
        return False, f"compile: {err.strip()[-300:]}"
    x = os.path.join(tmp, f"round_{dt}_x.npy")
    np.save(x, rounding_inputs(dt))
    rc, out, err = run([dscc, "run", so, "-i", f"x={x}", "--check", "--atol", "0", "--rtol", "0"])
    ok = rc == 0 and "check: ok" in out and out.count(" ok (atol=0 rtol=0)") == 4
    return ok, (out + err).strip().replace("\n", " | ")[-400:]


def case_workload(dscc, so, dt, env, seed):
    cmd = [dscc, "run", so, "--random", "--seed", str(seed), "--check", "--threads", str(1 + seed % 2)]
    for k, v in env.items():
        cmd += ["--dim", f"{k}={v}"]
    rc, out, err = run(cmd)
    ok = rc == 0 and "check: ok" in out and f"ok ({TOL[dt]})" in out
    detail = " ".join(re.findall(r"max_abs_err=\S+ max_rel_err=\S+", out)) or (out + err).strip()[-300:]
    return ok, detail


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dscc")
    ap.add_argument("-j", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("-v", action="store_true")
    opt = ap.parse_args()
    dscc = os.path.abspath(opt.dscc)
    failures, total = [], 0

    def report(name, ok, detail):
        nonlocal total
        total += 1
        if not ok:
            failures.append(f"{name}: {detail}")
        if opt.v or not ok:
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)

    with tempfile.TemporaryDirectory(prefix="dscc-half-") as tmp:
        for dt in ("f16", "bf16"):
            ok, d = case_rounding(dscc, dt, tmp)
            report(f"rounding {dt}", ok, d)
        jobs = []
        with concurrent.futures.ThreadPoolExecutor(opt.j) as pool:
            for dt in ("f16", "bf16"):
                for w, sizes in SIZES.items():
                    text = open(os.path.join(WORKLOADS, f"{w}.dsc")).read()
                    src = os.path.join(tmp, f"{w}_{dt}.dsc")
                    open(src, "w").write(re.sub(r"\bf32\b", dt, text))
                    so = os.path.join(tmp, f"{w}_{dt}.so")
                    rc, out, err = run([dscc, "compile", src, "-o", so])
                    if rc != 0:
                        report(f"{w} {dt} compile", False, err.strip()[-300:])
                        continue
                    for i, env in enumerate(sizes):
                        name = f"{w} {dt} {' '.join(f'{k}={v}' for k, v in env.items())}"
                        jobs.append((name, pool.submit(case_workload, dscc, so, dt, env, 100 + i)))
            for name, fut in jobs:
                report(name, *fut.result())

        # Refusals.
        so = os.path.join(tmp, "layer_norm_f16.so")
        x = os.path.join(tmp, "x32.npy")
        np.save(x, np.random.default_rng(1).uniform(-1, 1, (3, 8)).astype(np.float32))
        g = os.path.join(tmp, "g16.npy")
        np.save(g, np.ones(8, dtype=np.float16))
        rc, out, err = run([dscc, "run", so, "-i", f"x={x}", "-i", f"g={g}", "-i", f"b={g}"])
        report("f32 .npy for an f16 argument is refused", rc == 1 and "input 0 (%x) has dtype f32; expected f16" in err,
               f"rc={rc}: {err.strip()[-200:]}")
        text = open(os.path.join(WORKLOADS, "bert_layer.dsc")).read()
        src = os.path.join(tmp, "bert_f16.dsc")
        open(src, "w").write(re.sub(r"\bf32\b", "f16", text))
        # The cpu's BLAS is fp32: its f16 matmuls are generic kernels, checked like the others.
        so = os.path.join(tmp, "bert_f16.so")
        rc, out, err = run([dscc, "compile", src, "-o", so])
        report("bert_layer f16 for the cpu target compiles (generic matmuls)", rc == 0, f"rc={rc}: {err.strip()[-200:]}")
        if rc == 0:
            for i, env in enumerate([{"B": 1, "S": 1}, {"B": 1, "S": 7}, {"B": 2, "S": 16}]):
                ok, d = case_workload(dscc, so, "f16", env, 200 + i)
                report("bert_layer f16 cpu " + " ".join(f"{k}={v}" for k, v in env.items()), ok, d)

    print(f"half_precision: {total - len(failures)} of {total} cases passed")
    for f in failures:
        print("  FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
