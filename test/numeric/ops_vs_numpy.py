#!/usr/bin/python3
"""Differential test of the reference interpreter (`dscc run`) against NumPy.

Usage: /usr/bin/python3 test/numeric/ops_vs_numpy.py PATH/TO/dscc [-k SUBSTRING] [-v]

For every op of the IR it writes small .dsc programs and random .npy inputs
(fixed seed) at several shapes, including the broadcasting corners (size-1 and
size-0 dims, rank mismatch, scalars), runs them through `dscc run`, and
compares each output with what NumPy computes from the same inputs. Float math
is compared at rtol 1e-5 / atol 1e-6 in f32 (looser for f16 and bf16, tighter
for f64); integers, booleans and data movement must match exactly. A few cases
expect a located error instead of a result. Prints one line per case and exits
non-zero listing the failures.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

# Empty means and overflowing references are intended; their warnings are noise.
np.seterr(all="ignore")
warnings.simplefilter("ignore", RuntimeWarning)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ops_cases import *  # noqa: E402,F401,F403 - the harness: dtypes, .npy files, random data, Case, add
from scan_cases import gen_cumsum, gen_scatter  # noqa: E402 - scatter and cumsum cases

UNARY = {
    # name: (reference on float64, input kind)
    "neg": (lambda x: -x, "any"),
    "abs": (np.abs, "any"),
    "exp": (np.exp, "any"),
    "log": (np.log, "pos"),
    "sqrt": (np.sqrt, "pos"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), "pos"),
    "tanh": (np.tanh, "any"),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), "any"),
    "erf": (erf_vec, "any"),
    "relu": (lambda x: np.maximum(x, 0.0), "any"),
    "gelu": (lambda x: 0.5 * x * (1.0 + erf_vec(x / math.sqrt(2.0))), "any"),
    "floor": (np.floor, "any"),
    "ceil": (np.ceil, "any"),
    "sin": (np.sin, "any"),
    "cos": (np.cos, "any"),
    "reciprocal": (lambda x: 1.0 / x, "nonzero"),
    "sign": (np.sign, "any"),
}


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def wrap(dt, a):
    """An int64 result wrapped to the width of `dt`."""
    return np.asarray(a, dtype=np.int64).astype(CARRIER[dt])


def trunc_div(a, b):
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


BINARY_F = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: np.power(a, b),
    "max": np.maximum,
    "min": np.minimum,
}
BINARY_I = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": trunc_div,
    "pow": lambda a, b: np.power(a, b),
    "max": np.maximum,
    "min": np.minimum,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
}
COMPARE = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}

# Broadcasting corners: equal, stretch both ways, rank mismatch, scalars, size-0 dims.
PAIRS = [
    ((3, 4), (3, 4)),
    ((2, 1, 4), (3, 1)),
    ((4,), (2, 3, 4)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((0, 3), (1, 3)),
    ((2, 0), (2, 1)),
    ((1,), (5,)),
    ((1, 3, 1), (2, 1, 4)),
]


def gen_unary():
    for op, (ref, kind) in UNARY.items():
        for dt in FLOATS:
            shapes = [(), (5,), (2, 3, 4), (0, 3)] if dt == "f32" else [(2, 3)]
            for shp in shapes:
                x = rand(dt, shp, kind)
                exp = to_dtype(dt, ref(f64(x)))
                add(f"{op} {dt}{shape_name(shp)}", [f"%r = {op} %x"], [("x", dt, x)], [("r", dt, exp)],
                    tol="exact" if op in ("neg", "abs", "relu", "floor", "ceil", "sign") else None)
    for dt in FLOATS:
        x = rand(dt, (3, 5))
        add(f"gelu tanh {dt}", ['%r = gelu %x {approximate = "tanh"}'], [("x", dt, x)],
            [("r", dt, to_dtype(dt, gelu_tanh(f64(x))))])
    x = rand("f32", (4,))
    add("gelu none f32 static", ['%r = gelu %x {approximate = "none"}'], [("x", "f32", x)],
        [("r", "f32", to_dtype("f32", UNARY["gelu"][0](f64(x))))], static=True)
    for dt in INTS:
        x = rand(dt, (2, 5))
        x.flat[0] = np.iinfo(CARRIER[dt]).min  # neg and abs wrap here
        add(f"neg {dt}", ["%r = neg %x"], [("x", dt, x)], [("r", dt, wrap(dt, -x.astype(np.int64)))])
        add(f"abs {dt}", ["%r = abs %x"], [("x", dt, x)], [("r", dt, wrap(dt, np.abs(x.astype(np.int64))))])
        add(f"relu {dt}", ["%r = relu %x"], [("x", dt, x)], [("r", dt, np.maximum(x, 0))])
        add(f"not {dt}", ["%r = not %x"], [("x", dt, x)], [("r", dt, ~x)])
        s = x.copy()  # the cases above keep x: inputs are written when the cases run
        s.flat[1] = 0
        add(f"sign {dt}", ["%r = sign %x"], [("x", dt, s)], [("r", dt, np.sign(s))])
    for dt in FLOATS:  # sign's special values: zeros of both signs give 0, NaN stays NaN
        x = to_dtype(dt, np.array([0.0, -0.0, np.nan, -np.inf, np.inf, 1e-30, -1e-30, 3.0]))
        add(f"sign {dt} specials", ["%r = sign %x"], [("x", dt, x)],
            [("r", dt, to_dtype(dt, np.sign(f64(x))))], tol="exact")
    for shp in [(), (7,), (0,)]:
        x = rand("i1", shp)
        add(f"not i1{shape_name(shp)}", ["%r = not %x"], [("x", "i1", x)], [("r", "i1", ~x)])


def gen_binary():
    for op, ref in BINARY_F.items():
        for dt in FLOATS:
            pairs = PAIRS if dt == "f32" else PAIRS[:2] + [PAIRS[6]]
            for sa, sb in pairs:
                ka, kb = ("pos", "any") if op == "pow" else ("any", "nonzero" if op == "div" else "any")
                a, b = rand(dt, sa, ka), rand(dt, sb, kb)
                if op == "pow":
                    b = to_dtype(dt, np.clip(f64(b), -2, 2))
                exp = to_dtype(dt, ref(f64(a), f64(b)))
                add(f"{op} {dt}{shape_name(sa, sb)}", [f"%r = {op} %x, %y"], [("x", dt, a), ("y", dt, b)],
                    [("r", dt, exp)], tol="exact" if op in ("max", "min") else None)
        a, b = rand("f32", (2, 3)), rand("f32", (3,), "nonzero" if op == "div" else "any")
        add(f"{op} f32 static{shape_name((2, 3), (3,))}", [f"%r = {op} %x, %y"] if op != "pow" else
            ["%p = abs %x", f"%r = pow %p, %y"], [("x", "f32", a), ("y", "f32", b)],
            [("r", "f32", to_dtype("f32", ref(np.abs(f64(a)) if op == "pow" else f64(a), f64(b))))],
            static=True)
    # NaN on either side wins in max and min, as in numpy maximum/minimum.
    a = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    b = np.array([np.nan, 2.0, 1.0, np.nan], np.float32)
    for op in ("max", "min"):
        add(f"{op} f32 NaN", [f"%r = {op} %x, %y"], [("x", "f32", a), ("y", "f32", b)],
            [("r", "f32", BINARY_F[op](a, b))], tol="exact")
    for op, ref in BINARY_I.items():
        for dt in INTS:
            for sa, sb in [PAIRS[0], PAIRS[1], PAIRS[3], PAIRS[6]]:
                if op == "pow":
                    a, b = rand(dt, sa, "small"), rand(dt, sb, "pos")
                elif op == "div":
                    a, b = rand(dt, sa), rand(dt, sb, "nonzero")
                else:
                    a, b = rand(dt, sa), rand(dt, sb)
                exp = wrap(dt, ref(a.astype(np.int64), b.astype(np.int64)))
                add(f"{op} {dt}{shape_name(sa, sb)}", [f"%r = {op} %x, %y"], [("x", dt, a), ("y", dt, b)],
                    [("r", dt, exp)])
    for op in ("and", "or"):
        for sa, sb in [PAIRS[0], PAIRS[2], PAIRS[4], PAIRS[7]]:
            a, b = rand("i1", sa), rand("i1", sb)
            ref = np.logical_and if op == "and" else np.logical_or
            add(f"{op} i1{shape_name(sa, sb)}", [f"%r = {op} %x, %y"], [("x", "i1", a), ("y", "i1", b)],
                [("r", "i1", ref(a, b))])
    for op, ref in COMPARE.items():
        for dt in FLOATS + INTS + ("i1",):
            pairs = [PAIRS[0], PAIRS[1], PAIRS[6]] if dt in ("f32", "i32") else [PAIRS[1]]
            for sa, sb in pairs:
                a, b = rand(dt, sa, "small"), rand(dt, sb, "small")
                add(f"{op} {dt}{shape_name(sa, sb)}", [f"%r = {op} %x, %y"], [("x", dt, a), ("y", dt, b)],
                    [("r", "i1", ref(a, b))])
        a = np.array([1.0, np.nan, np.nan], np.float32)
        b = np.array([np.nan, 1.0, np.nan], np.float32)
        add(f"{op} f32 NaN", [f"%r = {op} %x, %y"], [("x", "f32", a), ("y", "f32", b)], [("r", "i1", ref(a, b))])


def gen_select():
    shapes = [((2, 3), (2, 3), (2, 3)), ((2, 1), (3,), ()), ((), (2, 2), (1, 2)), ((0, 1), (1, 4), (4,)),
              ((3, 1, 2), (1, 4, 1), (2,))]
    for dt in ("f32", "i32", "i1", "f16"):
        for sc, sa, sb in (shapes if dt == "f32" else shapes[:2]):
            c, a, b = rand("i1", sc), rand(dt, sa), rand(dt, sb)
            add(f"select {dt}{shape_name(sc, sa, sb)}", ["%r = select %c, %x, %y"],
                [("c", "i1", c), ("x", dt, a), ("y", dt, b)], [("r", dt, np.where(c, a, b))])


REDUCE = {
    "reduce_sum": lambda x, ax, kd: np.sum(x, axis=ax, keepdims=kd),
    "reduce_max": lambda x, ax, kd: np.max(x, axis=ax, keepdims=kd),
    "reduce_min": lambda x, ax, kd: np.min(x, axis=ax, keepdims=kd),
    "reduce_mean": lambda x, ax, kd: np.mean(x, axis=ax, keepdims=kd),
    "reduce_prod": lambda x, ax, kd: np.prod(x, axis=ax, keepdims=kd),
}


def gen_reduce():
    axes_list = [None, [0], [-1], [1], [0, 2], [-1, -3], [2, 0, 1], []]
    for op, ref in REDUCE.items():
        kind = "unit" if op == "reduce_prod" else "any"
        for dt in ("f32", "f64", "f16", "i32", "i64", "i8"):
            if op == "reduce_mean" and dt in INTS:
                continue
            for axes in (axes_list if dt == "f32" else axes_list[:3]):
                for kd in (False, True):
                    x = rand(dt, (2, 3, 4), kind if dt in FLOATS else ("small" if op == "reduce_prod" else "any"))
                    ax = None if axes is None else tuple(axes)
                    if dt in FLOATS:
                        exp = to_dtype(dt, ref(f64(x), ax, kd))
                    else:
                        exp = wrap(dt, ref(x.astype(np.int64), ax, kd))
                    attrs = [] if axes is None else [f"axes = {axes}"]
                    attrs.append(f"keepdims = {'true' if kd else 'false'}")
                    add(f"{op} {dt} axes={axes} keepdims={kd}", [f"%r = {op} %x {{{', '.join(attrs)}}}"],
                        [("x", dt, x)], [("r", dt, exp)],
                        tol="exact" if op in ("reduce_max", "reduce_min") or dt in INTS else None)
        # Scalars and size-0 dims.
        x = rand("f32", (), kind)
        add(f"{op} f32 scalar", [f"%r = {op} %x"], [("x", "f32", x)], [("r", "f32", to_dtype("f32", ref(f64(x), None, False)))])
        if op not in ("reduce_max", "reduce_min"):
            x = rand("f32", (0, 3))
            add(f"{op} f32 [0,3] axes=[0]", [f"%r = {op} %x {{axes = [0]}}"], [("x", "f32", x)],
                [("r", "f32", to_dtype("f32", ref(f64(x), (0,), False)))])
        x = rand("f32", (3, 0))
        add(f"{op} f32 [3,0] axes=[0]", [f"%r = {op} %x {{axes = [0]}}"], [("x", "f32", x)],
            [("r", "f32", np.zeros((0,), np.float32))])
    x = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    for op in ("reduce_max", "reduce_min", "reduce_sum"):
        add(f"{op} f32 NaN", [f"%r = {op} %x {{axes = [1]}}"], [("x", "f32", x)],
            [("r", "f32", to_dtype("f32", REDUCE[op](f64(x), 1, False)))])
    add("reduce_max empty error", ["%r = reduce_max %x {axes = [0]}"], [("x", "f32", rand("f32", (0, 3)))],
        [("r", "f32", np.zeros(3, np.float32))], error="reduce_max over an empty dim")


def gen_argmax():
    for dt in ("f32", "i32", "f16", "i8"):
        for axis in (0, 1, -1, -3):
            for kd in (False, True):
                x = rand(dt, (3, 4, 5), "small")
                exp = np.argmax(x, axis=axis, keepdims=kd).astype(np.int64)
                add(f"argmax {dt} axis={axis} keepdims={kd}",
                    [f"%r = argmax %x {{axis = {axis}, keepdims = {'true' if kd else 'false'}}}"],
                    [("x", dt, x)], [("r", "i64", exp)])
    x = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 2.0, 1.0, 0.0]], np.float32)
    add("argmax f32 NaN and ties", ["%r = argmax %x {axis = 1}"], [("x", "f32", x)],
        [("r", "i64", np.argmax(x, axis=1))])
    x = rand("f32", (0, 3))
    add("argmax f32 [0,3] axis=1", ["%r = argmax %x {axis = 1}"], [("x", "f32", x)],
        [("r", "i64", np.zeros((0,), np.int64))])


def softmax_ref(x, axis, log):
    x = f64(x)
    m = np.max(x, axis=axis, keepdims=True)
    s = np.sum(np.exp(x - m), axis=axis, keepdims=True)
    return x - m - np.log(s) if log else np.exp(x - m) / s


def layer_norm_ref(x, g, b, axis, eps):
    x = f64(x)
    axes = tuple(range(axis % x.ndim, x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * f64(g) + f64(b)


def gen_composite():
    for op in ("softmax", "log_softmax"):
        for dt in ("f32", "f64", "f16", "bf16"):
            for axis in ((None, -1, 0, 1) if dt == "f32" else (None,)):
                x = rand(dt, (2, 3, 5))
                attr = "" if axis is None else f" {{axis = {axis}}}"
                exp = to_dtype(dt, softmax_ref(x, -1 if axis is None else axis, op == "log_softmax"))
                add(f"{op} {dt} axis={axis}", [f"%r = {op} %x{attr}"], [("x", dt, x)], [("r", dt, exp)])
        x = rand("f32", (4,))
        add(f"{op} f32 static", [f"%r = {op} %x"], [("x", "f32", x)],
            [("r", "f32", to_dtype("f32", softmax_ref(x, -1, op == "log_softmax")))], static=True)
        x = rand("f32", (0, 3))
        add(f"{op} f32 [0,3]", [f"%r = {op} %x"], [("x", "f32", x)], [("r", "f32", x)])
    ln = [((2, 3, 8), (8,), (8,), None, None), ((2, 3, 8), (8,), (1,), -1, 1e-3), ((2, 3, 4), (3, 4), (4,), 1, None),
          ((2, 3, 4), (1, 4), (3, 1), -2, 0.5), ((4, 6), (), (6,), 0, None), ((5,), (5,), (5,), 0, 1e-12)]
    for dt in ("f32", "f64", "f16"):
        for sx, sg, sb, axis, eps in (ln if dt == "f32" else ln[:2]):
            x, g, b = rand(dt, sx), rand(dt, sg), rand(dt, sb)
            attrs = []
            if axis is not None:
                attrs.append(f"axis = {axis}")
            if eps is not None:
                attrs.append(f"epsilon = {eps!r}")
            attr = f" {{{', '.join(attrs)}}}" if attrs else ""
            exp = to_dtype(dt, layer_norm_ref(x, g, b, -1 if axis is None else axis, 1e-5 if eps is None else eps))
            add(f"layer_norm {dt}{shape_name(sx, sg, sb)} axis={axis} eps={eps}", [f"%r = layer_norm %x, %g, %b{attr}"],
                [("x", dt, x), ("g", dt, g), ("b", dt, b)], [("r", dt, exp)],
                tol=None)


def gen_matmul():
    cases = [
        ((3, 4), (4, 5), False, False),
        ((4,), (4, 5), False, False),
        ((3, 4), (4,), False, False),
        ((4,), (4,), False, False),
        ((2, 3, 4), (4, 5), False, False),
        ((4,), (2, 4, 5), False, False),
        ((2, 1, 3, 4), (5, 4, 6), False, False),
        ((4, 3), (4, 5), True, False),
        ((3, 4), (5, 4), False, True),
        ((2, 4, 3), (2, 5, 4), True, True),
        ((1, 4, 3), (3, 5, 4), True, True),
        ((0, 4), (4, 5), False, False),
        ((3, 0), (0, 5), False, False),
        ((2, 3, 4), (4,), False, False),
    ]
    for dt in ("f32", "f64", "i32", "i64", "f16"):
        for sa, sb, ta, tb in (cases if dt in ("f32", "i32") else cases[:3] + cases[6:8]):
            a, b = rand(dt, sa, "small" if dt in INTS else "any"), rand(dt, sb, "small" if dt in INTS else "any")
            aa = np.swapaxes(a, -1, -2) if ta else a
            bb = np.swapaxes(b, -1, -2) if tb else b
            if dt in INTS:
                exp = wrap(dt, np.matmul(aa.astype(np.int64), bb.astype(np.int64)))
            else:
                exp = to_dtype(dt, np.matmul(f64(aa), f64(bb)))
            attrs = []
            if ta:
                attrs.append("transpose_a = true")
            if tb:
                attrs.append("transpose_b = true")
            attr = f" {{{', '.join(attrs)}}}" if attrs else ""
            add(f"matmul {dt}{shape_name(sa, sb)} ta={ta} tb={tb}", [f"%r = matmul %x, %y{attr}"],
                [("x", dt, a), ("y", dt, b)], [("r", dt, exp)])
    a, b = rand("f32", (2, 3, 4)), rand("f32", (4, 5))
    add("matmul f32 static batch", ["%r = matmul %x, %y"], [("x", "f32", a), ("y", "f32", b)],
        [("r", "f32", to_dtype("f32", np.matmul(f64(a), f64(b))))], static=True)
    add("matmul contraction mismatch error", ["%r = matmul %x, %y"],
        [("x", "f32", rand("f32", (2, 3))), ("y", "f32", rand("f32", (4, 5)))], [("r", "f32", np.zeros((2, 5)))],
        error="matmul contraction dims are equal) failed: 'X1 == Y0' does not hold")


def gen_data_movement():
    x = rand("f32", (2, 3, 4))
    for target, types in [
        ("f32[6, 4]", None), ("f32[4, ?]", None), ("f32[?]", None), ("f32[X0*X1, X2]", None),
        ("f32[X0, X1, 2, X2/2]", None), ("f32[X0, ?, 2]", None), ("f32[1, 24, 1]", None),
    ]:
        shape = {"f32[6, 4]": (6, 4), "f32[4, ?]": (4, 6), "f32[?]": (24,), "f32[X0*X1, X2]": (6, 4),
                 "f32[X0, X1, 2, X2/2]": (2, 3, 2, 2), "f32[X0, ?, 2]": (2, 6, 2), "f32[1, 24, 1]": (1, 24, 1)}[target]
        add(f"reshape to {target}", [f"%r = reshape %x : {target}"], [("x", "f32", x)],
            [("r", "f32", x.reshape(shape))], tol="exact")
    b = rand("i1", (4, 3))
    add("reshape i1", ["%r = reshape %x : i1[2, ?]"], [("x", "i1", b)], [("r", "i1", b.reshape(2, 6))])
    add("reshape size-0", ["%r = reshape %x : f32[3, ?, 2]"], [("x", "f32", rand("f32", (0, 6)))],
        [("r", "f32", np.zeros((3, 0, 2), np.float32))])
    add("reshape size-0 unknown error", ["%r = reshape %x : f32[0, ?]"], [("x", "f32", rand("f32", (0, 6)))],
        [("r", "f32", np.zeros((0, 1), np.float32))], error="leaves no whole size")
    add("reshape size-0 known", ["%r = reshape %x : f32[3, 0]"], [("x", "f32", rand("f32", (0, 6)))],
        [("r", "f32", np.zeros((3, 0), np.float32))])
    add("reshape not exact error", ["%r = reshape %x : f32[2, X0/2]"], [("x", "f32", rand("f32", (5,)))],
        [("r", "f32", np.zeros((2, 2)))], error="'X0 % 2 == 0' does not hold (X0 = 5)")

    for perm, shp in [([1, 0], (3, 4)), ([2, 0, 1], (2, 3, 4)), (None, (2, 3, 4)), ([0, 2, 1, 3], (2, 3, 4, 5)),
                      ([1, 0], (0, 3)), ([], ())]:
        for dt in ("f32", "i8", "bf16") if perm == [2, 0, 1] else ("f32",):
            x = rand(dt, shp)
            attr = "" if perm is None else f" {{perm = {perm}}}"
            add(f"transpose {dt}{shape_name(shp)} perm={perm}", [f"%r = transpose %x{attr}"], [("x", dt, x)],
                [("r", dt, np.transpose(x, perm))])

    for src, dst in [((3,), (2, 3)), ((2, 1), (2, 4)), ((), (3, 2)), ((1, 1), (0, 1)), ((2, 1, 3), (4, 2, 5, 3)),
                     ((3,), (3,))]:
        for dt in ("f32", "i64") if src == (2, 1) else ("f32",):
            x = rand(dt, src)
            add(f"broadcast_to {dt}{shape_name(src, dst)}", [f"%r = broadcast_to %x : {dt}[{', '.join(map(str, dst))}]"],
                [("x", dt, x)], [("r", dt, np.broadcast_to(x, dst))])
    x, y = rand("f32", (3,)), rand("f32", (2, 3))
    add("broadcast_to symbolic", ["%r = broadcast_to %x : f32[Y0, X0]"], [("x", "f32", x), ("y", "f32", y)],
        [("r", "f32", np.broadcast_to(x, (2, 3)))])
    add("broadcast_to incompatible error", ["%r = broadcast_to %x : f32[Y0, Y1]"],
        [("x", "f32", rand("f32", (3,))), ("y", "f32", rand("f32", (2, 4)))], [("r", "f32", np.zeros((2, 4)))],
        error="'broadcasts_to(X0, Y1)' does not hold (X0 = 3, Y1 = 4)")

    for shapes, axis in [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 4)], -1), ([(2, 0, 3), (2, 2, 3)], 1),
                         ([(5,)], 0), ([(1, 2, 2), (1, 2, 3)], 2)]:
        for dt in ("f32", "i32", "i1") if axis == -1 else ("f32",):
            xs = [rand(dt, s) for s in shapes]
            names = [f"a{k}" for k in range(len(xs))]
            add(f"concat {dt}{shape_name(*shapes)} axis={axis}",
                [f"%r = concat {', '.join('%' + n for n in names)} {{axis = {axis}}}"],
                [(n, dt, v) for n, v in zip(names, xs)], [("r", dt, np.concatenate(xs, axis=axis))])


def gen_slice():
    x = rand("f32", (10,))
    one_d = [
        (2, 7, None), (-3, 100, None), (-100, 3, None), (8, 2, None), (1, 9, 3), (0, 10, 4),
        (-2, -100, -3), (9, 0, -1), (100, -100, -1), (-1, -11, -2), (5, 5, 1), (3, 100, 7), (0, 1, 20),
        (-100, -200, 1), (200, 100, -1), (4, -1, -1), (0, -1, None),
    ]
    for s, e, st in one_d:
        attrs = f"starts = [{s}], ends = [{e}]" + (f", steps = [{st}]" if st is not None else "")
        for static in (False, True):
            add(f"slice f32 [10] {s}:{e}:{st}{' static' if static else ''}", [f"%r = slice %x {{{attrs}}}"],
                [("x", "f32", x)], [("r", "f32", x[slice(s, e, st)])], static=static)
    y = rand("i32", (4, 5, 6))
    multi = [
        ([0, 2], [1, -1], [3, 0], [1, -2]),
        ([-1, 0], [-2, 3], [-100, -100], [-1, -1]),
        (None, [1, 0], [3, 100], None),
        ([1], [-1], [-7], [-2]),
        ([2, 1, 0], [0, 4, 3], [6, -100, 0], [2, -1, -1]),
    ]
    for axes, starts, ends, steps in multi:
        sl = [slice(None)] * 3
        ax_list = axes if axes is not None else list(range(len(starts)))
        for k, a in enumerate(ax_list):
            sl[a] = slice(starts[k], ends[k], steps[k] if steps is not None else None)
        attrs = []
        if axes is not None:
            attrs.append(f"axes = {axes}")
        attrs += [f"starts = {starts}", f"ends = {ends}"]
        if steps is not None:
            attrs.append(f"steps = {steps}")
        add(f"slice i32 [4,5,6] axes={axes} starts={starts} ends={ends} steps={steps}",
            [f"%r = slice %x {{{', '.join(attrs)}}}"], [("x", "i32", y)], [("r", "i32", y[tuple(sl)])])
    # Symbolic bounds: the sizes come from the inputs at run time.
    for n in (1, 4, 9):
        x = rand("f32", (n,))
        add(f"slice symbolic [{n}] 1:X0-1", ["%r = slice %x {starts = [1], ends = [X0-1]}"], [("x", "f32", x)],
            [("r", "f32", x[1:n - 1])])
        add(f"slice symbolic [{n}] X0-1:-100:-2", ["%r = slice %x {starts = [X0-1], ends = [-100], steps = [-2]}"],
            [("x", "f32", x)], [("r", "f32", x[n - 1::-2])])
    for h in (1, 3):
        x = rand("f32", (2 * h, 3))
        add(f"slice symbolic [{2 * h},3] H:2*H", ["%r = slice %x {starts = [H], ends = [2*H]}"], [("x", "f32", x)],
            [("r", "f32", x[h:])], types={"x": "f32[2*H, 3]"})
    # docs/ir.md: a symbolic bound counts from the start and must not be negative;
    # shape analysis turns that into a run-time check that rejects X0 = 3 here.
    x = rand("f32", (3,))
    add("slice symbolic negative start X0-5:X0 error", ["%r = slice %x {starts = [X0-5], ends = [X0]}"],
        [("x", "f32", x)], [("r", "f32", x[-2:3])],
        error="failed: '0 <= X0-5' does not hold (X0 = 3)")
    x = rand("f32", (7,))
    add("slice symbolic start X0-5:X0", ["%r = slice %x {starts = [X0-5], ends = [X0]}"], [("x", "f32", x)],
        [("r", "f32", x[2:7])])
    x = rand("f32", (0, 3))
    add("slice size-0", ["%r = slice %x {axes = [0], starts = [0], ends = [5]}"], [("x", "f32", x)], [("r", "f32", x)])
    add("slice size-0 reverse", ["%r = slice %x {axes = [0], starts = [-1], ends = [-100], steps = [-1]}"],
        [("x", "f32", x)], [("r", "f32", x[::-1])])


def gen_gather():
    a = rand("f32", (5, 3))
    for idx_dt in ("i64", "i32"):
        for ishape in ((4,), (2, 2), ()):
            idx = rng.integers(-5, 5, ishape).astype(CARRIER[idx_dt])
            add(f"gather f32[5,3] {idx_dt}{shape_name(ishape)} axis=0", ["%r = gather %x, %i"],
                [("x", "f32", a), ("i", idx_dt, idx)], [("r", "f32", np.take(a, idx, axis=0))])
    b = rand("i8", (2, 4, 3))
    for axis in (1, -1, 2, -3):
        d = b.shape[axis]
        idx = rng.integers(-d, d, (2, 3)).astype(np.int64)
        add(f"gather i8[2,4,3] axis={axis}", [f"%r = gather %x, %i {{axis = {axis}}}"],
            [("x", "i8", b), ("i", "i64", idx)], [("r", "i8", np.take(b, idx, axis=axis))])
    idx = np.zeros((0,), np.int64)
    add("gather empty indices", ["%r = gather %x, %i {axis = 1}"], [("x", "f32", a), ("i", "i64", idx)],
        [("r", "f32", np.take(a, idx, axis=1))])
    add("gather out of range error", ["%r = gather %x, %i"],
        [("x", "f32", a), ("i", "i64", np.array([0, 5], np.int64))], [("r", "f32", np.zeros((2, 3)))],
        error="gather index 5 is out of range for dim 0 of size 5")
    add("gather negative out of range error", ["%r = gather %x, %i"],
        [("x", "f32", a), ("i", "i32", np.array([-6], np.int32))], [("r", "f32", np.zeros((1, 3)))],
        error="gather index -6 is out of range")


def gen_values():
    for dt, shape, axis in [("f32", (3, 4), 0), ("f32", (3, 4), 1), ("i32", (5,), 0), ("i64", (2, 3, 2), -1),
                            ("f16", (2, 3), 1), ("bf16", (2, 3), 0), ("f64", (0, 3), 1), ("i8", (4, 2), 0)]:
        exp = to_dtype(dt, np.indices(shape)[axis % len(shape)] if shape else np.zeros(()))
        add(f"iota {dt}{shape_name(shape)} axis={axis}",
            [f"%r = iota {{axis = {axis}}} : {dt}[{', '.join(map(str, shape))}]"], [], [("r", dt, exp)])
    x = rand("f32", (3, 2))
    add("iota symbolic", ["%r = iota {axis = 0} : i64[X0, 2]"], [("x", "f32", x)],
        [("r", "i64", np.indices((3, 2))[0])])

    add("constant f32 scalar", ["%r = constant 0.5 : f32[]"], [], [("r", "f32", np.float32(0.5))])
    add("constant i32 scalar", ["%r = constant -7 : i32[]"], [], [("r", "i32", np.int32(-7))])
    add("constant i1 true", ["%r = constant true : i1[]"], [], [("r", "i1", np.bool_(True))])
    add("constant f16 int literal", ["%r = constant 3 : f16[]"], [], [("r", "f16", np.float16(3))])
    add("constant splat f32", ["%r = constant splat<1.25> : f32[2, 3]"], [], [("r", "f32", np.full((2, 3), 1.25, np.float32))])
    x = rand("f32", (4, 2))
    add("constant splat symbolic", ["%r = constant splat<-2> : i64[X1, X0]"], [("x", "f32", x)],
        [("r", "i64", np.full((2, 4), -2, np.int64))])
    add("constant splat bf16", ["%r = constant splat<0.1> : bf16[3]"], [], [("r", "bf16", to_dtype("bf16", np.full(3, 0.1)))])
    add("constant dense f32", ["%r = constant dense<[[1.5, -2], [3, 4.25]]> : f32[2, 2]"], [],
        [("r", "f32", np.array([[1.5, -2], [3, 4.25]], np.float32))])
    add("constant dense i1", ["%r = constant dense<[true, false, true]> : i1[3]"], [],
        [("r", "i1", np.array([True, False, True]))])
    add("constant dense i8 3-D", ["%r = constant dense<[[[1], [2]], [[-3], [4]]]> : i8[2, 2, 1]"], [],
        [("r", "i8", np.array([[[1], [2]], [[-3], [4]]], np.int8))])
    add("constant dense scalar", ["%r = constant dense<7.5> : f64[]"], [], [("r", "f64", np.float64(7.5))])
    for dt, shape in [("f32", (3, 4)), ("i64", (5,)), ("f16", (2, 2)), ("bf16", (3,)), ("i1", (4,)), ("f64", ())]:
        v = rand(dt, shape)
        fname = f"w_{dt}.npy"
        add(f"constant file {dt}{shape_name(shape)}",
            [f'%r = constant file("{fname}") : {dt}[{", ".join(map(str, shape))}]'], [], [("r", dt, v)],
            files={fname: (dt, v)})
    v, x = rand("f32", (3, 5)), rand("f32", (3, 1))
    add("constant file symbolic dims", ['%w = constant file("w.npy") : f32[X0, K]', "%r = add %w, %x"],
        [("x", "f32", x)], [("r", "f32", v + x)], files={"w.npy": ("f32", v)})
    add("constant file missing error", ['%r = constant file("nope.npy") : f32[2]'], [], [("r", "f32", np.zeros(2))],
        error="cannot read constant file 'nope.npy'")
    add("constant file wrong shape error", ['%r = constant file("w.npy") : f32[2]'], [], [("r", "f32", np.zeros(2))],
        files={"w.npy": ("f32", rand("f32", (3,)))}, error="constant file 'w.npy' holds f32[3] but the type says f32[2]")

    x = rand("f32", (3, 0, 5))
    for axis in (0, 1, 2, -1):
        add(f"dim axis={axis}", [f"%r = dim %x {{axis = {axis}}}"], [("x", "f32", x)],
            [("r", "i64", np.int64(x.shape[axis]))])


def gen_cast():
    dts = FLOATS + INTS + ("i1",)
    for src in dts:
        for dst in dts:
            if src in FLOATS:
                v = rng.uniform(-100, 100, (3, 4))
                v[0, :2] = [0.0, -0.75]
                x = to_dtype(src, v.astype(np.float32))
            elif src == "i1":
                x = rand("i1", (3, 4))
            else:
                x = rand(src, (3, 4))
            if dst == "i1":
                exp = x != 0
            elif dst in INTS:
                exp = to_dtype(dst, np.trunc(f64(x)) if src in FLOATS else x.astype(np.int64))
            else:
                exp = to_dtype(dst, f64(x))
            add(f"cast {src} -> {dst}", [f"%r = cast %x {{to = {dst}}}"], [("x", src, x)], [("r", dst, exp)])


def gen_errors():
    add("fact violated error", ["%r = neg %x"], [("x", "f32", rand("f32", (5,)))], [("r", "f32", np.zeros(5))],
        types={"x": "f32[S]", "r": "f32[S]"}, where="S in [1, 4]",
        error="fact violated: 'S in [1, 4]' does not hold (S = 5)")
    add("input dim mismatch error", ["%r = add %x, %y"],
        [("x", "f32", rand("f32", (3,))), ("y", "f32", rand("f32", (4,)))], [("r", "f32", np.zeros(3))],
        types={"x": "f32[S]", "y": "f32[S]", "r": "f32[S]"}, error="dim 0 of %y is 4 but S = 3 here")
    add("integer division by zero error", ["%r = div %x, %y"],
        [("x", "i32", np.array([1, 2], np.int32)), ("y", "i32", np.array([1, 0], np.int32))],
        [("r", "i32", np.zeros(2))], error="integer division by zero")
    add("runtime broadcast error", ["%r = mul %x, %y"],
        [("x", "f32", rand("f32", (2, 3))), ("y", "f32", rand("f32", (4,)))], [("r", "f32", np.zeros((2, 3)))],
        error="'broadcastable(X1, Y0)' does not hold (X1 = 3, Y0 = 4)")


def gen_check():
    x, y = rand("f32", (3,)), rand("f32", (3,))
    body = ['check {kind = "eq", lhs = X0, rhs = Y0, what = "add operands"}', "%r = add %x, %y"]
    add("check eq holds", body, [("x", "f32", x), ("y", "f32", y)], [("r", "f32", x + y)])
    add("check eq fails error", body, [("x", "f32", x), ("y", "f32", rand("f32", (1,)))], [("r", "f32", x)],
        error="run-time check (add operands) failed: 'X0 == Y0' does not hold (X0 = 3, Y0 = 1)")
    body = ['check {kind = "divisible", lhs = X0, rhs = 4}', "%r = neg %x"]
    add("check divisible fails error", body, [("x", "f32", rand("f32", (6,)))], [("r", "f32", x)],
        error="'X0 % 4 == 0' does not hold (X0 = 6)")


def gen_bert(root):
    """The bert_layer workload at a small size against a NumPy transcription of it."""
    prog = os.path.join(root, "bench", "workloads", "bert_layer.dsc")
    if not os.path.exists(prog):
        return None
    B, S, H, F = 2, 8, 768, 3072
    w = {}
    w["x"] = rng.normal(0, 1, (B, S, H)).astype(np.float32)
    w["mask"] = np.where(rng.uniform(size=(B, S)) < 0.2, -10000.0, 0.0).astype(np.float32)
    for n, shp in [("wq", (H, H)), ("wk", (H, H)), ("wv", (H, H)), ("wo", (H, H)), ("w1", (H, F)), ("w2", (F, H))]:
        w[n] = rng.normal(0, 0.03, shp).astype(np.float32)
    for n, d in [("bq", H), ("bk", H), ("bv", H), ("bo", H), ("b1", F), ("b2", H), ("ln1_b", H), ("ln2_b", H)]:
        w[n] = rng.normal(0, 0.1, (d,)).astype(np.float32)
    for n in ("ln1_g", "ln2_g"):
        w[n] = rng.uniform(0.5, 1.5, (H,)).astype(np.float32)
    g = {k: f64(v) for k, v in w.items()}

    def heads(t):
        return t.reshape(B, S, 12, 64).transpose(0, 2, 1, 3)

    q = heads(g["x"] @ g["wq"] + g["bq"])
    k = heads(g["x"] @ g["wk"] + g["bk"])
    v = heads(g["x"] @ g["wv"] + g["bv"])
    s = (q @ k.transpose(0, 1, 3, 2)) * 0.125 + g["mask"].reshape(B, 1, 1, S)
    p = softmax_ref(s, -1, False)
    c = (p @ v).transpose(0, 2, 1, 3).reshape(B, S, H)
    a = c @ g["wo"] + g["bo"] + g["x"]
    h = layer_norm_ref(a, g["ln1_g"], g["ln1_b"], -1, 1e-12)
    f = UNARY["gelu"][0](h @ g["w1"] + g["b1"])
    y = layer_norm_ref(f @ g["w2"] + g["b2"] + h, g["ln2_g"], g["ln2_b"], -1, 1e-12)
    return prog, w, y.astype(np.float32)


# ---------------------------------------------------------------- running


def compare(dt, got_dt, got, exp, tol):
    exp = np.asarray(exp)
    if got_dt != dt:
        return f"dtype {got_dt}, expected {dt}"
    if got.shape != exp.shape:
        return f"shape {got.shape}, expected {exp.shape}"
    if dt in FLOATS and tol != "exact":
        rtol, atol = TOL[dt]
        g, e = f64(got), f64(exp)
        ok = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        if not ok.all():
            i = np.argwhere(~ok)[0]
            i = tuple(i)
            return f"mismatch at {i}: got {g[i]!r}, expected {e[i]!r} ({int((~ok).sum())} of {ok.size} off)"
        return None
    if dt in FLOATS:
        same = (f64(got) == f64(exp)) | (np.isnan(f64(got)) & np.isnan(f64(exp)))
    else:
        same = got == exp
    if not np.all(same):
        i = tuple(np.argwhere(~np.asarray(same))[0]) if np.ndim(same) else ()
        return f"mismatch at {i}: got {got[i]!r}, expected {exp[i]!r}"
    return None


def run_case(dscc, case, workdir, compiled=False):
    """None when `case` passes in the interpreter (and, with `compiled`, as a compiled library too), else why not."""
    d = tempfile.mkdtemp(dir=workdir)
    prog = os.path.join(d, "prog.dsc")
    with open(prog, "w") as f:
        f.write(case.program())
    for fname, (dt, a) in case.files.items():
        save(os.path.join(d, fname), dt, a)
    cmd = [dscc, "run", prog]
    for n, dt, a in case.inputs:
        p = os.path.join(d, f"in_{n}.npy")
        save(p, dt, a)
        cmd += ["-i", f"{n}={p}"]
    out = os.path.join(d, "out")
    cmd += ["-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if case.error is not None:
        if r.returncode == 0:
            return "expected an error, but it ran"
        if compiled:  # a data error of compiled code: the same message from the runtime, not located
            so = os.path.join(d, "prog.so")
            rc = subprocess.run([dscc, "compile", prog, "-o", so], capture_output=True, text=True, timeout=300)
            rr = subprocess.run([dscc, "run", so] + cmd[3:], capture_output=True, text=True, timeout=120)
            if rc.returncode != 0 or rr.returncode == 0 or case.error not in rr.stderr:
                return f"compiled: expected error containing {case.error!r}, got: {rc.stderr.strip()} {rr.stderr.strip()}"
        if case.error not in r.stderr:
            return f"expected error containing {case.error!r}, got: {r.stderr.strip()}"
        if ": error: " not in r.stderr:
            return f"error is not located: {r.stderr.strip()}"
        return None
    if r.returncode != 0:
        return f"dscc failed ({r.returncode}): {r.stderr.strip()}\n--- program:\n{case.program()}"
    why = compare_outputs(case, out)
    if why or not compiled:
        return why
    # The same program compiled (symbolic dims stay symbols) and run as a library on the same inputs.
    so = os.path.join(d, "prog.so")
    r = subprocess.run([dscc, "compile", prog, "-o", so], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return f"dscc compile failed ({r.returncode}): {r.stderr.strip()}"
    cmd = [dscc, "run", so, "-o", out + "_compiled"] + cmd[3:-2]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return f"compiled run failed ({r.returncode}): {r.stderr.strip()}"
    why = compare_outputs(case, out + "_compiled")
    return "compiled: " + why if why else None


def compare_outputs(case, out):
    for k, (n, dt, exp) in enumerate(case.outs):
        path = os.path.join(out, f"out{k}.npy")
        if not os.path.exists(path):
            return f"missing output {path}"
        got_dt, got = load(path)
        why = compare(dt, got_dt, got, exp, case.tol)
        if why:
            return f"output {k} (%{n}): {why}"
    return None


def main():
    ap = argparse.ArgumentParser(description="Differential test of `dscc run` against NumPy.")
    ap.add_argument("dscc", help="path to the dscc binary")
    ap.add_argument("-k", dest="only", help="run only cases whose name contains this (alternatives split by '|')")
    ap.add_argument("--compiled", action="store_true",
                    help="also compile each case run (dscc compile) and compare the library's outputs")
    ap.add_argument("-v", dest="verbose", action="store_true", help="print the program of each failure")
    opts = ap.parse_args()
    dscc = os.path.abspath(opts.dscc)
    only, verbose = opts.only, opts.verbose
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    gen_unary()
    gen_binary()
    gen_select()
    gen_reduce()
    gen_argmax()
    gen_composite()
    gen_matmul()
    gen_data_movement()
    gen_slice()
    gen_gather()
    gen_values()
    gen_cast()
    gen_errors()
    gen_check()
    bert = gen_bert(root)
    gen_scatter()
    gen_cumsum()

    failures = []
    count = 0
    with tempfile.TemporaryDirectory(prefix="dscc-ops-vs-numpy-") as work:
        for case in CASES:
            if only and not any(k in case.name for k in only.split("|")):
                continue
            count += 1
            why = run_case(dscc, case, work, opts.compiled)
            print(f"{'FAIL' if why else 'ok  '} {case.name}" + (f": {why}" if why else ""))
            if why:
                failures.append(case.name)
                if verbose:
                    print(case.program())
        if bert and (not only or only in "bert_layer") and not opts.compiled:
            count += 1
            prog, w, exp = bert
            cmd = [dscc, "run", prog, "-o", os.path.join(work, "bert")]
            for n, a in w.items():
                p = os.path.join(work, f"bert_{n}.npy")
                np.save(p, a)
                cmd += ["-i", f"{n}={p}"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            why = f"dscc failed: {r.stderr.strip()}" if r.returncode else None
            if not why:
                got = np.load(os.path.join(work, "bert", "out0.npy"))
                why = compare("f32", "f32", got, exp, None)
            print(f"{'FAIL' if why else 'ok  '} bert_layer B=2 S=8" + (f": {why}" if why else ""))
            if why:
                failures.append("bert_layer B=2 S=8")

    print(f"\n{count - len(failures)} of {count} cases passed")
    if failures:
        print("failures:")
        for f in failures:
            print(f"  {f}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
