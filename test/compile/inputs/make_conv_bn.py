#!/usr/bin/python3
# Writes OUTDIR/conv_bn.dsc and its weight files: convs followed by inference batch norms written as ONNX's
# BatchNormalization imports them ((y - mean) * (rsqrt(var + eps) * scale) + bias, per-channel [1, C, 1, 1] operands
# from file constants), for test/compile/conv-batch-norm.test: python3 make_conv_bn.py OUTDIR.
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(37)


def save(name, shape, lo=-1.0, hi=1.0):
    np.save(os.path.join(out, name + ".npy"), rng.uniform(lo, hi, shape).astype(np.float32))
    dims = ", ".join(str(d) for d in shape)
    return "  %%%s = constant file(\"%s.npy\") : f32[%s]\n" % (name, name, dims)


def batch_norm(y, p, c, rank):
    """The chain after %y for C = c channels at rank `rank`; returns its text and the result's name."""
    shape = ", ".join(["1", str(c)] + ["1"] * (rank - 2))
    t = ""
    for n, lo, hi in (("mean", -0.5, 0.5), ("var", 0.5, 1.5), ("scale", 0.5, 1.5), ("bias", -0.5, 0.5)):
        t += save("%s.%s" % (p, n), (c,), lo, hi)
        t += "  %%%s.%s4 = reshape %%%s.%s : f32[%s]\n" % (p, n, p, n, shape)
    t += "  %%%s.eps = constant 1e-05 : f32[]\n" % p
    t += "  %%%s.ve = add %%%s.var4, %%%s.eps\n" % (p, p, p)
    t += "  %%%s.inv = rsqrt %%%s.ve\n" % (p, p)
    t += "  %%%s.k = mul %%%s.inv, %%%s.scale4\n" % (p, p, p)
    t += "  %%%s.c = sub %%%s, %%%s.mean4\n" % (p, y, p)
    t += "  %%%s.m = mul %%%s.c, %%%s.k\n" % (p, p, p)
    t += "  %%%s.y = add %%%s.m, %%%s.bias4\n" % (p, p, p)
    return t, p + ".y"


body = ""
# A conv with a bias, its batch norm, a relu.
body += save("w1", (32, 4, 3, 3)) + save("b1", (32,))  # over 1024 elements: its fold is a file constant
body += "  %c1 = conv %x, %w1, %b1 {pads = [1, 1, 1, 1]}\n"
t, bn1 = batch_norm("c1", "bn1", 32, 4)
body += t + "  %%r1 = relu %%%s\n" % bn1
# The same weight in a conv without a batch norm: it must keep reading the weight as it was.
body += "  %c2 = conv %x, %w1 {pads = [1, 1, 1, 1]}\n"
# A depthwise conv (group 4) without a bias, strided.
body += save("wd", (4, 1, 3, 3))
body += "  %d = conv %x, %wd {group = 4, strides = [2, 2], pads = [1, 1, 1, 1]}\n"
t, bnd = batch_norm("d", "bnd", 4, 4)
body += t
# A 1-D conv: a scale of shape [6, 1] (rank 2 against rank 3: still the channel) and a scalar shift.
body += save("w3", (6, 4, 2)) + save("s3", (6, 1), 0.5, 2.0)
body += "  %e = conv %z, %w3 {dilations = [2]}\n"
body += "  %e.s = mul %e, %s3\n  %e.half = constant 0.5 : f32[]\n  %e.y = sub %e.s, %e.half\n"

text = ("// Convs followed by inference batch norms, as ONNX BatchNormalization imports them (make_conv_bn.py).\n"
        "func @main(%x: f32[N, 4, H, W], %z: f32[N, 4, L]) -> f32[N, 32, H, W], f32[N, 32, H, W], f32[N, 4, ?, ?], "
        "f32[N, 6, ?] {\n" + body + "  return %%r1, %%c2, %%%s, %%e.y\n}\n" % bnd)
with open(os.path.join(out, "conv_bn.dsc"), "w") as f:
    f.write(text)
