#!/usr/bin/python3
# Measures `dscc import` and `dscc compile` of a BERT-base-sized ONNX model (110M parameters): wall time and peak memory.
"""Usage: bench/onnx_import_scale.py DSCC [--layers 12] [--keep DIR]

Exports test/onnx/models/transformers.py's Bert at BERT-base size (vocab
30522, d 768, 12 heads, ff 3072, 12 layers) with Debian's PyTorch
(TorchScript exporter, dynamic batch and seq), then times `dscc import`
and `dscc compile` (facts `batch in [1, 64]`, `seq in [1, 64]`: the test
model's position table has 64 rows) under /usr/bin/time, and prints a table:
seconds, peak RSS (the largest of dscc and the assembler and linker it runs),
and RSS over the weights' size.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "onnx", "models"))


def timed(cmd):
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), p.stderr[-3000:]))
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
    h, m, s = wall.groups()
    secs = int(h or 0) * 3600 + int(m) * 60 + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) * 1024
    return secs, rss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dscc")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--keep")
    a = ap.parse_args()
    import torch
    import transformers as tm
    work = a.keep or tempfile.mkdtemp(prefix="dscc-scale-")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "bert_base.onnx")
    torch.manual_seed(0)
    m = tm.Bert(vocab=30522, d=768, heads=12, ff=3072, layers=a.layers).eval()
    params = sum(p.numel() for p in m.parameters())
    ex = tm.inputs("bert", 2, 5, seed=1)
    ex["input_ids"] = ex["input_ids"] % 30522
    axes = {k: {0: "batch", 1: "seq"} for k in tm.INPUTS["bert"]}
    torch.onnx.export(m, (ex["input_ids"], ex["attention_mask"]), path, input_names=tm.INPUTS["bert"],
                      output_names=tm.OUTPUTS["bert"], dynamic_axes=axes, opset_version=14)
    weights = os.path.getsize(path)
    facts = ["--where", "batch in [1, 64]", "--where", "seq in [1, 64]"]
    rows = [("import (.onnx -> .dsc + .npy)", timed([a.dscc, "import", path, "-o", os.path.join(work, "b.dsc")] + facts)),
            ("compile (.onnx -> .so)", timed([a.dscc, "compile", path, "-o", os.path.join(work, "b.so")] + facts))]
    print("BERT-base-sized model: %d parameters, %.0f MB .onnx, %d layers" % (params, weights / 1e6, a.layers))
    print("| step | seconds | peak RSS (MB) | RSS / weights |")
    print("|---|---|---|---|")
    for name, (secs, rss) in rows:
        print("| %s | %.1f | %.0f | %.2f |" % (name, secs, rss / 1e6, rss / weights))
    so = os.path.join(work, "b.so")
    print("compiled model: %.0f MB" % (os.path.getsize(so) / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
