#!/usr/bin/python3
# Writes the small recurrent ONNX models (LSTM, GRU, RNN) the lit tests of test/onnx/recurrent-*.test import: python3 make_recurrent.py OUTDIR.
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


def t(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


H, I = 4, 3
# A bidirectional LSTM with initial states but no bias (a zero bias is filled in), all three outputs used.
save("lstm_states", [helper.make_node("LSTM", ["x", "W", "R", "", "", "h0", "c0"], ["y", "yh", "yc"], name="lstm",
                                      hidden_size=H, direction="bidirectional")],
     [t("x", ["seq", "batch", I]), t("h0", [2, "batch", H]), t("c0", [2, "batch", H])],
     [t("y", [None] * 4), t("yh", [None] * 3), t("yc", [None] * 3)], [w("W", 2, 4 * H, I), w("R", 2, 4 * H, H)])
# A batch-first (layout 1) reverse GRU with linear_before_reset and the default activations spelled out; only Y_h.
save("gru_batchwise", [helper.make_node("GRU", ["x", "W", "R", "B"], ["", "yh"], name="gru", hidden_size=H,
                                        direction="reverse", layout=1, linear_before_reset=1,
                                        activations=["Sigmoid", "Tanh"])],
     [t("x", ["batch", "seq", I])], [t("yh", [None] * 3)], [w("W", 1, 3 * H, I), w("R", 1, 3 * H, H), w("B", 1, 6 * H)])
# An RNN without hidden_size (W's rows give it).
save("rnn_no_hidden", [helper.make_node("RNN", ["x", "W", "R", "B"], ["y"], name="rnn")],
     [t("x", ["seq", "batch", I])], [t("y", [None] * 4)], [w("W", 1, H, I), w("R", 1, H, H), w("B", 1, 2 * H)])


def bad(name, op, attrs, extra_inputs=(), inputs=None, inits=None):
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    ins = inputs or ["x", "W", "R"]
    save(name, [helper.make_node(op, ins, ["y"], name=name, hidden_size=H, **attrs)],
         [t("x", ["seq", "batch", I])] + list(extra_inputs), [t("y", [None] * 4)],
         inits or [w("W", 1, G * H, I), w("R", 1, G * H, H)])


bad("seq_lens", "GRU", {}, [helper.make_tensor_value_info("lens", TensorProto.INT32, ["batch"])],
    ["x", "W", "R", "", "lens"])
bad("peepholes", "LSTM", {}, [t("P", [1, 3 * H])], ["x", "W", "R", "", "", "", "", "P"])
bad("clip", "RNN", {"clip": 3.0})
bad("activations", "GRU", {"activations": ["Relu", "Tanh"]})
bad("input_forget", "LSTM", {"input_forget": 1})
bad("direction", "RNN", {"direction": "both"})
bad("wrong_w", "LSTM", {}, inits=[w("W", 1, 3 * H, I), w("R", 1, 4 * H, H)])
