#!/usr/bin/python3
# Softmax over the first axis: dscc's column plan against the same softmax done as transpose + row softmax + transpose, and PyTorch.
"""Usage: bench/axis_softmax.py DSCC [--calls 50]

Compiles three programs with dscc: `softmax {axis = 0}` of f32[N, D] (the
column plan: column-reduction input kernels and loop kernels), the same
result computed as transpose -> row softmax (a stitch kernel) -> transpose,
and a row softmax of f32[D, N] alone (one stitch kernel over the same
data: the cost of one fused pass). Times each with `dscc run --bench`
(median of CALLS, 2 threads) and, when importable, PyTorch's
`torch.softmax(x, 0)` (2 threads), and prints ratios (other / column plan).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

PROGRAMS = {
    "col": "func @col(%x: f32[N, D]) -> f32[N, D] where N in [1, 100000], D in [1, 100000] {\n"
           "  %y = softmax %x {axis = 0}\n  return %y\n}\n",
    "trans": "func @trans(%x: f32[N, D]) -> f32[N, D] where N in [1, 100000], D in [1, 100000] {\n"
             "  %t = transpose %x\n  %s = softmax %t {axis = 1}\n  %y = transpose %s\n  return %y\n}\n",
    "row": "func @row(%x: f32[D, N]) -> f32[D, N] where N in [1, 100000], D in [1, 100000] {\n"
           "  %y = softmax %x {axis = 1}\n  return %y\n}\n",
}
SHAPES = [(512, 1024), (64, 4096), (4096, 64), (1024, 1024), (128, 30522)]


def bench(dscc, so, n, d, calls):
    out = subprocess.run([dscc, "run", so, "--random", "--dim", "N=%d" % n, "--dim", "D=%d" % d, "--bench", str(calls),
                          "--threads", "2"], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([\d.]+) ms", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dscc")
    ap.add_argument("--calls", type=int, default=50)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dscc-axis-")
    sos = {}
    for name, text in PROGRAMS.items():
        src = os.path.join(work, name + ".dsc")
        with open(src, "w") as f:
            f.write(text)
        sos[name] = os.path.join(work, name + ".so")
        subprocess.run([a.dscc, "compile", src, "-o", sos[name]], check=True)
    try:
        import torch
        torch.set_num_threads(2)
    except ImportError:
        torch = None
    print("| N x D | column plan (ms) | transpose+row+transpose | row softmax alone | torch softmax(dim=0) |")
    print("|---|---|---|---|---|")
    for n, d in SHAPES:
        t = {k: bench(a.dscc, so, n, d, a.calls) for k, so in sos.items()}
        cell = lambda k: "%.3f (%.2fx)" % (t[k], t[k] / t["col"])
        tt = ""
        if torch is not None:
            x = torch.randn(n, d)
            times = []
            for _ in range(a.calls):
                s = time.perf_counter()
                torch.softmax(x, 0)
                times.append((time.perf_counter() - s) * 1e3)
            tm = sorted(times)[len(times) // 2]
            tt = "%.3f (%.2fx)" % (tm, tm / t["col"])
        print("| %d x %d | %.3f | %s | %s | %s |" % (n, d, t["col"], cell("trans"), cell("row"), tt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
