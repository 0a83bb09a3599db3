#!/usr/bin/python3
# A model whose Reshape changes the element count at every size the facts allow (facts-errors.test): python3 make_wrong_count.py OUTDIR.
"""x [N, S, 32] -> Reshape to [N, S, 2, 8] (the shape built from Shape/Gather/Concat, with a head count of 2 where 32
needs 4, as a TorchScript trace of Cohere writes it) -> Transpose -> Mul by a [1, 1, S, 8] table, which no longer
broadcasts. Without facts the Reshape holds at N*S = 0 and fails at run time; under `N in [1, 4]` it is wrong
everywhere, and the importer must name it, not the Mul after it."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def i64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


nodes = [
    helper.make_node("Shape", ["x"], ["shp"], name="shape"),
    helper.make_node("Gather", ["shp", "zero"], ["n"], name="n", axis=0),
    helper.make_node("Gather", ["shp", "one"], ["s"], name="s", axis=0),
    helper.make_node("Unsqueeze", ["n", "ax0"], ["nu"], name="nu"),
    helper.make_node("Unsqueeze", ["s", "ax0"], ["su"], name="su"),
    helper.make_node("Concat", ["nu", "su", "heads", "dim"], ["target"], name="target", axis=0),
    helper.make_node("Reshape", ["x", "target"], ["q"], name="split_heads"),
    helper.make_node("Transpose", ["q"], ["qt"], name="heads_first", perm=[0, 2, 1, 3]),
    helper.make_node("Mul", ["qt", "cos"], ["y"], name="rotary"),
]
inits = [i64("zero", 0), i64("one", 1), i64("ax0", [0]), i64("heads", [2]), i64("dim", [8]),
         numpy_helper.from_array(np.ones((1, 1, 4, 8), np.float32), "cos")]
g = helper.make_graph(nodes, "wrong_count", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 32])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)], initializer=inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="dscc-test"),
          os.path.join(out, "wrong_count.onnx"))
