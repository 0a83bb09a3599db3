#!/usr/bin/python3
# ScatterND, ScatterElements, Scatter and CumSum over symbolic dims against NumPy, interpreted and compiled.
"""Usage: check_scatter.py OUTDIR   (`dscc` on PATH)

Each model has symbolic dims (N rows, M updates); each is imported, run by the
interpreter and compiled once, and both are compared with a NumPy reference
that applies the updates one at a time in index order (so repeated indices:
the last update wins without reduction, all combine with one) at four sizes,
0 and 1 included. An index out of range is a run-time error naming it, in
the interpreter and in the library. Exits 1 on the first difference.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
F, I = TensorProto.FLOAT, TensorProto.INT64


def sh(cmd, ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if ok and p.returncode != 0:
        sys.exit("FAIL: %s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def save(name, node, inputs, output, opset, inits=()):
    g = helper.make_graph([node], name, inputs, [output], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="dscc-test")
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    return path


def vi(name, t, dims):
    return helper.make_tensor_value_info(name, t, dims)


def apply(data, rows, upd, red):
    """data with upd[m] put at rows[m] (tuples of leading coordinates) in order."""
    r = data.copy()
    for m, at in enumerate(rows):
        at = tuple(int(a) for a in at)
        v = upd[m]
        r[at] = v if red == "none" else {"add": r[at] + v, "mul": r[at] * v, "max": np.maximum(r[at], v),
                                         "min": np.minimum(r[at], v)}[red]
    return r


def run(name, path, feeds_at, ref, sizes, where):
    lib = path[:-5] + ".so"
    sh(["dscc", "compile", path, "-o", lib, "--no-cache"] + where)
    for k, size in enumerate(sizes):
        feeds = feeds_at(size)
        args = []
        for n, a in feeds.items():
            f = os.path.join(out, "%s_%s_%d.npy" % (name, n, k))
            np.save(f, a)
            args += ["-i", "%s=%s" % (n, f)]
        want = ref(feeds)
        for mode, model in (("interpreted", path), ("compiled", lib)):
            d = os.path.join(out, "%s_%s_%d" % (name, mode, k))
            sh(["dscc", "run", model] + (where if mode == "interpreted" else []) + args + ["-o", d])
            got = np.load(os.path.join(d, "y.npy"))
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-6):
                sys.exit("FAIL %s %s at %s: got %s, want %s" % (name, mode, size, got.ravel()[:8], want.ravel()[:8]))
    return lib


rng = np.random.default_rng(36)
SIZES = [(1, 1), (3, 5), (4, 0), (7, 9)]

# 1. ScatterND (opset 18, add): data [N, 4, 3] at (row, col) pairs, negative and repeated.
p = save("nd_add", helper.make_node("ScatterND", ["d", "i", "u"], ["y"], reduction="add"),
         [vi("d", F, ["N", 4, 3]), vi("i", I, ["M", 2]), vi("u", F, ["M", 3])], vi("y", F, ["N", 4, 3]), 18)


def nd_feeds(size):
    n, m = size
    return {"d": rng.standard_normal((n, 4, 3)).astype(np.float32),
            "i": np.stack([rng.integers(-n, n, m), rng.integers(-4, 4, m)], 1).astype(np.int64),
            "u": rng.standard_normal((m, 3)).astype(np.float32)}


def nd_ref(f, red="add"):
    d = f["d"]
    rows = [(a + d.shape[0] if a < 0 else a, b + d.shape[1] if b < 0 else b) for a, b in f["i"]]
    return apply(d, rows, f["u"], red)


lib = run("nd_add", p, nd_feeds, nd_ref, SIZES, ["--where", "N in [1, 16]", "--where", "M in [0, 16]"])
# Out of range: the second coordinate 4 of a dim of 4 makes the linear index N*4, refused at run time both ways.
bad = {"d": np.ones((2, 4, 3), np.float32), "i": np.array([[0, 1], [1, 4]], np.int64), "u": np.ones((2, 3), np.float32)}
args = []
for n, a in bad.items():
    np.save(os.path.join(out, "bad_%s.npy" % n), a)
    args += ["-i", "%s=%s" % (n, os.path.join(out, "bad_%s.npy" % n))]
for model in (p, lib):
    r = sh(["dscc", "run", model] + args + ["-o", os.path.join(out, "bad")], ok=False)
    if r.returncode != 1 or "scatter index 8 (update 1) is out of range for dim 0 of size 8" not in r.stderr:
        sys.exit("FAIL: an out-of-range ScatterND index is not a run-time error (%s):\n%s" % (model, r.stderr))
print("ok ScatterND add: [N, 4, 3] at M pairs, negative and repeated, 4 sizes; out of range refused both ways")

# 2. ScatterND (opset 16, no reduction): whole rows of [N, 4], repeated: the last update wins.
p = save("nd_none", helper.make_node("ScatterND", ["d", "i", "u"], ["y"]),
         [vi("d", F, ["N", 4]), vi("i", I, ["M", 1]), vi("u", F, ["M", 4])], vi("y", F, ["N", 4]), 16)
run("nd_none", p, lambda s: {"d": rng.standard_normal((s[0], 4)).astype(np.float32),
                             "i": rng.integers(-s[0], s[0], (s[1], 1)).astype(np.int64),
                             "u": rng.standard_normal((s[1], 4)).astype(np.float32)},
    lambda f: apply(f["d"], [(a % f["d"].shape[0],) for (a,) in f["i"]], f["u"], "none"), SIZES, [])
print("ok ScatterND none: rows of [N, 4], repeated (last wins), 4 sizes")

# 3. ScatterElements (opset 18, max, axis 1) and Scatter (opset 10, axis 0).
p = save("el_max", helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1, reduction="max"),
         [vi("d", F, ["N", 5]), vi("i", I, ["N", "M"]), vi("u", F, ["N", "M"])], vi("y", F, ["N", 5]), 18)


def el_ref(f, axis, red):
    d, i, u = f["d"], f["i"], f["u"]
    rows, ups = [], []
    for c in np.ndindex(*i.shape):
        at = list(c)
        at[axis] = int(i[c]) % d.shape[axis]
        rows.append(tuple(at))
        ups.append(u[c])
    return apply(d, rows, np.array(ups, np.float32), red)


run("el_max", p, lambda s: {"d": rng.standard_normal((s[0], 5)).astype(np.float32),
                            "i": rng.integers(-5, 5, (s[0], s[1])).astype(np.int64),
                            "u": rng.standard_normal((s[0], s[1])).astype(np.float32)},
    lambda f: el_ref(f, 1, "max"), SIZES, [])
p = save("scatter10", helper.make_node("Scatter", ["d", "i", "u"], ["y"], axis=0),
         [vi("d", F, ["N", 3]), vi("i", I, ["M", 3]), vi("u", F, ["M", 3])], vi("y", F, ["N", 3]), 10)
run("scatter10", p, lambda s: {"d": rng.standard_normal((s[0], 3)).astype(np.float32),
                               "i": rng.integers(-s[0], s[0], (min(s[1], s[0]), 3)).astype(np.int64),
                               "u": rng.standard_normal((min(s[1], s[0]), 3)).astype(np.float32)},
    lambda f: el_ref(f, 0, "none"), SIZES, [])
print("ok ScatterElements max (axis 1) and Scatter-10 (axis 0), 4 sizes")

# 4. CumSum (f32, exclusive and reverse) along a symbolic axis: one cumsum op.
p = save("cumsum", helper.make_node("CumSum", ["x", "ax"], ["y"], exclusive=1, reverse=1),
         [vi("x", F, ["M", "N"])], vi("y", F, ["M", "N"]), 14, [numpy_helper.from_array(np.array(1, np.int64), "ax")])


def cumsum_ref(f):
    x = f["x"].astype(np.float64)[:, ::-1]
    c = np.cumsum(x, axis=1) - x
    return c[:, ::-1].astype(np.float32)


run("cumsum", p, lambda s: {"x": rng.standard_normal((s[1], s[0])).astype(np.float32)}, cumsum_ref, SIZES, [])
if sh(["dscc", "import", p]).stdout.count("= cumsum ") != 1:
    sys.exit("FAIL: CumSum is not one cumsum op")
print("ok CumSum exclusive reverse over [M, N]: one cumsum op, 4 sizes")
