#!/usr/bin/python3
# Writes ONNX models whose weights are external data (torch's default export form), good and hostile: python3 make_external.py OUTDIR.
"""OUTDIR/model/ext.onnx + ext.onnx.data: y = x @ W + b, W and b in one data
file at offsets (b after W, with `length`), and c with no `length`;
OUTDIR/model/x.npy and want.npy (NumPy's answer). Hostile models beside it,
each with one bad location: absolute, `..` out of the folder, a symbolic link
out of the folder, a missing file, a FIFO (must not hang), a file too short,
a wrong length, a non-numeric offset."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = os.path.join(sys.argv[1], "model")
os.makedirs(out, exist_ok=True)
outside = os.path.join(sys.argv[1], "outside")
os.makedirs(outside, exist_ok=True)

rng = np.random.default_rng(7)
W = rng.standard_normal((5, 3)).astype(np.float32)
b = rng.standard_normal(3).astype(np.float32)
cvec = rng.standard_normal(3).astype(np.float32)
blob = W.tobytes() + b.tobytes() + cvec.tobytes()
with open(os.path.join(out, "ext.onnx.data"), "wb") as f:
    f.write(blob)
with open(os.path.join(outside, "secret.data"), "wb") as f:
    f.write(blob)


def ext_tensor(name, arr, location, offset, length=True):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(arr.shape)
    t.data_location = TensorProto.EXTERNAL
    entries = [("location", location), ("offset", str(offset))]
    if length is True:
        entries.append(("length", str(arr.nbytes)))
    elif length is not None:
        entries.append(("length", str(length)))
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def save(name, location="ext.onnx.data", w_offset=0, w_length=True, offset_text=None):
    inits = [ext_tensor("W", W, location, w_offset, w_length),
             ext_tensor("b", b, "ext.onnx.data", W.nbytes),
             ext_tensor("c", cvec, "ext.onnx.data", W.nbytes + b.nbytes, None)]
    if offset_text is not None:
        inits[0].external_data[1].value = offset_text
    g = helper.make_graph([
        helper.make_node("MatMul", ["x", "W"], ["mm"], name="fc/MatMul"),
        helper.make_node("Add", ["mm", "b"], ["h"], name="fc/Add"),
        helper.make_node("Mul", ["h", "c"], ["y"], name="scale"),
    ], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="dscc-test")
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


save("ext")
save("absolute", location=os.path.join(outside, "secret.data"))
save("climb", location="../outside/secret.data")
save("climb2", location="sub/../../outside/secret.data")
os.symlink(os.path.join(outside, "secret.data"), os.path.join(out, "link.data"))
save("link", location="link.data")
save("missing", location="nosuch.data")
os.mkfifo(os.path.join(out, "fifo.data"))
save("fifo", location="fifo.data")
with open(os.path.join(out, "short.data"), "wb") as f:
    f.write(blob[:40])
save("short", location="short.data")
save("past_end", w_offset=len(blob) - 8)
save("length", w_length=12)
save("offset", offset_text="-4")
x = rng.standard_normal((4, 5)).astype(np.float32)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "want.npy"), ((x @ W) + b) * cvec)
