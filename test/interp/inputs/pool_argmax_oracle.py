"""An oracle for `pool {kind = "argmax"}` (ONNX MaxPool's Indices) written from the definition in docs/ir.md, not
from the compiler's code: each case's program runs interpreted (`dscc run FILE.dsc`) and compiled (`dscc compile`,
then `dscc run FILE.so`), and both must give exactly the indices this computes with plain NumPy loops.

Inputs hold ties (values drawn from a few integers), NaNs and -inf, so the first-point and first-NaN rules and the
never-winning padding are all exercised; windows reach into the padding, past the end in ceil mode, and (pads wider
than the dilated kernel's reach) hold no input point at all (-1). Usage: pool_argmax_oracle.py DSCC WORKDIR."""
import itertools
import math
import os
import subprocess
import sys

import numpy as np

# (name, input shape, attributes): kernel, strides, dilations, pads (begins then ends), ceil mode, storage order.
CASES = [
    ("pads2d", [2, 3, 5, 5], dict(k=[3, 3], s=[1, 1], d=[1, 1], p=[1, 1, 1, 1], ceil=False, order=0)),
    ("pads2d_col", [2, 3, 5, 4], dict(k=[3, 3], s=[1, 1], d=[1, 1], p=[1, 1, 1, 1], ceil=False, order=1)),
    ("strides_ceil", [1, 2, 7, 6], dict(k=[2, 3], s=[2, 2], d=[1, 1], p=[0, 1, 0, 0], ceil=True, order=0)),
    ("strides_ceil_col", [1, 2, 7, 6], dict(k=[2, 3], s=[2, 2], d=[1, 1], p=[0, 1, 0, 0], ceil=True, order=1)),
    ("dilated", [1, 2, 6, 7], dict(k=[2, 2], s=[1, 2], d=[2, 3], p=[2, 0, 1, 2], ceil=False, order=1)),
    # Pads wider than the dilated kernel's reach: the first and last windows hold no input point.
    ("empty", [1, 2, 3], dict(k=[2], s=[1], d=[2], p=[3, 3], ceil=False, order=0)),
    ("one_d_col", [2, 2, 9], dict(k=[3], s=[2], d=[1], p=[1, 2], ceil=True, order=1)),
    ("three_d", [1, 2, 3, 4, 5], dict(k=[2, 2, 3], s=[1, 2, 2], d=[1, 1, 1], p=[1, 0, 1, 0, 1, 1], ceil=True,
                                      order=0)),
    ("three_d_col", [1, 2, 3, 4, 5], dict(k=[2, 2, 3], s=[1, 2, 2], d=[1, 1, 1], p=[1, 0, 1, 0, 1, 1], ceil=True,
                                          order=1)),
]


def out_size(D, k, s, d, b, e, ceil):
    span = d * (k - 1) + 1
    if not ceil:
        return (D + b + e - span) // s + 1
    o = math.ceil((D + b + e - span) / s) + 1
    # ONNX / PyTorch: the last window must start inside the input or the begin padding.
    if (o - 1) * s >= D + b:
        o -= 1
    return o


def greater(v, best):
    """Whether v replaces best: NaN beats every number (the first NaN stays), else strictly greater."""
    if math.isnan(best):
        return False
    return math.isnan(v) or v > best


def oracle(x, a):
    N, C = x.shape[:2]
    sp = x.shape[2:]
    n = len(sp)
    outs = [out_size(sp[i], a["k"][i], a["s"][i], a["d"][i], a["p"][i], a["p"][n + i], a["ceil"]) for i in range(n)]
    y = np.empty([N, C] + outs, dtype=np.int64)
    order = "F" if a["order"] == 1 else "C"
    plane = int(np.prod(sp))
    for b, c in itertools.product(range(N), range(C)):
        for o in itertools.product(*[range(m) for m in outs]):
            best, at = None, -1
            for kk in itertools.product(*[range(k) for k in a["k"]]):  # window order: row-major kernel offsets
                pos = [o[i] * a["s"][i] - a["p"][i] + kk[i] * a["d"][i] for i in range(n)]
                if any(p < 0 or p >= sp[i] for i, p in enumerate(pos)):
                    continue  # padding never wins
                v = float(x[(b, c) + tuple(pos)])
                if best is None or greater(v, best):
                    best = v
                    at = (b * C + c) * plane + int(np.ravel_multi_index(pos, sp, order=order))
            y[(b, c) + o] = at
    return y


def program(shape, a):
    n = len(shape) - 2
    attrs = ['kind = "argmax"', "kernel_shape = %s" % a["k"], "strides = %s" % a["s"], "dilations = %s" % a["d"],
             "pads = %s" % a["p"]]
    if a["ceil"]:
        attrs.append("ceil_mode = true")
    if a["order"]:
        attrs.append("storage_order = 1")
    t = "f32[%s]" % ", ".join(map(str, shape))
    return "func @main(%%x: %s) -> i64[%s] {\n  %%y = pool %%x {%s}\n  return %%y\n}\n" % (
        t, ", ".join(["?"] * (n + 2)), ", ".join(attrs))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAILED: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))


def main():
    dscc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    checked = 0
    for name, shape, a in CASES:
        x = rng.integers(-2, 3, size=shape).astype(np.float32)  # few values: many ties
        flat = x.reshape(-1)
        flat[rng.random(flat.size) < 0.08] = np.nan
        flat[rng.random(flat.size) < 0.05] = -np.inf
        want = oracle(x, a)
        dsc = os.path.join(work, name + ".dsc")
        with open(dsc, "w") as f:
            f.write(program(shape, a))
        xin = os.path.join(work, name + ".x.npy")
        np.save(xin, x)
        so = os.path.join(work, name + ".so")
        run([dscc, "compile", dsc, "-o", so])
        for mode, target in (("interpreted", dsc), ("compiled", so)):
            out = os.path.join(work, name + "." + mode)
            run([dscc, "run", target, "-i", "x=" + xin, "-o", out])
            files = sorted(os.listdir(out))  # the one result (out0.npy or y.npy, by the runner's naming)
            got = np.load(os.path.join(out, files[0]))
            if got.dtype != np.int64 or got.shape != want.shape or not np.array_equal(got, want):
                bad = np.argwhere(got != want) if got.shape == want.shape else []
                sys.exit("FAILED %s (%s): got %s %s, want %s %s; first difference at %s\ninput:\n%s\ngot:\n%s\nwant:\n%s"
                         % (name, mode, got.dtype, got.shape, want.dtype, want.shape,
                            bad[0] if len(bad) else "-", x, got, want))
            checked += 1
        if a["k"] == [2] and not (want == -1).any():
            sys.exit("FAILED %s: the case should hold windows with no input point" % name)
    print("pool argmax oracle: %d runs ok" % checked)


if __name__ == "__main__":
    main()
