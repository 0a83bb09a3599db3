#!/usr/bin/python3
# Resize/Upsample models over symbolic sizes with numpy expected outputs, run through dscc: make_resize.py OUTDIR [DSCC].
"""Writes one ONNX model per Resize/Upsample mode (symbolic N, C, H, W) to
OUTDIR and, per input size, an input and the expected output computed here
with numpy, independently of dscc: ONNX's reference algorithm, one output
element at a time (the source coordinate, its neighbours in the edge-padded
input, their weights). With DSCC, runs every model interpreted (`dscc run
M.onnx`) and compiled (`dscc compile`, `dscc run M.so`) at every size and
prints `ok NAME` or `WRONG NAME ...` per model and size."""
import math
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
SIZES = [(1, 1), (3, 5), (4, 4), (7, 2)]  # (H, W): 1, odd and even


def coord(x, scale, length_in, length_out, length_out_int, mode):
    """The source coordinate of output index x (ONNX's coordinate_transformation_mode)."""
    if mode == "asymmetric":
        return x / scale
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if length_out > 1 else -0.5
    if mode == "half_pixel_symmetric":  # opset 19: the grid centred, offset by the size's rounding
        adjustment = length_out_int / length_out
        return length_in / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5
    if mode == "align_corners":
        return 0.0 if length_out == 1 else x * (length_in - 1) / (length_out - 1)
    raise ValueError(mode)


def weights_1d(n_in, n_out, scale, length_out, kind, coord_mode, nearest, a, exclude):
    """The [n_out, n_in] matrix of one axis: row x holds each input element's weight in output x."""
    m = np.zeros((n_out, n_in))
    for x in range(n_out):
        xo = coord(x, scale, n_in, length_out, n_out, coord_mode)
        fl = math.floor(xo)
        r = xo - fl
        if kind == "nearest":
            if r == 0:
                i = fl
            elif nearest == "round_prefer_floor":
                i = fl + (r > 0.5)
            elif nearest == "round_prefer_ceil":
                i = fl + (r >= 0.5)
            elif nearest == "floor":
                i = fl
            else:
                i = fl + 1
            m[x, min(max(i, 0), n_in - 1)] = 1
            continue
        if kind == "linear":
            taps, w = [fl, fl + 1], [1 - r, r]
        else:
            def near(t):
                return ((a + 2) * t - (a + 3)) * t * t + 1

            def far(t):
                return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
            taps, w = [fl - 1, fl, fl + 1, fl + 2], [far(r + 1), near(r), near(1 - r), far(2 - r)]
        if exclude:
            w = [wi if 0 <= t < n_in else 0 for t, wi in zip(taps, w)]
            s = sum(w)
            w = [wi / s for wi in w]
        for t, wi in zip(taps, w):
            m[x, min(max(t, 0), n_in - 1)] += wi
    return m


def reference(x, spec, out_hw):
    """x resized over H and W as `spec` says, to out_hw = (H', W')."""
    y = x.astype(np.float64)
    for axis, n_out in ((2, out_hw[0]), (3, out_hw[1])):
        n_in = x.shape[axis]
        if spec.get("keep"):  # one scale for both axes: the smallest or largest of target / in
            pick = min if spec["keep"] == "not_larger" else max
            scale = pick(t / d for t, d in zip(spec["target"], x.shape[2:]))
            length = scale * n_in
        elif spec.get("scales"):
            scale = float(np.float32(spec["scales"][axis]))
            length = scale * n_in
        else:
            scale, length = n_out / n_in, n_out
        if scale == 1 and spec["coord"] != "tf_half_pixel_for_nn":
            continue
        w = weights_1d(n_in, n_out, scale, length, spec["mode"], spec["coord"], spec.get("nearest", "round_prefer_floor"),
                       spec.get("a", -0.75), spec.get("exclude", 0))
        y = np.moveaxis(np.tensordot(w, np.moveaxis(y, axis, 0), axes=(1, 0)), 0, axis)
    return y.astype(x.dtype)


