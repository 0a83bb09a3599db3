#!/usr/bin/python3
"""conv, conv_transpose and pool (the sliding-window ops) in dscc against PyTorch, an oracle independent of dscc.

Usage: /usr/bin/python3 test/numeric/window_vs_torch.py PATH/TO/dscc [--compiled] [-k SUBSTRING] [-v]

Each case is a small program with static channels and kernels and symbolic
spatial sizes (H, W, D with `where` ranges). It runs in the reference
interpreter (`dscc run prog.dsc`), or with --compiled is compiled once
(`dscc compile`) and the shared object runs, also checked against the
interpreter on the same inputs (`dscc run --check`, its default tolerance
1e-4 + 1e-4 * |interpreter|), at several sizes: the smallest
input the window accepts (span - pads, or 1 with SAME), one more, and a few
larger ones, odd and even (strides and ceil mode care). Inputs are uniform in
[-1, 1) (never zeros), from a seeded generator.

The oracle is torch.nn.functional: conv1d/2d/3d (asymmetric pads and
auto_pad through F.pad, with the SAME pads computed here from ONNX's rule),
conv_transpose1d/2d/3d (torch's own padding and output_padding where they
are symmetric and small, else the unpadded result cropped or extended by
F.pad, the pads of output_shape and SAME computed here from ONNX's rule),
max_pool (symmetric pads through torch's `padding`, asymmetric ones through
F.pad with -inf), avg_pool (torch's own count_include_pad and ceil_mode), and
for dilated average pooling, which torch lacks, a sum of the zero-padded input
and a count of the window points, both as convolutions with a ones kernel.

Tolerance: |dscc - torch| <= 1e-5 + 1e-5 * |torch| elementwise for f32
results, equal infinities and NaN in both counting as equal (a window wholly
in the padding: -inf for max, 0/0 for average) (the interpreter sums in f64, torch in f32 with its own order: the
sums here have at most a few hundred terms); shapes must be equal. Prints one
line per failing (case, size) and exits 1 on any failure.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

ATOL = 1e-5
RTOL = 1e-5
SYMS = ["H", "W", "D"]

CASES = []


def same_pads(ins, ks, ss, ds, lower):
    """ONNX's SAME pads: ceil(in / s) windows, the odd unit at the end (upper) or the start (lower)."""
    pb, pe = [], []
    for i, k, s, d in zip(ins, ks, ss, ds):
        out = -(-i // s)
        total = max(0, (out - 1) * s + d * (k - 1) + 1 - i)
        b = total - total // 2 if lower else total // 2
        pb.append(b)
        pe.append(total - b)
    return pb, pe


def fpad(pb, pe):
    """F.pad's order: last dim first."""
    out = []
    for b, e in reversed(list(zip(pb, pe))):
        out += [b, e]
    return out


def attrs_text(d):
    parts = []
    for k, v in d.items():
        if isinstance(v, bool):
            parts.append("%s = %s" % (k, "true" if v else "false"))
        elif isinstance(v, str):
            parts.append('%s = "%s"' % (k, v))
        elif isinstance(v, list):
            parts.append("%s = [%s]" % (k, ", ".join(str(x) for x in v)))
        else:
            parts.append("%s = %s" % (k, v))
    return " {" + ", ".join(parts) + "}" if parts else ""


def conv_case(name, n, C, M, ks, group=1, strides=None, dilations=None, pads=None, auto_pad=None, bias=False,
              batch=2):
    strides = strides or [1] * n
    dilations = dilations or [1] * n
    pads = pads or [0] * (2 * n)
    a = {}
    if strides != [1] * n:
        a["strides"] = strides
    if dilations != [1] * n:
        a["dilations"] = dilations
    if auto_pad:
        a["auto_pad"] = auto_pad
    elif pads != [0] * (2 * n):
        a["pads"] = pads
    if group != 1:
        a["group"] = group
    sp = SYMS[:n]
    xdims = ", ".join(["N", str(C)] + sp)
    wdims = ", ".join([str(M), str(C // group)] + [str(k) for k in ks])
    args = "%%x: f32[%s], %%w: f32[%s]" % (xdims, wdims) + (", %%b: f32[%d]" % M if bias else "")
    spans = [d * (k - 1) + 1 for k, d in zip(ks, dilations)]
    if auto_pad and auto_pad.startswith("same"):
        lo = [1] * n
    else:
        lo = [max(1, sp_ - pads[i] - pads[n + i]) for i, sp_ in enumerate(spans)]
    where = ", ".join(["N in [1, 4]"] + ["%s in [%d, 64]" % (s, l) for s, l in zip(sp, lo)])
    ops = "%%y = conv %%x, %%w%s%s" % (", %b" if bias else "", attrs_text(a))
    text = "func @main(%s) -> f32[%s] where %s {\n  %s\n  return %%y\n}\n" % (
        args, ", ".join(["N", "?"] + ["?"] * n), where, ops)

    def fn(x, w, b=None):
        ins = list(x.shape[2:])
        if auto_pad and auto_pad.startswith("same"):
            pb, pe = same_pads(ins, ks, strides, dilations, auto_pad == "same_lower")
        elif auto_pad == "valid":
            pb, pe = [0] * n, [0] * n
        else:
            pb, pe = pads[:n], pads[n:]
        xp = F.pad(x, fpad(pb, pe))
        f = [F.conv1d, F.conv2d, F.conv3d][n - 1]
        return f(xp, w, b, stride=strides, dilation=dilations, groups=group)

    inputs = [("x", ["N", C] + sp), ("w", [M, C // group] + ks)] + ([("b", [M])] if bias else [])
    sizes = size_points(lo, n, batch)
    CASES.append((name, text, inputs, fn, sizes))


def pool_case(name, n, C, kind, ks, strides=None, dilations=None, pads=None, auto_pad=None, ceil_mode=False,
              count_include_pad=None, batch=2):
    strides = strides or [1] * n
    dilations = dilations or [1] * n
    pads = pads or [0] * (2 * n)
    a = {"kind": kind, "kernel_shape": ks}
    if strides != [1] * n:
        a["strides"] = strides
    if dilations != [1] * n:
        a["dilations"] = dilations
    if auto_pad:
        a["auto_pad"] = auto_pad
    elif pads != [0] * (2 * n):
        a["pads"] = pads
    if ceil_mode:
        a["ceil_mode"] = True
    if count_include_pad is not None:
        a["count_include_pad"] = count_include_pad
    sp = SYMS[:n]
    spans = [d * (k - 1) + 1 for k, d in zip(ks, dilations)]
    if auto_pad and auto_pad.startswith("same"):
        lo = [1] * n
    else:
        lo = [max(1, s - pads[i] - pads[n + i]) for i, s in enumerate(spans)]
    where = ", ".join(["N in [1, 4]"] + ["%s in [%d, 64]" % (s, l) for s, l in zip(sp, lo)])
    text = "func @main(%%x: f32[%s]) -> f32[%s] where %s {\n  %%y = pool %%x%s\n  return %%y\n}\n" % (
        ", ".join(["N", str(C)] + sp), ", ".join(["N", str(C)] + ["?"] * n), where, attrs_text(a))
    include = bool(count_include_pad)

    def fn(x):
        ins = list(x.shape[2:])
        if auto_pad and auto_pad.startswith("same"):
            pb, pe = same_pads(ins, ks, strides, dilations, auto_pad == "same_lower")
        elif auto_pad == "valid":
            pb, pe = [0] * n, [0] * n
        else:
            pb, pe = pads[:n], pads[n:]
        symmetric = pb == pe and all(2 * p <= k for p, k in zip(pb, ks))
        if kind == "max":
            f = [F.max_pool1d, F.max_pool2d, F.max_pool3d][n - 1]
            if symmetric:
                return f(x, ks, strides, pb, dilations, ceil_mode=ceil_mode)
            assert not ceil_mode, "asymmetric pads with ceil_mode have no torch oracle here"
            return f(F.pad(x, fpad(pb, pe), value=-math.inf), ks, strides, 0, dilations)
        # torch's avg_pool3d refuses an input smaller than the kernel even when the padding makes up for it.
        if dilations == [1] * n and symmetric and (n < 3 or all(i >= k for i, k in zip(ins, ks))):
            f = [F.avg_pool1d, F.avg_pool2d, F.avg_pool3d][n - 1]
            return f(x, ks, strides, pb, ceil_mode=ceil_mode, count_include_pad=include)
        # Dilated or asymmetric: window sums and counts as convolutions with a ones kernel.
        assert not ceil_mode, "ceil_mode here needs torch's avg_pool"
        conv = [F.conv1d, F.conv2d, F.conv3d][n - 1]
        ones = torch.ones([C, 1] + ks, dtype=x.dtype)
        s = conv(F.pad(x, fpad(pb, pe)), ones, stride=strides, dilation=dilations, groups=C)
        mask = torch.ones([1, 1] + ins, dtype=x.dtype)
        mask = F.pad(mask, fpad(pb, pe), value=1.0 if include else 0.0)
        cnt = conv(mask, torch.ones([1, 1] + ks, dtype=x.dtype), stride=strides, dilation=dilations)
        return s / cnt

    sizes = size_points(lo, n, batch)
    CASES.append((name, text, [("x", ["N", C] + sp)], fn, sizes))


def transpose_pads(ins, ks, ss, ds, ops, pads, auto_pad, output_shape):
    """ONNX's ConvTranspose pads (begin, end) per spatial dim; derived ones (output_shape, SAME) may be negative."""
    n = len(ins)
    if output_shape is None and not (auto_pad or "").startswith("same"):
        return ([0] * n, [0] * n) if auto_pad == "valid" else (pads[:n], pads[n:])
    pb, pe = [], []
    for i in range(n):
        out = output_shape[i] if output_shape is not None else ins[i] * ss[i]
        total = ss[i] * (ins[i] - 1) + ops[i] + ds[i] * (ks[i] - 1) + 1 - out
        b = total // 2 if auto_pad == "same_upper" else total - total // 2
        pb.append(b)
        pe.append(total - b)
    return pb, pe


def conv_transpose_case(name, n, C, M, ks, group=1, strides=None, dilations=None, pads=None, output_padding=None,
                        output_shape=None, auto_pad=None, bias=False, batch=2, lo=None):
    strides = strides or [1] * n
    dilations = dilations or [1] * n
    pads = pads or [0] * (2 * n)
    ops = output_padding or [0] * n
    a = {}
    if strides != [1] * n:
        a["strides"] = strides
    if dilations != [1] * n:
        a["dilations"] = dilations
    if auto_pad:
        a["auto_pad"] = auto_pad
    elif pads != [0] * (2 * n) and output_shape is None:
        a["pads"] = pads
    if output_padding:
        a["output_padding"] = output_padding
    if output_shape:
        a["output_shape"] = output_shape
    if group != 1:
        a["group"] = group
    sp = SYMS[:n]
    xdims = ", ".join(["N", str(C)] + sp)
    wdims = ", ".join([str(C), str(M // group)] + [str(k) for k in ks])
    args = "%%x: f32[%s], %%w: f32[%s]" % (xdims, wdims) + (", %%b: f32[%d]" % M if bias else "")
    lo = lo or [1] * n
    where = ", ".join(["N in [1, 4]"] + ["%s in [%d, 64]" % (s, l) for s, l in zip(sp, lo)])
    text = "func @main(%s) -> f32[%s] where %s {\n  %%y = conv_transpose %%x, %%w%s%s\n  return %%y\n}\n" % (
        args, ", ".join(["N", "?"] + ["?"] * n), where, ", %b" if bias else "", attrs_text(a))

    def fn(x, w, b=None):
        ins = list(x.shape[2:])
        pb, pe = transpose_pads(ins, ks, strides, dilations, ops, pads, auto_pad, output_shape)
        f = [F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][n - 1]
        if pb == pe and all(p >= 0 for p in pb) and all(o < max(s, d) for o, s, d in zip(ops, strides, dilations)):
            return f(x, w, b, stride=strides, padding=pb, output_padding=ops, groups=group, dilation=dilations)
        # The unpadded result, cropped (positive pads) or extended with zeros (negative ones, output_padding).
        y = F.pad(f(x, w, None, stride=strides, groups=group, dilation=dilations),
                  fpad([-p for p in pb], [o - p for o, p in zip(ops, pe)]))
        return y if b is None else y + b.reshape([M] + [1] * n)

    inputs = [("x", ["N", C] + sp), ("w", [C, M // group] + ks)] + ([("b", [M])] if bias else [])
    CASES.append((name, text, inputs, fn, size_points(lo, n, batch)))


def size_points(lo, n, batch):
    """The smallest accepted input, one more, and larger odd and even sizes (fewer in 3-D)."""
    extra = [(7, 8), (16, 13)] if n < 3 else [(6, 5)]
    pts = [[l for l in lo], [l + 1 for l in lo]]
    for a, b in extra:
        pts.append([max(l, a if i % 2 == 0 else b) for i, l in enumerate(lo)])
    out = []
    for i, p in enumerate(pts):
        d = dict(zip(SYMS, p))
        d["N"] = 1 if i % 2 == 0 else batch
        out.append(d)
    return out


# ---------------------------------------------------------------- conv
conv_case("conv1d_plain", 1, 3, 4, [3])
conv_case("conv1d_stride_dil_bias", 1, 4, 6, [3], strides=[2], dilations=[2], pads=[1, 2], bias=True)
conv_case("conv1d_same_upper_s2", 1, 2, 3, [4], strides=[2], auto_pad="same_upper")
conv_case("conv2d_plain", 2, 3, 5, [3, 3], bias=True)
conv_case("conv2d_pad1", 2, 3, 4, [3, 3], pads=[1, 1, 1, 1])
conv_case("conv2d_asym_pads", 2, 2, 3, [3, 2], pads=[0, 2, 1, 1], bias=True)
conv_case("conv2d_stride2_pad3_7x7", 2, 3, 4, [7, 7], strides=[2, 2], pads=[3, 3, 3, 3], bias=True)
conv_case("conv2d_dilation", 2, 2, 2, [3, 3], dilations=[2, 3], pads=[1, 0, 2, 1])
conv_case("conv2d_groups", 2, 6, 4, [3, 3], group=2, pads=[1, 1, 1, 1], bias=True)
conv_case("conv2d_depthwise", 2, 4, 4, [3, 3], group=4, strides=[2, 1], pads=[1, 1, 1, 1])
conv_case("conv2d_depthwise_mult", 2, 3, 6, [3, 3], group=3, pads=[1, 1, 1, 1], bias=True)
conv_case("conv2d_1x1_stride2", 2, 8, 4, [1, 1], strides=[2, 2])
conv_case("conv2d_same_upper", 2, 3, 2, [3, 4], strides=[2, 3], auto_pad="same_upper", bias=True)
conv_case("conv2d_same_lower", 2, 3, 2, [4, 3], strides=[2, 2], dilations=[1, 2], auto_pad="same_lower")
conv_case("conv2d_valid", 2, 2, 3, [3, 2], strides=[2, 1], auto_pad="valid")
conv_case("conv3d_plain", 3, 2, 3, [2, 3, 2], pads=[1, 0, 1, 0, 1, 1], bias=True)
conv_case("conv3d_stride_dil_groups", 3, 4, 2, [3, 2, 2], group=2, strides=[2, 1, 2], dilations=[1, 2, 1])
conv_case("conv3d_same_upper", 3, 2, 2, [3, 3, 3], strides=[2, 2, 1], auto_pad="same_upper")

# ---------------------------------------------------------------- conv_transpose
conv_transpose_case("convT1d_plain", 1, 3, 4, [3])
conv_transpose_case("convT1d_stride_dil_bias", 1, 4, 6, [3], strides=[2], dilations=[2], pads=[1, 2], bias=True)
conv_transpose_case("convT1d_outpad_big", 1, 2, 3, [2], strides=[2], output_padding=[3], bias=True)
conv_transpose_case("convT2d_plain", 2, 3, 5, [3, 3], bias=True)
conv_transpose_case("convT2d_upsample", 2, 4, 2, [4, 4], strides=[2, 2], pads=[1, 1, 1, 1], bias=True)
conv_transpose_case("convT2d_outpad", 2, 3, 4, [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])
conv_transpose_case("convT2d_outpad_nopad", 2, 2, 3, [3, 2], strides=[2, 3], output_padding=[1, 2], bias=True)
conv_transpose_case("convT2d_asym_pads", 2, 2, 3, [3, 3], strides=[2, 1], pads=[0, 2, 1, 1], bias=True, lo=[1, 2])
conv_transpose_case("convT2d_dilation", 2, 2, 2, [3, 2], strides=[1, 2], dilations=[2, 3], pads=[1, 0, 2, 1])
conv_transpose_case("convT2d_groups", 2, 6, 4, [3, 3], group=2, strides=[2, 2], pads=[1, 1, 1, 1], bias=True)
conv_transpose_case("convT2d_depthwise", 2, 4, 4, [3, 3], group=4, strides=[2, 1])
conv_transpose_case("convT2d_groups_mult", 2, 3, 6, [2, 3], group=3, strides=[3, 2], bias=True)
conv_transpose_case("convT2d_same_upper", 2, 3, 2, [3, 4], strides=[2, 3], auto_pad="same_upper", bias=True)
conv_transpose_case("convT2d_same_lower", 2, 3, 2, [4, 3], strides=[2, 2], dilations=[1, 2], auto_pad="same_lower")
conv_transpose_case("convT2d_same_negative", 2, 2, 2, [1, 2], strides=[3, 4], auto_pad="same_upper")
conv_transpose_case("convT2d_valid", 2, 2, 3, [3, 2], strides=[2, 1], auto_pad="valid")
conv_transpose_case("convT2d_output_shape", 2, 2, 3, [3, 3], strides=[2, 2], output_shape=[20, 21], bias=True,
                    lo=[9, 9])
conv_transpose_case("convT3d_plain", 3, 2, 3, [2, 3, 2], pads=[1, 0, 1, 0, 1, 1], bias=True, lo=[2, 1, 2])
conv_transpose_case("convT3d_stride_groups", 3, 4, 2, [3, 2, 2], group=2, strides=[2, 1, 2], dilations=[1, 2, 1],
                    output_padding=[1, 0, 1])

# ---------------------------------------------------------------- pool
pool_case("maxpool1d", 1, 3, "max", [3], strides=[2])
pool_case("maxpool2d_resnet", 2, 3, "max", [3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
pool_case("maxpool2d_ceil", 2, 2, "max", [3, 3], strides=[2, 2], ceil_mode=True)
pool_case("maxpool2d_ceil_pad", 2, 2, "max", [3, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=True)
pool_case("maxpool2d_dilation", 2, 2, "max", [2, 3], strides=[1, 2], dilations=[2, 2], pads=[1, 1, 1, 1])
pool_case("maxpool2d_asym", 2, 2, "max", [3, 3], pads=[0, 1, 2, 1])
pool_case("maxpool2d_same_upper", 2, 2, "max", [3, 2], strides=[2, 2], auto_pad="same_upper")
pool_case("maxpool2d_same_lower", 2, 2, "max", [2, 3], strides=[3, 2], auto_pad="same_lower")
pool_case("maxpool3d", 3, 2, "max", [2, 2, 3], strides=[2, 1, 2], pads=[1, 0, 1, 1, 0, 1], ceil_mode=True)
pool_case("avgpool1d_include", 1, 2, "avg", [3], strides=[2], pads=[1, 1], count_include_pad=True)
pool_case("avgpool2d_exclude", 2, 3, "avg", [3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
pool_case("avgpool2d_include", 2, 3, "avg", [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=True)
pool_case("avgpool2d_ceil_exclude", 2, 2, "avg", [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=True)
pool_case("avgpool2d_ceil_include", 2, 2, "avg", [3, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=True,
          count_include_pad=True)
pool_case("avgpool2d_dilation", 2, 2, "avg", [2, 2], strides=[1, 2], dilations=[2, 3], pads=[1, 0, 1, 2])
pool_case("avgpool2d_dilation_include", 2, 2, "avg", [3, 2], dilations=[2, 1], pads=[2, 1, 0, 1],
          count_include_pad=True)
pool_case("avgpool2d_same_upper", 2, 2, "avg", [3, 3], strides=[2, 2], auto_pad="same_upper")
pool_case("avgpool2d_same_lower_include", 2, 2, "avg", [2, 2], auto_pad="same_lower", count_include_pad=True)
pool_case("avgpool3d", 3, 2, "avg", [2, 3, 2], strides=[2, 2, 1], pads=[1, 1, 0, 1, 1, 0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dscc")
    ap.add_argument("--compiled", action="store_true", help="compile each case and run the shared object")
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("-v", action="store_true")
    opts = ap.parse_args()
    bad = runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ci, (name, text, inputs, fn, sizes) in enumerate(CASES):
            if opts.k not in name:
                continue
            src = os.path.join(tmp, name + ".dsc")
            open(src, "w").write(text)
            prog = src
            if opts.compiled:
                prog = os.path.join(tmp, name + ".so")
                c = subprocess.run([opts.dscc, "compile", src, "-o", prog], capture_output=True, text=True)
                if c.returncode != 0:
                    print("FAIL %s: compile: %s" % (name, c.stderr.strip()))
                    bad += 1
                    continue
            for si, sz in enumerate(sizes):
                rng = np.random.default_rng(1000 * ci + si)
                args, cmd = [], [opts.dscc, "run", prog]
                for iname, dims in inputs:
                    shape = [d if isinstance(d, int) else sz[d] for d in dims]
                    a = rng.uniform(-1, 1, size=shape).astype(np.float32)
                    path = os.path.join(tmp, "%s.npy" % iname)
                    np.save(path, a)
                    args.append(torch.from_numpy(a))
                    cmd += ["-i", "%s=%s" % (iname, path)]
                out = os.path.join(tmp, "out")
                for f in os.listdir(out) if os.path.isdir(out) else []:
                    os.remove(os.path.join(out, f))
                # Compiled: also against the interpreter on the same inputs (`--check`).
                c = subprocess.run(cmd + ["-o", out] + (["--check"] if opts.compiled else []), capture_output=True,
                                   text=True)
                runs += 1
                if c.returncode != 0 or (opts.compiled and "check: ok" not in c.stdout):
                    print("FAIL %s at %s: run: %s" % (name, sz, (c.stderr + c.stdout).strip()[-600:]))
                    bad += 1
                    continue
                with torch.no_grad():
                    want = fn(*args).numpy().astype(np.float64)
                got = np.load(os.path.join(out, "out0.npy")).astype(np.float64)
                if got.shape != want.shape:
                    print("FAIL %s at %s: shape %s, torch %s" % (name, sz, got.shape, want.shape))
                    bad += 1
                    continue
                # A window wholly in the padding: -inf (max) or 0/0 = NaN (avg) in both.
                same = (got == want) | (np.isnan(got) & np.isnan(want))
                with np.errstate(invalid="ignore"):
                    diff = np.where(same, 0.0, np.abs(got - want))
                if not np.all(same | (diff <= ATOL + RTOL * np.abs(want))):
                    print("FAIL %s at %s: max abs err %.3g" % (name, sz, diff.max()))
                    bad += 1
                elif opts.v:
                    print("ok   %s at %s: %s" % (name, sz, got.shape))
    mode = "compiled" if opts.compiled else "interpreted"
    print("window ops vs torch (%s): %d cases at %d sizes; %d failures" % (mode, len(CASES), runs, bad))
    return 1 if bad or runs == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
