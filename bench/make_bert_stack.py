#!/usr/bin/python3
"""Writes a program of L BERT layers in a row (bench/workloads/bert_layer.dsc's body, repeated), for compile-time benchmarks.

Usage: /usr/bin/python3 bench/make_bert_stack.py L OUT.dsc

Every layer has its own weights (inputs), so the program is as large as an
L-layer encoder; its layers' kernels are equal, which the per-kernel split
compiles once (docs/compile.md).
"""
import os
import re
import sys

layers, out = int(sys.argv[1]), sys.argv[2]
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads", "bert_layer.dsc")).read()
head = src[src.index("func @bert_layer("):src.index("{\n", src.index("where")) + 2]
body = src[src.index("{\n", src.index("where")) + 2:src.rindex("  return")]
params = re.findall(r"%(\w+): (f32\[[^\]]*\])", head)
weights = [(n, t) for n, t in params if n not in ("x", "mask")]
args = ["%x: f32[B, S, 768]", "%mask: f32[B, S]"]
for l in range(layers):
    args += ["%%l%d_%s: %s" % (l, n, t) for n, t in weights]
lines = ["// %d BERT layers in a row (bench/make_bert_stack.py): a compile-time benchmark." % layers,
         "func @bert_stack(%s) -> f32[B, S, 768]" % ", ".join(args),
         "    where B in [1, 64], S in [1, 512] {"]
prev = "x"
for l in range(layers):
    def rename(m, l=l, prev=prev):
        name = m.group(1)
        if name == "x":
            return "%" + prev
        if name == "mask":
            return "%mask"
        return "%%l%d_%s" % (l, name)
    text = re.sub(r"%(\w+)", rename, body)
    text = re.sub(r"//[^\n]*", "", text)
    lines.append(text.rstrip())
    prev = "l%d_y" % l
lines.append("  return %%%s\n}\n" % prev)
open(out, "w").write("\n".join(lines))
