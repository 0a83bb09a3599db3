"""Shared by the view and profile tests: the workloads, sizes inside their `where` ranges, and `dscc explain`'s answer."""

import os
import re
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOADS = os.path.join(ROOT, "bench", "workloads")
BERT_ONNX = os.path.join(ROOT, "test", "onnx", "fixtures", "bert_dynamo.onnx")


def workloads():
    """The shared workloads (bench/workloads/*.dsc), sorted by name."""
    return sorted(os.path.join(WORKLOADS, f) for f in os.listdir(WORKLOADS) if f.endswith(".dsc"))


def program_text(dscc, model):
    """The program text of a model: the file itself, or an ONNX model as `dscc import` writes it."""
    if not model.endswith(".onnx"):
        with open(model) as f:
            return f.read()
    with tempfile.TemporaryDirectory(prefix="dscc-import-") as tmp:
        dsc = os.path.join(tmp, "model.dsc")
        out = subprocess.run([dscc, "import", model, "-o", dsc], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("dscc import %s failed: %s" % (model, out.stderr))
        with open(dsc) as f:
            return f.read()


def sizes_for(text, prefer=37):
    """A size for every symbol with a `where` range: `prefer` (odd, so vector guards fail) clamped into the range."""
    dims = {}
    for name, lo, hi in re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*) in \[(\d+), (\d+)\]", text):
        dims[name] = max(int(lo), min(int(hi), prefer))
    # Symbols of the arguments without a range (an imported model's dim_params): `prefer` itself.
    sig = re.search(r"func @\w+\((.*?)\)\s*->", text, re.S)
    for dims_text in re.findall(r"\[([^\]]*)\]", sig.group(1) if sig else ""):
        for d in dims_text.split(","):
            d = d.strip()
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", d) and d not in dims:
                dims[d] = prefer
    return dims


def dim_args(dims):
    args = []
    for k in sorted(dims):
        args += ["--dim", "%s=%d" % (k, dims[k])]
    return args


def explain(dscc, model, dims):
    """`dscc explain` at `dims`: [{symbol, kind, runs, blas, copies}] in kernel order.

    The kernel's symbol is the part of its `runs:` function before the version;
    a kernel without `runs:` is a library call with no epilogue.
    """
    out = subprocess.run([dscc, "explain", model] + dim_args(dims), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("dscc explain %s failed: %s" % (model, out.stderr))
    kernels = []
    for block in re.split(r"\n(?=\[\d+\] )", out.stdout)[1:]:
        head = re.match(r"\[(\d+)\] %(\S+)  (\S+)", block)
        k = {"index": int(head.group(1)), "result": head.group(2), "kind": head.group(3), "runs": None,
             "blas": "BLAS sgemm" in block, "copies": "copied to a dense layout" in block}
        m = re.search(r"runs: (\S+)", block)
        if m:
            k["runs"] = m.group(1)
        kernels.append(k)
    return kernels, out.stdout
