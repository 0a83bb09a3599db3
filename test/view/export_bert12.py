#!/usr/bin/python3
# Exports a 12-layer BERT-style encoder (test/onnx/models/transformers.py's Bert, small widths) with PyTorch's TorchScript ONNX exporter: the large model `dscc view` must keep readable.
"""Usage: export_bert12.py OUT.onnx

Dynamic batch and seq; weights from a fixed seed. Exit 77 when PyTorch is missing.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "onnx", "models"))
try:
    import torch
except ImportError:
    print("export_bert12: PyTorch is missing (apt-get install python3-torch)")
    sys.exit(77)
import transformers as tm


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    m = tm.Bert(layers=12).eval()
    args = tuple(tm.inputs("bert", 2, 5, seed=1)[k] for k in tm.INPUTS["bert"])
    axes = {k: {0: "batch", 1: "seq"} for k in tm.INPUTS["bert"]}
    axes[tm.OUTPUTS["bert"][0]] = {0: "batch", 1: "seq"}
    axes[tm.OUTPUTS["bert"][1]] = {0: "batch"}
    torch.onnx.export(m, args, out, input_names=tm.INPUTS["bert"], output_names=tm.OUTPUTS["bert"],
                      dynamic_axes=axes, opset_version=14, do_constant_folding=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
