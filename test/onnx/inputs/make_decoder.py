#!/usr/bin/python3
# Writes the decoder-style ONNX models of test/onnx/decoder-import.test (ConvTranspose, GroupNormalization opsets 18 and 21, a torch-exported decoder) with inputs and expected outputs from PyTorch/NumPy: python3 make_decoder.py OUTDIR.
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(5)


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="dscc-test")
    onnx.save(m, os.path.join(out, name + ".onnx"))


def arr(*shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def vi(name, dims, rank=4):
    """A float value's type; dims None: `rank` unknown dims."""
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims if dims is not None else [None] * rank)


def data(name, **arrays):
    """Inputs NAME_in_<input>.npy and the expected output NAME_want.npy."""
    for k, v in arrays.items():
        np.save(os.path.join(out, "%s_%s.npy" % (name, k)), v)


# ConvTranspose, 2-D: groups, stride 2, pads and output_padding, bias (an upsampling decoder block).
w2 = arr(4, 3, 3, 3)  # [C=4, M/group=3, 3, 3], group 2 -> M = 6
b2 = arr(6)
save("convt2d", [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", strides=[2, 2],
                                  pads=[1, 1, 1, 1], output_padding=[1, 1], group=2, kernel_shape=[3, 3])],
     [vi("x", ["batch", 4, "H", "W"])], [vi("y", None)],
     [numpy_helper.from_array(w2, "w"), numpy_helper.from_array(b2, "b")])
x = arr(2, 4, 5, 7)
want = F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w2), torch.from_numpy(b2), stride=2, padding=1,
                          output_padding=1, groups=2).numpy()
data("convt2d", x=x, want=want)

# 1-D SAME_UPPER and 3-D output_shape (pads derived from the sizes; a negative end pad where the shape asks
# for more than the input reaches).
w1 = arr(2, 3, 4)
save("convt1d", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up1", strides=[3], auto_pad="SAME_UPPER")],
     [vi("x", ["batch", 2, "L"])], [vi("y", None, 3)], [numpy_helper.from_array(w1, "w")])
w3 = arr(2, 2, 2, 3, 2)
save("convt3d", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up3", strides=[2, 1, 2],
                                  output_shape=[7, 6, 9])],
     [vi("x", [1, 2, 3, 4, 4])], [vi("y", None, 5)], [numpy_helper.from_array(w3, "w")])

# GroupNormalization: opset 18 (scale and bias per group) and opset 21 (per channel), 6 channels in 3 groups.
gx = arr(2, 6, 5, 3) * 3 + 1
s18, b18, s21, b21 = arr(3), arr(3), arr(6), arr(6)
save("groupnorm18", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn18", num_groups=3,
                                      epsilon=1e-3)],
     [vi("x", ["batch", 6, "H", "W"])], [vi("y", None)],
     [numpy_helper.from_array(s18, "s"), numpy_helper.from_array(b18, "b")], opset=18)
save("groupnorm21", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn21", num_groups=3)],
     [vi("x", ["batch", 6, "H", "W"])], [vi("y", None)],
     [numpy_helper.from_array(s21, "s"), numpy_helper.from_array(b21, "b")], opset=21)
tx = torch.from_numpy(gx)
data("groupnorm18", x=gx, want=F.group_norm(tx, 3, torch.from_numpy(np.repeat(s18, 2)),
                                            torch.from_numpy(np.repeat(b18, 2)), eps=1e-3).numpy())
data("groupnorm21", x=gx, want=F.group_norm(tx, 3, torch.from_numpy(s21), torch.from_numpy(b21)).numpy())
# Per-group scale of the wrong length: an import error at the node.
save("groupnorm_bad", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn_bad", num_groups=3)],
     [vi("x", ["batch", 6, "H", "W"])], [vi("y", None)],
     [numpy_helper.from_array(s21, "s"), numpy_helper.from_array(b21, "b")], opset=18)


# A decoder exported by torch.onnx (TorchScript): ConvTranspose2d, GroupNorm (exported as InstanceNormalization on
# a reshape), ReLU, a second ConvTranspose2d; batch, height and width dynamic.
class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up1 = torch.nn.ConvTranspose2d(8, 6, 4, stride=2, padding=1)
        self.gn = torch.nn.GroupNorm(2, 6)
        self.up2 = torch.nn.ConvTranspose2d(6, 3, 3, stride=2, padding=1, output_padding=1, groups=3)

    def forward(self, x):
        return self.up2(torch.relu(self.gn(self.up1(x))))


