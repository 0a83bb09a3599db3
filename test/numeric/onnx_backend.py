#!/usr/bin/python3
# The ONNX backend test data (Debian's libonnx-testdata) through `dscc import` and `dscc run`: counts per suite, fails on wrong or crash.
"""Runs the ONNX backend test models through dscc.

For each test folder (model.onnx, test_data_set_*/input_*.pb, output_*.pb):
import it (`dscc import`), run it in the interpreter (`dscc run model.onnx -i
NAME=x.npy -o DIR`) and, with --compiled, compile it (`dscc compile
model.onnx -o model.so`) and run the library; compare each output with the
stored one. Each model is one of:

  ok       every output matches (floats: |got - want| <= atol + rtol*|want|
           with atol 1e-5, rtol 1e-3, f16/bf16 atol 1e-2 rtol 1e-2; NaN
           where NaN; integers and bools exactly; equal shapes)
  refused  dscc exits 1 with an `error:` message: "unsupported" when it says
           what is "not supported" (op, dtype, input kind, mode), else "other"
           (a model of supported ops that dscc still cannot import, compile
           or run; listed, counted, not yet a failure)
  wrong    dscc succeeds but an output differs (or its shape or count)
  crash    a signal, an exit status other than 0 and 1, or a time-out

Prints the counts per suite and every wrong or crashed model; exits 1 if any
model is wrong or crashed. --list prints each model's status and reason;
--symbolic-dims imports every model with every input dim a symbol. --every N checks every Nth model only (CI's
fixed subset; ctest onnx_backend_full checks them all).
"""
import argparse
import concurrent.futures
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

try:
    import onnx
    from onnx import numpy_helper
except ImportError:  # the tests need Debian's python3-onnx
    print("onnx_backend: the onnx Python package is missing (apt-get install python3-onnx)")
    sys.exit(77)

DATA = "/usr/share/libonnx-testdata/data"
# The operators dscc must import (issue #13's list): a model made only of these,
# over only the element types below, must not be refused.
LISTED_OPS = set("""
Abs Neg Exp Log Sqrt Tanh Sigmoid Erf Relu Floor Ceil Round Sign Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh
Acosh Atanh Not Reciprocal Cast CastLike IsNaN IsInf Add Sub Mul Div Pow Mod Max Min Sum Mean And Or Xor Equal
Less LessOrEqual Greater GreaterOrEqual Where ReduceSum ReduceMax ReduceMin ReduceMean ReduceProd ReduceL1
ReduceL2 ReduceSumSquare ReduceLogSumExp ArgMax ArgMin Softmax LogSoftmax LayerNormalization
BatchNormalization InstanceNormalization GlobalAveragePool GlobalMaxPool MatMul Gemm Einsum Transpose Concat
Gather Constant Reshape Flatten Squeeze Unsqueeze Expand Slice Split Tile Pad Shape Size ConstantOfShape Range
Trilu OneHot EyeLike Identity Dropout Clip LeakyRelu PRelu Elu Selu Celu HardSigmoid HardSwish Softplus
Softsign Mish ThresholdedRelu Gelu GatherND GatherElements Conv ConvTranspose MaxPool AveragePool Resize Upsample LSTM GRU
RNN GroupNormalization LpPool CumSum ScatterND ScatterElements Scatter""".split())
# Tests of listed ops whose stored data contradicts their own model: refused
# with a located error, counted apart, not failed.
_BF16_LIKE = "its stored input 'like' is [1] where the model declares [3, 4]"
_RANDOM = "its expected output was drawn from numpy's random generator (Dropout in training mode, ratio > 0)"
KNOWN_BAD = {
    "test_castlike_BFLOAT16_to_FLOAT": _BF16_LIKE,
    "test_castlike_BFLOAT16_to_FLOAT_expanded": _BF16_LIKE,
    "test_castlike_FLOAT_to_BFLOAT16": _BF16_LIKE,
    "test_castlike_FLOAT_to_BFLOAT16_expanded": _BF16_LIKE,
    "test_training_dropout": _RANDOM,
    "test_training_dropout_default": _RANDOM,
    "test_training_dropout_default_mask": _RANDOM,
    "test_training_dropout_mask": _RANDOM,
}
# Tests of listed ops that use a feature dscc refuses on purpose: counted as
# unsupported when the refusal names that feature (else they fail the run).
REFUSED_FEATURES = {
    "test_resize_tf_crop_and_resize": "'tf_crop_and_resize' is not supported",
    # sequence_lens (per-batch lengths) and peepholes (P) are refused at the node (docs/onnx.md).
    "test_lstm_with_peepholes": "input 'sequence_lens'",
}
# Listed ops that --symbolic-dims may refuse, and why: a dim that fixes the
# rank of the result cannot be a symbol.
SYMBOLIC_REFUSALS = {"GatherND": "the indices' last dim fixes the result's rank; under --symbolic-dims it is a symbol"}
SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple"]
TIMEOUT = 120


