#!/usr/bin/python3
# Writes lookup.onnx: token ids and token types index tables of 50 and 2 rows, a padding mask scales the sum (python3 make_lookup.py OUTDIR).
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(5)
words = numpy_helper.from_array(rng.standard_normal((50, 8)).astype(np.float32), "words")
types = numpy_helper.from_array(rng.standard_normal((2, 8)).astype(np.float32), "types")
g = helper.make_graph([
    helper.make_node("Gather", ["words", "input_ids"], ["w"], name="word_embeddings"),
    helper.make_node("Gather", ["types", "token_type_ids"], ["t"], name="token_type_embeddings"),
    helper.make_node("Add", ["w", "t"], ["e"]),
    helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
    helper.make_node("Unsqueeze", ["m", "ax"], ["m2"]),
    helper.make_node("Mul", ["e", "m2"], ["y"]),
], "lookup", [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
              for n in ("input_ids", "token_type_ids", "attention_mask")],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])],
    initializer=[words, types, numpy_helper.from_array(np.array([2], dtype=np.int64), "ax")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "lookup.onnx"))