def save(name, nodes, inits, opset, shape=("N", "C", "H", "W")):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)
    g = helper.make_graph(nodes, name, [x], [y], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="dscc-test")
    onnx.save(m, os.path.join(out, name + ".onnx"))


def f32(name, v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


def i64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


# Sizes from shapes, as PyTorch's interpolate(size=...) exports them: [N, C, 2H+1, W+3].
SIZES_NODES = [
    helper.make_node("Shape", ["x"], ["shp"]),
    helper.make_node("Slice", ["shp", "s0", "s2"], ["nc"]),
    helper.make_node("Slice", ["shp", "s2", "s4"], ["hw"]),
    helper.make_node("Mul", ["hw", "mul"], ["hw2"]),
    helper.make_node("Add", ["hw2", "add"], ["hw3"]),
    helper.make_node("Concat", ["nc", "hw3"], ["sizes"], axis=0),
]
SIZES_INITS = [i64("s0", [0]), i64("s2", [2]), i64("s4", [4]), i64("mul", [2, 1]), i64("add", [1, 3])]

# name: attributes; scales (per axis) or sizes from shapes (2H+1, W+3).
CASES = {
    "nearest_half_pixel": dict(mode="nearest", coord="half_pixel", scales=[1, 1, 2, 3]),
    "nearest_ceil_asym": dict(mode="nearest", coord="asymmetric", nearest="ceil", scales=[1, 1, 1.5, 0.6]),
    "nearest_prefer_ceil_sizes": dict(mode="nearest", coord="half_pixel", nearest="round_prefer_ceil"),
    "nearest_floor_align": dict(mode="nearest", coord="align_corners", nearest="floor"),
    "nearest_tf_nn": dict(mode="nearest", coord="tf_half_pixel_for_nn", scales=[1, 1, 0.5, 2]),
    "linear_half_pixel": dict(mode="linear", coord="half_pixel", scales=[1, 1, 2, 0.5]),
    "linear_align": dict(mode="linear", coord="align_corners"),
    "linear_pytorch": dict(mode="linear", coord="pytorch_half_pixel", scales=[1, 1, 0.75, 3]),
    "linear_asym": dict(mode="linear", coord="asymmetric", scales=[1, 1, 2.5, 1]),
    "cubic_half_pixel": dict(mode="cubic", coord="half_pixel"),
    "cubic_align": dict(mode="cubic", coord="align_corners", scales=[1, 1, 2, 2]),
    "cubic_exclude": dict(mode="cubic", coord="asymmetric", a=-0.5, exclude=1, scales=[1, 1, 3, 0.5]),
}


def out_hw(spec, h, w):
    if spec.get("keep"):
        pick = min if spec["keep"] == "not_larger" else max
        scale = pick(spec["target"][0] / h, spec["target"][1] / w)
        return (int(math.floor(scale * h + 0.5)), int(math.floor(scale * w + 0.5)))
    if spec.get("scales"):
        s = spec["scales"]
        return (int(math.floor(h * float(np.float32(s[2])))), int(math.floor(w * float(np.float32(s[3])))))
    return (2 * h + 1, w + 3)


for name, spec in CASES.items():
    attrs = dict(mode=spec["mode"], coordinate_transformation_mode=spec["coord"])
    if "nearest" in spec:
        attrs["nearest_mode"] = spec["nearest"]
    if "a" in spec:
        attrs["cubic_coeff_a"] = spec["a"]
    if "exclude" in spec:
        attrs["exclude_outside"] = spec["exclude"]
    if spec.get("scales"):
        save(name, [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", **attrs)],
             [f32("scales", spec["scales"])], 13)
    else:
        save(name, SIZES_NODES + [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize", **attrs)],
             SIZES_INITS, 13)

# Opset 18's axes (sizes for H and W only), opset 19's half_pixel_symmetric, Upsample (opset 9) and Resize-10: asymmetric, nearest rounds down.
CASES["axes_linear"] = dict(mode="linear", coord="half_pixel", fixed=(5, 3))
save("axes_linear", [helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="resize", mode="linear", axes=[2, 3])],
     [i64("sz", [5, 3])], 18)
CASES["upsample9"] = dict(mode="nearest", coord="asymmetric", nearest="floor", scales=[1, 1, 2, 1.5])
save("upsample9", [helper.make_node("Upsample", ["x", "scales"], ["y"], name="up", mode="nearest")],
     [f32("scales", [1, 1, 2, 1.5])], 9)
CASES["resize10_linear"] = dict(mode="linear", coord="asymmetric", scales=[1, 1, 0.5, 3])
save("resize10_linear", [helper.make_node("Resize", ["x", "scales"], ["y"], name="resize", mode="linear")],
     [f32("scales", [1, 1, 0.5, 3])], 10)

CASES["linear_symmetric"] = dict(mode="linear", coord="half_pixel_symmetric", scales=[1, 1, 1.7, 0.6])
save("linear_symmetric", [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", mode="linear",
                                           coordinate_transformation_mode="half_pixel_symmetric")],
     [f32("scales", [1, 1, 1.7, 0.6])], 19)

# keep_aspect_ratio_policy (opset 18, known dims only): one scale, sizes rounded, at 3x5 only.
for keep, target in (("not_larger", (4, 6)), ("not_smaller", (6, 6))):
    CASES["keep_" + keep] = dict(mode="linear", coord="half_pixel", keep=keep, target=target, only=(3, 5))
    save("keep_" + keep, [helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="resize", mode="linear", axes=[2, 3],
                                           keep_aspect_ratio_policy=keep)], [i64("sz", list(target))], 18,
         shape=(2, 3, 3, 5))

