#!/usr/bin/python3
# Exports the BERT- and GPT-style test models with PyTorch's TorchScript ONNX exporter (Debian's python3-torch), dynamic batch and seq.
"""Usage: export_torchscript.py OUTDIR [--opset N]

Writes OUTDIR/bert.onnx and OUTDIR/gpt.onnx (weights from a fixed seed, so a
second run gives the same models). Exit 77 when PyTorch is missing.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
except ImportError:
    print("export_torchscript: PyTorch is missing (apt-get install python3-torch)")
    sys.exit(77)
import transformers as tm


def export(name, path, opset):
    m = tm.make(name)
    args = tuple(tm.inputs(name, 2, 5, seed=1)[k] for k in tm.INPUTS[name])
    axes = {k: {0: "batch", 1: "seq"} for k in tm.INPUTS[name]}
    axes[tm.OUTPUTS[name][0]] = {0: "batch", 1: "seq"}
    axes[tm.OUTPUTS[name][1]] = {0: "batch"}
    torch.onnx.export(m, args, path, input_names=tm.INPUTS[name], output_names=tm.OUTPUTS[name],
                      dynamic_axes=axes, opset_version=opset, do_constant_folding=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--opset", type=int, default=0, help="one opset for both (default: BERT 14, GPT 17)")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    export("bert", os.path.join(a.outdir, "bert.onnx"), a.opset or 14)
    export("gpt", os.path.join(a.outdir, "gpt.onnx"), a.opset or 17)
    return 0


if __name__ == "__main__":
    sys.exit(main())
