#!/usr/bin/python3
# Ceil-mode pools whose one window hangs past the end of a small input (ceil-pool.test): python3 make_ceil_pool.py OUTDIR DSCC.
"""Writes MaxPool and AveragePool models with ceil_mode = 1 over [N, C, H, W], runs each interpreted and compiled at
sizes down to those where the input (plus its padding) is narrower than the window but the ceil rule still gives one
window (SqueezeNet's and GoogLeNet's 3x3/2 max pools on a 2-wide map), and compares with a NumPy reference of
PyTorch's rule (torch.nn.functional.max_pool2d / avg_pool2d with ceil_mode=True): out = ceil((D + 2p - k) / s) + 1,
less one when the last window starts past D + p; a window reads only the input, and an average divides by its
points inside the input, or with count_include_pad inside [-p, D + p). Prints `ok NAME HxW HOW` or `WRONG ...`."""
import math
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out, dscc = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)

# name: (op, kernel, stride, pad, count_include_pad); the sizes (H, W) run: 2 (and with the pads 1) hang.
SIZES = [(2, 2), (2, 5), (3, 4), (8, 9), (13, 6)]
CASES = {
    "max_k3s2": (("MaxPool", 3, 2, 0, 0), SIZES),
    "avg_k3s2": (("AveragePool", 3, 2, 0, 0), SIZES),
    "avg_k4s3_pad1_incl": (("AveragePool", 4, 3, 1, 1), SIZES + [(1, 1), (1, 7)]),
    "avg_k4s3_pad1_excl": (("AveragePool", 4, 3, 1, 0), SIZES + [(1, 1), (1, 7)]),
}


def out_size(d, k, s, p):
    o = math.ceil((d + 2 * p - k) / s) + 1
    if (o - 1) * s >= d + p:
        o -= 1
    return o


def reference(x, op, k, s, p, incl):
    n, c, h, w = x.shape
    oh, ow = out_size(h, k, s, p), out_size(w, k, s, p)
    y = np.zeros((n, c, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - p, j * s - p
            win = x[:, :, max(h0, 0):min(h0 + k, h), max(w0, 0):min(w0 + k, w)].astype(np.float64)
            if op == "MaxPool":
                y[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = ((min(h0 + k, h + p) - h0) * (min(w0 + k, w + p) - w0) if incl
                       else win.shape[2] * win.shape[3])
                y[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return y.astype(np.float32)


def save(name, op, k, s, p, incl):
    attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[p] * 4, ceil_mode=1)
    if op == "AveragePool":
        attrs["count_include_pad"] = incl
    node = helper.make_node(op, ["x"], ["y"], name="pool", **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "C", "H", "W"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], producer_name="dscc-test")
    onnx.save(m, os.path.join(out, name + ".onnx"))


rng = np.random.default_rng(5)
for name, (case, sizes) in CASES.items():
    save(name, *case)
    subprocess.run([dscc, "compile", os.path.join(out, name + ".onnx"), "-o", os.path.join(out, name + ".so")],
                   check=True)
    for h, w in sizes:
        x = rng.standard_normal((2, 3, h, w)).astype(np.float32)
        xf = os.path.join(out, "%s.%dx%d.x.npy" % (name, h, w))
        np.save(xf, x)
        want = reference(x, *case)
        for how, model in (("interpreted", name + ".onnx"), ("compiled", name + ".so")):
            d = os.path.join(out, "%s.%dx%d.%s" % (name, h, w, how))
            subprocess.run([dscc, "run", os.path.join(out, model), "-i", "x=" + xf, "-o", d], check=True,
                           stdout=subprocess.DEVNULL)
            got = np.load(os.path.join(d, "y.npy"))
            if got.shape != want.shape or not np.allclose(got, want, atol=1e-5, rtol=1e-5):
                print("WRONG %s %dx%d %s: %s vs %s" % (name, h, w, how, got.shape, want.shape))
            else:
                print("ok %s %dx%d %s" % (name, h, w, how))