torch.manual_seed(0)
m = Decoder().eval()
with torch.no_grad():
    m.gn.weight.uniform_(0.5, 1.5)
    m.gn.bias.uniform_(-0.5, 0.5)
    dx = torch.from_numpy(arr(2, 8, 5, 6))
    torch.onnx.export(m, (dx,), os.path.join(out, "decoder.onnx"), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch", 2: "H", 3: "W"}}, opset_version=17)
    data("decoder", x=dx.numpy(), want=m(dx).numpy())
    dx2 = torch.from_numpy(arr(1, 8, 1, 9))
    data("decoder2", x=dx2.numpy(), want=m(dx2).numpy())


# LpPool (p = 2 with pads and strides, p = 3 with SAME_UPPER) against a NumPy window sum of |x|^p, zeros in the padding.
def lp_ref(x, p, ks, st, pb, pe):
    xp = np.pad(np.abs(x.astype(np.float64)) ** p, [(0, 0), (0, 0)] + list(zip(pb, pe)))
    oh = (xp.shape[2] - ks[0]) // st[0] + 1
    ow = (xp.shape[3] - ks[1]) // st[1] + 1
    y = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            y[:, :, i, j] = xp[:, :, i * st[0]:i * st[0] + ks[0], j * st[1]:j * st[1] + ks[1]].sum(axis=(2, 3))
    return (y ** (1.0 / p)).astype(np.float32)


save("lppool2", [helper.make_node("LpPool", ["x"], ["y"], name="lp2", kernel_shape=[3, 2], strides=[2, 1],
                                  pads=[1, 0, 1, 1], p=2)],
     [vi("x", ["batch", 3, "H", "W"])], [vi("y", None)], opset=18)
lx = arr(2, 3, 7, 6)
data("lppool2", x=lx, want=lp_ref(lx, 2, [3, 2], [2, 1], [1, 0], [1, 1]))
save("lppool3", [helper.make_node("LpPool", ["x"], ["y"], name="lp3", kernel_shape=[2, 3], strides=[2, 2],
                                  auto_pad="SAME_UPPER", p=3)],
     [vi("x", ["batch", 3, "H", "W"])], [vi("y", None)], opset=11)
# SAME_UPPER on 7x6 with stride 2: ceil(7/2) = 4, total pads 1 (H: the odd unit at the end), 6 -> 3, total 1.
data("lppool3", x=lx, want=lp_ref(lx, 3, [2, 3], [2, 2], [0, 0], [1, 1]))


# LpPool in ceil mode (opset 18) with symbolic H and W: the last window of a dim may reach past the end padding
# (it sums what it covers), and a window that would start in the end padding is dropped (ONNX's and PyTorch's rule).
def lp_ceil_ref(x, p, ks, st, pb, pe):
    H, W = x.shape[2:]
    xp = np.pad(np.abs(x.astype(np.float64)) ** p, [(0, 0), (0, 0)] + list(zip(pb, pe)))
    outs = []
    for d, size in enumerate((H, W)):
        o = -(-(xp.shape[2 + d] - ks[d]) // st[d]) + 1
        if (o - 1) * st[d] >= size + pb[d]:
            o -= 1
        outs.append(o)
    y = np.zeros(x.shape[:2] + tuple(outs))
    for i in range(outs[0]):
        for j in range(outs[1]):
            y[:, :, i, j] = xp[:, :, i * st[0]:i * st[0] + ks[0], j * st[1]:j * st[1] + ks[1]].sum(axis=(2, 3))
    return (y ** (1.0 / p)).astype(np.float32)


save("lppool_ceil", [helper.make_node("LpPool", ["x"], ["y"], name="lpc", kernel_shape=[3, 2], strides=[2, 3],
                                      pads=[1, 0, 0, 1], p=2, ceil_mode=1)],
     [vi("x", ["batch", 2, "H", "W"])], [vi("y", None)], opset=18)
# Sizes where the ceil adds a window (H = 7, 3, 11), where it does not (H = 6, 8; W = 4, 7, 10), where the clamp
# drops the window it adds (W = 9, 2).
for tag, shape in [("a", (1, 2, 6, 4)), ("b", (2, 2, 7, 7)), ("c", (1, 2, 8, 9)), ("d", (3, 2, 3, 2)), ("e", (1, 2, 11, 10))]:
    cx = arr(*shape)
    data("lppool_ceil_" + tag, x=cx, want=lp_ceil_ref(cx, 2, [3, 2], [2, 3], [1, 0], [0, 1]))
