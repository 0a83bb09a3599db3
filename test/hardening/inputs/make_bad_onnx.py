"""Writes ONNX models whose data or shapes are bad, for onnx-import.test: python3 make_bad_onnx.py OUTDIR."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])


def save(name, nodes, inputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, [y], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


# An initializer whose dims claim 2^33 floats with 16 bytes of data (was 32 GB allocated, then an abort).
w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2**33], raw_data=b"\0" * 16)
save("big_raw", [helper.make_node("Add", ["x", "w"], ["y"])], [x], [w])
# ConstantOfShape of a negative size (was imported as f32[-3], which does not parse).
save("neg_shape", [helper.make_node("ConstantOfShape", ["s"], ["y"])], [],
     [numpy_helper.from_array(np.array([-3], np.int64), "s")])
# Reshape of f32[0, 4] to [0, -1]: the -1 is 0/0 (was imported as (0)/0).
save("reshape_zero", [helper.make_node("Reshape", ["x", "s"], ["y"])],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 4])],
     [numpy_helper.from_array(np.array([0, -1], np.int64), "s")])
# A slice step of INT64_MIN (was printed as --9223372036854775808).
save("slice_min_step", [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [x],
     [numpy_helper.from_array(np.array([v], np.int64), n)
      for v, n in [(0, "st"), (2**63 - 1, "en"), (0, "ax"), (-2**63, "sp")]])
# A graph input of 100 dims.
save("rank100", [helper.make_node("Relu", ["x"], ["y"])],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * 100)])
# An initializer that is also a graph input, of another shape than the input
# declares (was used silently at the initializer's shape).
save("init_shape", [helper.make_node("Relu", ["w"], ["y"])],
     [helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4])],
     [numpy_helper.from_array(np.ones((2, 5), np.float32) * 0.5, "w")])
save("init_dtype", [helper.make_node("Relu", ["w"], ["y"])],
     [helper.make_tensor_value_info("w", TensorProto.DOUBLE, [2, 5])],
     [numpy_helper.from_array(np.ones((2, 5), np.float32) * 0.5, "w")])
# Two dim_params that sanitise to one name ("a b" and "a_b") are two sizes
# (were merged into one symbol a_b).
save("dim_merge", [helper.make_node("Add", ["p", "q"], ["y"])],
     [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["a b", 1]),
      helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, "a_b"])])