def listed_model(model, symbolic=False):
    """True when every node's op is listed and every tensor's element type is one dscc supports
    (with `symbolic`, no op of SYMBOLIC_REFUSALS)."""
    types = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
             onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT8, onnx.TensorProto.BOOL}
    g = model.graph
    if any(n.op_type not in LISTED_OPS or n.domain not in ("", "ai.onnx") for n in g.node):
        return False
    if symbolic and any(n.op_type in SYMBOLIC_REFUSALS for n in g.node):
        return False
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if not vi.type.HasField("tensor_type") or vi.type.tensor_type.elem_type not in types:
            return False
    for n in g.node:
        for a in n.attribute:
            if a.name == "to" and a.i not in types:  # Cast to an unsupported type
                return False
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type not in types:
                return False
    return all(t.data_type in types for t in g.initializer)


def bf16_to_f32(a):
    return (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def compare(got, want):
    """'' when equal within the tolerance, else why not."""
    if got.dtype.kind == "V" and got.dtype.itemsize == 2 and want.dtype == np.uint16:
        # bf16: numpy_helper gives the raw bits as uint16, dscc writes <V2.
        got, want = bf16_to_f32(got), bf16_to_f32(want)
        half = True
    else:
        half = want.dtype == np.float16
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if want.dtype.kind == "f":
        atol, rtol = (1e-2, 1e-2) if half else (1e-5, 1e-3)
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        nan = np.isnan(w)
        if (np.isnan(g) != nan).any():
            return "NaN where the expected output has none, or the reverse"
        g, w = g[~nan], w[~nan]
        same = (g == w)  # equal infinities
        with np.errstate(invalid="ignore"):
            bad = ~same & ~(np.abs(g - w) <= atol + rtol * np.abs(w))
        if bad.any():
            i = int(np.argmax(bad))
            return "%d of %d elements differ beyond atol=%g rtol=%g (e.g. %r vs %r)" % (
                int(bad.sum()), bad.size, atol, rtol, g[i], w[i])
        return ""
    if want.dtype == np.bool_:
        if got.dtype != np.bool_:
            return "dtype %s, expected bool" % got.dtype
    elif got.dtype.kind not in "iu":
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if not np.array_equal(got.astype(np.int64), want.astype(np.int64)):
        return "integer values differ"
    return ""


def run(cmd, cwd=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, "timed out after %ds" % TIMEOUT
    return p.returncode, p.stderr + p.stdout


def first_error(text):
    for line in text.splitlines():
        if "error:" in line:
            return line.strip()
    return text.strip().splitlines()[-1] if text.strip() else ""


def classify(rc, text):
    """(status, reason) of a failed command."""
    if rc is None:
        return "crash", text
    if rc == 1 and "error:" in text:
        return "refused", first_error(text)
    return "crash", "exit status %d: %s" % (rc, first_error(text))


def output_file(name, k):
    """The file `dscc run -o DIR` writes output k to: its name ('/' and a leading '.' as '_')."""
    if not name:
        return "out%d.npy" % k
    name = name.replace("/", "_")
    return ("_" + name[1:] if name.startswith(".") else name) + ".npy"


def check_outputs(outdir, wants, names):
    for k, want in enumerate(wants):
        path = os.path.join(outdir, output_file(names[k] if k < len(names) else "", k))
        if not os.path.exists(path):
            return "output %d (%s) missing" % (k, os.path.basename(path))
        why = compare(np.load(path), want)
        if why:
            return "output %d: %s" % (k, why)
    if len(glob.glob(os.path.join(outdir, "*.npy"))) != len(wants):
        return "%d outputs, expected %d" % (len(glob.glob(os.path.join(outdir, "*.npy"))), len(wants))
    return ""


def test_model(dscc, testdir, work, compiled, extra):
    """(status, reason) of one test folder; `extra`: import options for every command."""
    model_path = os.path.join(testdir, "model.onnx")
    os.makedirs(work, exist_ok=True)
    try:
        model = onnx.load(model_path)
    except Exception as e:  # a model the onnx package cannot read: dscc must refuse it
        model = None
    inits = set(t.name for t in model.graph.initializer) if model else set()
    inputs = [i.name for i in model.graph.input if i.name not in inits] if model else []
    all_inputs = list(inputs)
    out_names = [o.name for o in model.graph.output] if model else []
    out_names = [n if n not in out_names[:k] else "" for k, n in enumerate(out_names)]  # a repeat is unnamed
    elem_types = {i.name: i.type.tensor_type.elem_type for i in model.graph.input} if model else {}
    sets = sorted(glob.glob(os.path.join(testdir, "test_data_set_*")))
    # Import first: also checks `dscc import` and gives the arguments' names.
    dsc = os.path.join(work, "model.dsc")
    rc, text = run([dscc, "import", model_path, "-o", dsc] + extra)
    consts = []  # --const NAME=FILE: integer inputs that must be known when importing (shapes, axes)
    resize_scales = set(n.input[1 if n.op_type == "Upsample" or len(n.input) == 2 else 2] for n in model.graph.node
                        if n.op_type in ("Resize", "Upsample") and len(n.input) > 1) if model else set()
    if rc == 1 and "must be known when importing" in text and sets:
        for i, pb in enumerate(sorted(glob.glob(os.path.join(sets[0], "input_*.pb")))):
            t = onnx.TensorProto()
            with open(pb, "rb") as f:
                t.ParseFromString(f.read())
            arr = numpy_helper.to_array(t)
            name = t.name if t.name in inputs else (inputs[i] if i < len(inputs) else None)
            # Resize's and Upsample's scales (floats) must be known too.
            if name and (arr.dtype.kind == "i" or arr.size == 1 or name in resize_scales):
                npy = os.path.join(work, "const_%d.npy" % i)
                np.save(npy, arr)
                consts.append("--const=%s=%s" % (name, npy))
        rc, text = run([dscc, "import", model_path, "-o", dsc] + extra + consts)
    if rc != 0:
        return classify(rc, text)
    if "ONNX shape inference gives" in text:  # the library's own inference disagrees with dscc's types
        return "wrong", "import: " + next(l for l in text.splitlines() if "ONNX shape inference gives" in l)
    bound = set(c.split("=")[1] for c in consts)
    inputs = [i for i in inputs if i not in bound]
    with open(dsc) as f:
        header = f.read().split("{", 1)[0]
    args = re.findall(r"%([A-Za-z0-9_.$]+):", header)
    if not sets:
        return "refused", "no test data"
    so = None
    for s, ds in enumerate(sets):
        feeds = []
        for i, pb in enumerate(sorted(glob.glob(os.path.join(ds, "input_*.pb")),
                                      key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0]))):
            t = onnx.TensorProto()
            with open(pb, "rb") as f:
                t.ParseFromString(f.read())
            name = t.name if t.name in inputs or t.name in bound else (all_inputs[i] if i < len(all_inputs) else None)
            if name is None:
                return "refused", "test data input %d has no graph input" % i
            if name in bound:
                continue
            npy = os.path.join(work, "set%d_in%d.npy" % (s, i))
            arr = numpy_helper.to_array(t)
            if t.data_type == onnx.TensorProto.BFLOAT16 or (
                    elem_types.get(name) == onnx.TensorProto.BFLOAT16 and arr.dtype == np.uint16):
                arr = arr.view("V2")  # dscc's .npy spelling of bf16
            if arr.dtype.kind not in "fiubV":
                return "refused", "test input of dtype %s" % arr.dtype
            np.save(npy, arr)
            feeds.append((name, npy))
        wants = []
        for pb in sorted(glob.glob(os.path.join(ds, "output_*.pb")),
                         key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0])):
            t = onnx.TensorProto()
            with open(pb, "rb") as f:
                t.ParseFromString(f.read())
            wants.append(numpy_helper.to_array(t))
        out = os.path.join(work, "set%d_interp" % s)
        cmd = [dscc, "run", model_path, "-o", out] + extra + consts
        for name, npy in feeds:
            cmd += ["-i", "%s=%s" % (name, npy)]
        rc, text = run(cmd)
        if rc != 0:
            st, why = classify(rc, text)
            return st, "run: " + why
        why = check_outputs(out, wants, out_names)
        if why:
            return "wrong", "interpreter: " + why
        if not compiled:
            continue
        if so is None:
            so = os.path.join(work, "model.so")
            rc, text = run([dscc, "compile", model_path, "-o", so] + extra + consts)
            if rc != 0:
                st, why = classify(rc, text)
                return st, "compile: " + why
        out = os.path.join(work, "set%d_compiled" % s)
        cmd = [dscc, "run", so, "-o", out]
        for (name, npy) in feeds:
            arg = args[inputs.index(name)] if name in inputs and inputs.index(name) < len(args) else name
            cmd += ["-i", "%s=%s" % (arg, npy)]
        rc, text = run(cmd)
        if rc != 0:
            st, why = classify(rc, text)
            return st, "compiled run: " + why
        why = check_outputs(out, wants, out_names)
        if why:
            return "wrong", "compiled: " + why
    return "ok", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dscc")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--suite", action="append", help="a suite (default: %s)" % " ".join(SUITES))
    ap.add_argument("--filter", default="", help="only tests whose name contains this")
    ap.add_argument("--compiled", action="store_true", help="also compile each model and run the library")
    ap.add_argument("--symbolic-dims", action="store_true", help="import with --symbolic-dims (every input dim a symbol)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--list", action="store_true", help="print every model's status")
    ap.add_argument("--keep", help="keep the work files in this folder")
    ap.add_argument("--every", type=int, default=1, metavar="N",
                    help="only every Nth model of the sorted list, from the first (CI's fixed subset; default: all)")
    a = ap.parse_args()
    if not os.path.isdir(a.data):
        print("onnx_backend: no test data at %s (apt-get install libonnx-testdata)" % a.data)
        return 77
    work = a.keep or tempfile.mkdtemp(prefix="dscc-onnx-")
    suites = a.suite or SUITES
    jobs = []
    for suite in suites:
        for d in sorted(glob.glob(os.path.join(a.data, suite, "*"))):
            if os.path.exists(os.path.join(d, "model.onnx")) and a.filter in os.path.basename(d):
                jobs.append((suite, d))
    jobs = jobs[::max(1, a.every)]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = {ex.submit(test_model, a.dscc, d, os.path.join(work, suite, os.path.basename(d)), a.compiled,
                           ["--symbolic-dims"] if a.symbolic_dims else []):
                (suite, d) for suite, d in jobs}
        for fut in concurrent.futures.as_completed(futs):
            try:
                results[futs[fut]] = fut.result()
            except Exception as e:  # a bug of this script: count it against dscc's run
                results[futs[fut]] = ("crash", "runner: %r" % e)
    # A refusal names what dscc lacks ("not supported": an op, dtype, input
    # kind or mode), or is of a model whose ops are all supported ("other").
    # A refusal of a model made only of listed ops and element types fails the
    # run, unless the test's own data is known to be inconsistent (KNOWN_BAD).
    for key, (st, why) in list(results.items()):
        if st != "refused":
            continue
        try:
            listed = listed_model(onnx.load(os.path.join(key[1], "model.onnx")), a.symbolic_dims)
        except Exception:
            listed = False
        name = os.path.basename(key[1])
        if listed and name in REFUSED_FEATURES and REFUSED_FEATURES[name] in why:
            continue  # stays "refused": unsupported on purpose
        if listed and name in KNOWN_BAD:
            results[key] = ("refused-known", why + " (known: " + KNOWN_BAD[name] + ")")
        elif listed:
            results[key] = ("refused-listed", why)
        elif "not supported" not in why:
            results[key] = ("refused-other", why)
    failed = False
    mode = "interpreter + compiled" if a.compiled else "interpreter"
    if a.symbolic_dims:
        mode += ", --symbolic-dims"
    if a.every > 1:
        mode += ", every %dth model" % a.every
    print("onnx backend tests (%s):" % mode)
    for suite in suites:
        counts = collections.Counter(st for (s, d), (st, _) in results.items() if s == suite)
        print("  %-18s ok %4d  refused %4d (unsupported %4d, other %3d, listed ops %3d, bad data %2d)"
              "  wrong %3d  crash %3d" % (
                  suite, counts["ok"], sum(counts[k] for k in counts if k.startswith("refused")),
                  counts["refused"], counts["refused-other"], counts["refused-listed"], counts["refused-known"],
                  counts["wrong"], counts["crash"]))
    for (suite, d), (st, why) in sorted(results.items()):
        if st in ("wrong", "crash", "refused-listed"):
            failed = True
            print("%s: %s/%s: %s" % (st.upper(), suite, os.path.basename(d), why))
        elif a.list or st in ("refused-other", "refused-known"):
            print("%s: %s/%s: %s" % (st, suite, os.path.basename(d), why))
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
