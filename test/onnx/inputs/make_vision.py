#!/usr/bin/python3
# Writes the small vision ONNX models (Conv, MaxPool, AveragePool) the lit tests of test/onnx/vision-*.test import: python3 make_vision.py OUTDIR.
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="dscc-test")
    onnx.save(m, os.path.join(out, name + ".onnx"))


def w(name, *shape):
    return numpy_helper.from_array(rng.uniform(-0.5, 0.5, size=shape).astype(np.float32), name)


def x4(name="x", c=3):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", c, "H", "W"])


def y(name="y", shape=None, rank=4):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape or [None] * rank)


# A ResNet-style stem over symbolic batch, height and width: 7x7 stride-2 conv with bias, batch norm, relu,
# 3x3 stride-2 max pool, a depthwise conv with SAME_UPPER padding, an average pool in ceil mode counting the
# padding, global average pooling, flatten and a dense layer.
save("stem", [
    helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c1"], name="conv1", strides=[2, 2], pads=[3, 3, 3, 3],
                     kernel_shape=[7, 7]),
    helper.make_node("BatchNormalization", ["c1", "bn.s", "bn.b", "bn.m", "bn.v"], ["bn"], name="bn1"),
    helper.make_node("Relu", ["bn"], ["r"], name="relu"),
    helper.make_node("MaxPool", ["r"], ["mp"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    helper.make_node("Conv", ["mp", "dw.w"], ["dw"], name="dwconv", group=8, auto_pad="SAME_UPPER", strides=[2, 1]),
    helper.make_node("AveragePool", ["dw"], ["ap"], name="avgpool", kernel_shape=[2, 3], strides=[2, 2],
                     pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
    helper.make_node("GlobalAveragePool", ["ap"], ["gap"], name="gap"),
    helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
    helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["y"], name="fc", transB=1),
], [x4()], [y("y", ["batch", 5])],
   [w("c1.w", 8, 3, 7, 7), w("c1.b", 8), w("bn.s", 8), w("bn.b", 8), w("bn.m", 8),
    numpy_helper.from_array(rng.uniform(0.5, 1.5, size=8).astype(np.float32), "bn.v"),
    w("dw.w", 8, 1, 3, 3), w("fc.w", 5, 8), w("fc.b", 5)])

# 1-D and 3-D windows: VALID and SAME_LOWER padding, dilations, a max pool over a 3-D volume.
save("conv1d", [
    helper.make_node("Conv", ["x", "k"], ["c"], name="c1d", auto_pad="VALID", dilations=[2], strides=[2]),
    helper.make_node("MaxPool", ["c"], ["y"], name="p1d", kernel_shape=[2], auto_pad="SAME_LOWER"),
], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, "L"])], [y("y", rank=3)], [w("k", 4, 2, 3)])
save("conv3d", [
    helper.make_node("Conv", ["x", "k"], ["c"], name="c3d", pads=[1, 0, 1, 1, 0, 1]),
    helper.make_node("MaxPool", ["c"], ["y"], name="p3d", kernel_shape=[2, 2, 2], dilations=[1, 2, 1]),
], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, "D", "H", "W"])], [y("y", rank=5)],
   [w("k", 3, 2, 2, 3, 2)])

# MaxPool with its Indices (column-major: storage_order 1), which import as a max and an argmax pool.
save("maxpool_indices", [helper.make_node("MaxPool", ["x"], ["y", "idx"], name="mp_idx", kernel_shape=[2, 2],
                                          strides=[2, 2], storage_order=1)],
     [x4()], [y("y", None), helper.make_tensor_value_info("idx", TensorProto.INT64, [None] * 4)])

# Errors: a storage_order that is neither 0 nor 1, an unknown auto_pad, a kernel_shape the weight contradicts, a
# group that does not divide the channels, a kernel_shape of the wrong length.
save("bad_storage_order", [helper.make_node("MaxPool", ["x"], ["y", "idx"], name="mp_order", kernel_shape=[2, 2],
                                            storage_order=2)],
     [x4()], [y("y", None), helper.make_tensor_value_info("idx", TensorProto.INT64, [None] * 4)])
save("bad_autopad", [helper.make_node("Conv", ["x", "k"], ["y"], name="c_bad", auto_pad="SAME")],
     [x4()], [y("y", None)], [w("k", 2, 3, 3, 3)])
save("bad_kernel_shape", [helper.make_node("Conv", ["x", "k"], ["y"], name="c_ks", kernel_shape=[3, 2])],
     [x4()], [y("y", None)], [w("k", 2, 3, 3, 3)])
save("bad_group", [helper.make_node("Conv", ["x", "k"], ["y"], name="c_group", group=2)],
     [x4()], [y("y", None)], [w("k", 2, 1, 3, 3)])
save("bad_pool_rank", [helper.make_node("AveragePool", ["x"], ["y"], name="ap_rank", kernel_shape=[2])],
     [x4()], [y("y", None)])
