#!/usr/bin/python3
# Pads computed from sizes routed through rank-2 matrices (pad-matrix.test): python3 make_pad_matrix.py OUTDIR DSCC.
"""x [N, H, W, C] padded before and after H and W by amounts computed from its sizes, the amounts passing through
[k, 2] and [2, k] matrices before the Pad, as the importer must track size values of any rank (issue #37):

- pad_reverse (constant mode, value 0.5): TorchScript's F.pad. The amounts in F.pad's order (last dim first, before
  and after each), zeros appended by ConstantOfShape, Reshape to [-1, 2], Slice of the rows with step -1, Transpose,
  Reshape to [-1], Cast. The reversed [4, 2] matrix is also an output (`rows`, i64), so that a known matrix whose
  elements are sizes is materialised as a tensor.
- pad_gather (edge mode): per-dim (before, after) rows in reverse dim order, each an Unsqueeze of a [2] vector,
  concatenated to [4, 2], Transpose to [2, 4], Gather of the columns [3, 2, 1, 0] (axis 1), plus and minus a [2, 1]
  constant (broadcasting), Flatten, Squeeze.

before = D % 3, after = (4 - D % 4) % 4 for D = H, W. Each is run interpreted and compiled at several sizes against
numpy.pad; prints `ok NAME HxW HOW` or `WRONG ...`. Also writes pad_unknown.onnx, pad_reverse with one amount read
from an input tensor's data (refused at the Pad)."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from pad_runs import check_pads

out, dscc = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
INT64_MIN1 = -(2 ** 63) + 1  # TorchScript's "to the start" end of a backward slice


def i64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def amounts(a):
    """Nodes computing b<a> = D_a % 3 and e<a> = (4 - D_a % 4) % 4 as scalars, D_a = Shape(x)[a]."""
    return [helper.make_node("Gather", ["shp", "ax%d" % a], ["d%d" % a], name="d%d" % a, axis=0),
            helper.make_node("Mod", ["d%d" % a, "three"], ["b%d" % a], name="b%d" % a),
            helper.make_node("Mod", ["d%d" % a, "four"], ["m%d" % a], name="m%d" % a),
            helper.make_node("Sub", ["four", "m%d" % a], ["r%d" % a], name="r%d" % a),
            helper.make_node("Mod", ["r%d" % a, "four"], ["e%d" % a], name="e%d" % a)]


def vec(s):
    return helper.make_node("Unsqueeze", [s, "axes0"], [s + "v"], name=s + "v")


COMMON = [i64("ax1", 1), i64("ax2", 2), i64("three", 3), i64("four", 4), i64("axes0", [0]), i64("zero", [0])]


def save(name, nodes, inits, outputs, extra_inputs=()):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "H", "W", 3])
    g = helper.make_graph(nodes, name, [x] + list(extra_inputs), outputs, initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], producer_name="dscc-test"),
              os.path.join(out, name + ".onnx"))


def pad_reverse(name, unknown=False):
    # F.pad(x, (0, 0, bW, eW, bH, eH)): C's, W's, then H's (before, after); N's come from the ConstantOfShape.
    nodes = [helper.make_node("Shape", ["x"], ["shp"], name="shape")] + amounts(1) + amounts(2)
    nodes += [vec(s) for s in ("b1", "e1", "b2", "e2")]
    e1 = "e1v"
    extra = []
    if unknown:  # the amount after H read from data: not known when importing
        extra = [helper.make_tensor_value_info("amount", TensorProto.INT64, [1])]
        e1 = "amount"
    nodes += [helper.make_node("Concat", ["zero", "zero", "b2v", "e2v", "b1v", e1], ["given"], name="given", axis=0),
              helper.make_node("Cast", ["given"], ["given64"], name="given64", to=TensorProto.INT64),
              helper.make_node("ConstantOfShape", ["two"], ["rest"], name="rest",
                               value=numpy_helper.from_array(np.array([0], np.int64))),
              helper.make_node("Concat", ["given64", "rest"], ["all"], name="all", axis=0),
              helper.make_node("Reshape", ["all", "rowshape"], ["mat"], name="mat"),
              helper.make_node("Slice", ["mat", "neg1", "tostart", "zero", "neg1"], ["rows"], name="reverse"),
              helper.make_node("Transpose", ["rows"], ["cols"], name="transpose", perm=[1, 0]),
              helper.make_node("Reshape", ["cols", "neg1"], ["flat"], name="flat"),
              helper.make_node("Cast", ["flat"], ["pads"], name="pads", to=TensorProto.INT64),
              helper.make_node("Pad", ["x", "pads", "value"], ["y"], name="pad", mode="constant")]
    inits = COMMON + [i64("two", [2]), i64("rowshape", [-1, 2]), i64("neg1", [-1]), i64("tostart", [INT64_MIN1]),
                      numpy_helper.from_array(np.array(0.5, np.float32), "value")]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4),
            helper.make_tensor_value_info("rows", TensorProto.INT64, [4, 2])]
    save(name, nodes, inits, outs, extra)


def pad_gather(name):
    nodes = [helper.make_node("Shape", ["x"], ["shp"], name="shape")] + amounts(1) + amounts(2)
    nodes += [vec(s) for s in ("b1", "e1", "b2", "e2")]
    # Rows (before, after) of C, W, H, N, each a [1, 2] matrix.
    for d, (b, e) in (("c", ("zero", "zero")), ("w", ("b2v", "e2v")), ("h", ("b1v", "e1v")), ("n", ("zero", "zero"))):
        nodes += [helper.make_node("Concat", [b, e], ["p" + d], name="p" + d, axis=0),
                  helper.make_node("Unsqueeze", ["p" + d, "axes0"], ["row" + d], name="row" + d)]
    nodes += [helper.make_node("Concat", ["rowc", "roww", "rowh", "rown"], ["mat"], name="mat", axis=0),
              helper.make_node("Transpose", ["mat"], ["t"], name="transpose"),
              helper.make_node("Gather", ["t", "order"], ["g"], name="gather", axis=1),
              helper.make_node("Add", ["g", "k"], ["gk"], name="plus"),
              helper.make_node("Sub", ["gk", "k"], ["g2"], name="minus"),
              helper.make_node("Flatten", ["g2"], ["f"], name="flatten", axis=0),
              helper.make_node("Squeeze", ["f", "axes0"], ["pads"], name="pads"),
              helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="edge")]
    inits = COMMON + [i64("order", [3, 2, 1, 0]), i64("k", [[5], [7]])]
    save(name, nodes, inits, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)])


pad_reverse("pad_reverse")
pad_gather("pad_gather")
pad_reverse("pad_unknown", unknown=True)

rng = np.random.default_rng(37)
for name, mode in (("pad_reverse", "constant"), ("pad_gather", "edge")):
    def rows_match(d, pw, name=name):
        if name != "pad_reverse":
            return True
        rows = np.load(os.path.join(d, "rows.npy"))
        return rows.dtype == np.int64 and np.array_equal(rows, np.array(pw, np.int64))
    check_pads(dscc, out, name, mode, [(4, 4), (5, 6), (7, 1), (1, 9), (12, 15), (3, 2)],
               lambda h, w: [(0, 0), (h % 3, (4 - h % 4) % 4), (w % 3, (4 - w % 4) % 4), (0, 0)], rng, rows_match)
