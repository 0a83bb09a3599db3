#!/usr/bin/env python3
"""Checks that the default pipeline (decompose, cleanup, fuse) does not change
results: every shared workload, unfused and fused, run by the interpreter on the
same random inputs at random sizes, must agree.

usage: fusion_equivalence.py DSCC DSCC_OPT
Tolerance: rtol 1e-5, atol 1e-5 (decomposition reorders float arithmetic).
"""
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORK = os.path.join(ROOT, "bench", "workloads")

# Symbols and small ranges to draw from (within each workload's facts).
SIZES = {
    "bert_layer": {"B": (1, 3), "S": (1, 24)},
    "softmax": {"B": (1, 3), "S": (1, 40)},
    "layer_norm": {"N": (1, 40), "D": (1, 700)},
    "gelu_bias": {"T": (1, 9)},
    "elementwise_chain": {"N": (1, 60), "D": (1, 300)},
    "col_reduce": {"N": (1, 300), "D": (1, 300)},
    "rms_norm": {"T": (1, 9)},
}
DRAWS = 4


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    dscc, opt = sys.argv[1], sys.argv[2]
    rng = random.Random(11)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, syms in SIZES.items():
            src = os.path.join(WORK, name + ".dsc")
            fused = os.path.join(tmp, name + ".fused.dsc")
            rc, out = run([opt, src, "--default-pipeline", "-o", fused])
            if rc != 0:
                failures.append(f"{name}: dscc-opt failed: {out}")
                continue
            points = [{s: lo for s, (lo, hi) in syms.items()}, {s: hi for s, (lo, hi) in syms.items()}]
            points += [{s: rng.randint(lo, hi) for s, (lo, hi) in syms.items()} for _ in range(DRAWS)]
            for k, pt in enumerate(points):
                dims = [a for s, v in pt.items() for a in ("--dim", f"{s}={v}")]
                outs = []
                for prog, tag in ((src, "ref"), (fused, "fused")):
                    d = os.path.join(tmp, f"{name}.{k}.{tag}")
                    rc, out = run([dscc, "run", prog, "--random", "--seed", str(k), *dims, "-o", d])
                    if rc != 0:
                        failures.append(f"{name} {pt} {tag}: {out}")
                        break
                    outs.append(np.load(os.path.join(d, "out0.npy")))
                if len(outs) != 2:
                    continue
                a, b = outs
                ok = a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-5)
                err = float(np.max(np.abs(a.astype(np.float64) - b))) if a.shape == b.shape and a.size else 0.0
                print(f"{'ok  ' if ok else 'FAIL'} {name} {pt} max_abs_err={err:.3g}")
                if not ok:
                    failures.append(f"{name} {pt}: fused differs (max abs err {err})")
    if failures:
        print("failures:\n  " + "\n  ".join(failures))
        return 1
    print("all workloads agree fused and unfused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