# Refused: tf_crop_and_resize, antialias, a mode ONNX does not define.
for name, attrs in (("bad_crop", dict(coordinate_transformation_mode="tf_crop_and_resize")),
                    ("bad_antialias", dict(antialias=1, mode="linear")), ("bad_mode", dict(mode="area"))):
    save(name, [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", **attrs)],
         [f32("scales", [1, 1, 2, 2])], 18)

# Inputs and expected outputs (a size that resizes to 0 elements is skipped).
runs = []
for name, spec in CASES.items():
    for h, w in [spec["only"]] if "only" in spec else SIZES:
        hw = spec.get("fixed") or out_hw(spec, h, w)
        if 0 in hw:
            continue
        x = rng.uniform(-1, 1, size=(2, 3, h, w)).astype(np.float32)
        tag = "%s_%dx%d" % (name, h, w)
        np.save(os.path.join(out, tag + ".x.npy"), x)
        np.save(os.path.join(out, tag + ".want.npy"), reference(x, spec, hw))
        runs.append((name, tag))

if len(sys.argv) > 2:
    dscc = sys.argv[2]
    for name in CASES:
        subprocess.run([dscc, "compile", os.path.join(out, name + ".onnx"), "-o", os.path.join(out, name + ".so")],
                       check=True)
    for name, tag in runs:
        for how, model in (("interpreted", name + ".onnx"), ("compiled", name + ".so")):
            d = os.path.join(out, tag + "." + how)
            subprocess.run([dscc, "run", os.path.join(out, model), "-i", "x=" + os.path.join(out, tag + ".x.npy"),
                            "-o", d], check=True, stdout=subprocess.DEVNULL)
            got, want = np.load(os.path.join(d, "y.npy")), np.load(os.path.join(out, tag + ".want.npy"))
            if got.shape != want.shape or not np.allclose(got, want, atol=1e-5, rtol=1e-4):
                print("WRONG %s %s: %s vs %s, max error %s" % (tag, how, got.shape, want.shape,
                      np.abs(got - want).max() if got.shape == want.shape else "-"))
            else:
                print("ok %s %s" % (tag, how))
