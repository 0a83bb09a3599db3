#!/usr/bin/python3
# Writes the small ONNX models the lit tests of test/onnx/ import (with Debian's python3-onnx): python3 make_models.py OUTDIR.
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="dscc-test")
    onnx.save(m, os.path.join(out, name + ".onnx"))
    return m


rng = np.random.default_rng(0)
W = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "fc.weight")
B = numpy_helper.from_array(np.arange(3, dtype=np.float32), "fc.bias")
# A dense layer over a symbolic batch, then a shape subgraph: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
mlp = save("mlp", [
    helper.make_node("MatMul", ["x", "fc.weight"], ["mm"], name="fc/MatMul"),
    helper.make_node("Add", ["mm", "fc.bias"], ["h"], name="fc/Add"),
    helper.make_node("Relu", ["h"], ["r"], name="relu"),
    helper.make_node("Shape", ["x"], ["shape"], name="shape"),
    helper.make_node("Gather", ["shape", "zero"], ["batch_dim"], name="gather", axis=0),
    helper.make_node("Unsqueeze", ["batch_dim", "axes0"], ["batch_1"], name="unsqueeze"),
    helper.make_node("Concat", ["batch_1", "minus1"], ["new_shape"], name="concat", axis=0),
    helper.make_node("Reshape", ["r", "new_shape"], ["flat"], name="reshape"),
    helper.make_node("Softmax", ["flat"], ["y"], name="softmax", axis=-1),
], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
   [W, B, numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
    numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"),
    numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus1")])

# Expand to a computed shape, ConstantOfShape, Range over a dim, Reshape with 0 and -1.
save("shapes", [
    helper.make_node("Shape", ["x"], ["s"]),
    helper.make_node("ConstantOfShape", ["s"], ["ones"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
    helper.make_node("Add", ["x", "ones"], ["x1"]),
    helper.make_node("Slice", ["s", "one", "two"], ["s1"]),
    helper.make_node("Squeeze", ["s1", "axes0"], ["n"]),
    helper.make_node("Range", ["zero", "n", "one_s"], ["idx"]),
    helper.make_node("Cast", ["idx"], ["idxf"], to=TensorProto.FLOAT),
    helper.make_node("Add", ["x1", "idxf"], ["x2"]),
    helper.make_node("Reshape", ["x2", "zero_minus1"], ["y"]),
], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "N"])],
   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "N"])],
   [numpy_helper.from_array(np.array([1], dtype=np.int64), "one"),
    numpy_helper.from_array(np.array([2], dtype=np.int64), "two"),
    numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"),
    numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
    numpy_helper.from_array(np.array(1, dtype=np.int64), "one_s"),
    numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "zero_minus1")])

# An operator dscc does not have.
save("det", [helper.make_node("Det", ["x"], ["y"], name="Det_12")],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 4])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], opset=14)

# An element type dscc does not have.
save("uint8", [helper.make_node("Identity", ["x"], ["y"])],
     [helper.make_tensor_value_info("x", TensorProto.UINT8, [2])],
     [helper.make_tensor_value_info("y", TensorProto.UINT8, [2])])

# A shape read from input data: refused unless bound with --const.
save("reshape_input", [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
      helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
np.save(os.path.join(out, "shape34.npy"), np.array([3, -1], dtype=np.int64))

# Broken files: truncated, and not a protobuf at all.
data = mlp.SerializeToString()
with open(os.path.join(out, "truncated.onnx"), "wb") as f:
    f.write(data[: len(data) // 2])
with open(os.path.join(out, "corrupt.onnx"), "wb") as f:
    f.write(b"\xff\xfe this is not an ONNX model \x00\x01\x02" * 4)

np.save(os.path.join(out, "x.npy"), rng.standard_normal((5, 4)).astype(np.float32))
