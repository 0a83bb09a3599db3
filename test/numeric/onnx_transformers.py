#!/usr/bin/python3
# BERT- and GPT-style models exported from PyTorch: imported, interpreted and compiled once by dscc, compared with PyTorch at many sizes.
"""Usage: onnx_transformers.py DSCC [--exporter torchscript|dynamo|both] [--keep DIR]

torchscript: exports test/onnx/models/transformers.py's `Bert` and `Gpt` now
with Debian's PyTorch (TorchScript exporter, opsets 14 and 17, dynamic batch
and seq) and takes PyTorch's outputs at each size as the reference.
dynamo: the committed fixtures test/onnx/fixtures/*_dynamo.onnx, made by
make_dynamo.py with the torch.export-based exporter (opset 18), and the
PyTorch outputs stored beside them.

For each model: `dscc run model.onnx` (the interpreter) at every size, one
`dscc compile model.onnx` with the facts `batch in [1, 8]`, `seq in [1, 64]`,
and the library run at the same sizes (1, odd sizes, the range ends), each
output compared with PyTorch's: floats within 2e-4 + 2e-4*|want|, the argmax
token exactly (or, where PyTorch's two best logits are within 1e-4, either).
Exits 1 on any difference or failure, 77 when PyTorch (torchscript) is missing.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "onnx", "models")
FIXTURES = os.path.join(HERE, "..", "onnx", "fixtures")
sys.path.insert(0, MODELS)
# (batch, seq): 1, odd sizes, the range ends (batch in [1, 8], seq in [1, 64]).
SIZES = [(1, 1), (1, 7), (2, 13), (3, 1), (1, 64), (8, 1), (5, 33), (8, 64)]
FACTS = ["--where", "batch in [1, 8]", "--where", "seq in [1, 64]"]
ATOL = RTOL = 2e-4


def sh(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def compare(name, got, want, logits=None):
    if got.shape != want.shape:
        return "%s: shape %s, expected %s" % (name, got.shape, want.shape)
    if want.dtype.kind in "iu":
        bad = got != want
        if bad.any() and logits is not None:  # a near tie of the best two logits may go either way
            for b in np.nonzero(bad)[0]:
                row = logits[b]
                if abs(row[got[b]] - row[want[b]]) > 1e-4:
                    return "%s[%d]: token %d, expected %d" % (name, b, got[b], want[b])
            return ""
        return "%s: %d of %d differ" % (name, int(bad.sum()), bad.size) if bad.any() else ""
    err = np.abs(got.astype(np.float64) - want) - RTOL * np.abs(want)
    if not (err <= ATOL).all():
        i = np.unravel_index(int(np.argmax(err)), err.shape)
        return "%s: max error %.3g beyond atol %g rtol %g at %s (%r vs %r)" % (
            name, float(err.max()) + ATOL, ATOL, RTOL, i, float(got[i]), float(want[i]))
    return ""


def check_model(dscc, onnx_path, name, cases, work, kind=None):
    """cases: [(batch, seq, {input: array}, {output: array})]. Returns a list of failures."""
    import transformers as tm
    fails = []
    so = os.path.join(work, name + ".so")
    sh([dscc, "compile", onnx_path, "-o", so] + FACTS)
    for b, s, feeds, want in cases:
        args = []
        for k, arr in feeds.items():
            path = os.path.join(work, "%s_%d_%d_%s.npy" % (name, b, s, k))
            np.save(path, arr)
            args += ["-i", "%s=%s" % (k, path)]
        for how, model in (("interpreted", onnx_path), ("compiled", so)):
            out = os.path.join(work, "%s_%d_%d_%s" % (name, b, s, how))
            extra = FACTS if how == "interpreted" else []
            try:
                sh([dscc, "run", model, "-o", out] + args + extra)
            except RuntimeError as e:
                fails.append("%s %s B=%d S=%d: %s" % (name, how, b, s, e))
                continue
            for o in tm.OUTPUTS[kind or name]:
                path = os.path.join(out, o + ".npy")
                if not os.path.exists(path):
                    fails.append("%s %s B=%d S=%d: no %s.npy" % (name, how, b, s, o))
                    continue
                logits = want["logits"][:, -1, :] if o == "next_token" else None
                why = compare(o, np.load(path), want[o], logits)
                if why:
                    fails.append("%s %s B=%d S=%d: %s" % (name, how, b, s, why))
        print("  %-5s B=%d S=%-3d interpreted and compiled: %s" % (
            name, b, s, "ok" if not any(" B=%d S=%d:" % (b, s) in f and f.startswith(name + " ") for f in fails)
            else "FAILED"))
    return fails


def torchscript_cases(work):
    try:
        import torch
    except ImportError:
        return None
    import transformers as tm
    sh([sys.executable, os.path.join(MODELS, "export_torchscript.py"), work])
    out = {}
    for name in ("bert", "gpt"):
        m = tm.make(name)
        cases = []
        for b, s in SIZES:
            feeds = tm.inputs(name, b, s, seed=100 * b + s)
            with torch.no_grad():
                res = m(*[feeds[k] for k in tm.INPUTS[name]])
            cases.append((b, s, {k: v.numpy() for k, v in feeds.items()},
                          {k: r.numpy() for k, r in zip(tm.OUTPUTS[name], res)}))
        out[name] = (os.path.join(work, name + ".onnx"), cases)
    return out


def dynamo_cases():
    out = {}
    for name in ("bert", "gpt"):
        ref = np.load(os.path.join(FIXTURES, name + "_dynamo.npz"))
        cases = []
        for b, s in SIZES:
            key = "B%d_S%d_" % (b, s)
            feeds = {k[len(key) + 3:]: ref[k] for k in ref.files if k.startswith(key + "in_")}
            want = {k[len(key) + 4:]: ref[k] for k in ref.files if k.startswith(key + "out_")}
            cases.append((b, s, feeds, want))
        out[name] = (os.path.join(FIXTURES, name + "_dynamo.onnx"), cases)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dscc")
    ap.add_argument("--exporter", choices=["torchscript", "dynamo", "both"], default="both")
    ap.add_argument("--keep", help="keep the work files in this folder")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="dscc-tf-")
    os.makedirs(work, exist_ok=True)
    fails = []
    if a.exporter in ("torchscript", "both"):
        cases = torchscript_cases(work)
        if cases is None:
            print("onnx_transformers: PyTorch is missing (apt-get install python3-torch)")
            return 77
        print("TorchScript exporter (python3-torch):")
        for name, (path, cs) in cases.items():
            fails += check_model(a.dscc, path, name, cs, work)
    if a.exporter in ("dynamo", "both"):
        print("torch.export-based exporter (committed fixtures):")
        for name, (path, cs) in dynamo_cases().items():
            fails += check_model(a.dscc, path, name + "_dynamo", cs, work, name)
    for f in fails:
        print("FAIL: " + f)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("%d failures" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
