#!/usr/bin/python3
# Pad by amounts computed from the input's sizes (pad-from-sizes.test): python3 make_sym_pad.py OUTDIR DSCC.
"""x [N, H, W, C] padded after H and W up to whole windows of 4, pads = (4 - D % 4) % 4 built from Shape, Gather,
Mod and Sub (as torch.export writes torchvision Swin's F.pad), in constant (value 0.5) and edge mode; run interpreted
and compiled at sizes whose pads are 0, 1, 2 and 3, against numpy.pad. Prints `ok NAME HxW HOW` or `WRONG ...`."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from pad_runs import check_pads

out, dscc = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)


def i64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def model(name, mode):
    nodes = [helper.make_node("Shape", ["x"], ["shp"], name="shape")]
    for a in (1, 2):  # p_a = (4 - D_a % 4) % 4, as a [1] vector for the Concat
        nodes += [helper.make_node("Gather", ["shp", "ax%d" % a], ["d%d" % a], name="d%d" % a, axis=0),
                  helper.make_node("Mod", ["d%d" % a, "four"], ["m%d" % a], name="m%d" % a),
                  helper.make_node("Sub", ["four", "m%d" % a], ["r%d" % a], name="r%d" % a),
                  helper.make_node("Mod", ["r%d" % a, "four"], ["p%d" % a], name="p%d" % a),
                  helper.make_node("Unsqueeze", ["p%d" % a, "axes0"], ["v%d" % a], name="v%d" % a)]
    nodes += [helper.make_node("Concat", ["zero", "zero", "zero", "zero", "zero", "v1", "v2", "zero"], ["pads"],
                               name="pads", axis=0),
              helper.make_node("Pad", ["x", "pads"] + (["value"] if mode == "constant" else []), ["y"], name="pad",
                               mode=mode)]
    inits = [i64("ax1", 1), i64("ax2", 2), i64("four", 4), i64("zero", [0]), i64("axes0", [0]),
             numpy_helper.from_array(np.array(0.5, np.float32), "value")]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "H", "W", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], producer_name="dscc-test"),
              os.path.join(out, name + ".onnx"))


rng = np.random.default_rng(7)
for mode in ("constant", "edge"):
    name = "pad_" + mode
    model(name, mode)
    check_pads(dscc, out, name, mode, [(4, 4), (5, 6), (7, 1), (1, 9), (12, 15)],
               lambda h, w: [(0, 0), (0, (4 - h % 4) % 4), (0, (4 - w % 4) % 4), (0, 0)], rng)
