"""dscc.compile: `dscc compile` in the Python process (the command's own session, options and checks).

Checked: the library it writes is byte-identical to the command line's for the same program and options, and
agrees with NumPy at the range ends and odd sizes; an ONNX model compiled with `where=` agrees with PyTorch's stored
outputs at every stored size; located errors become CompileError (status 1 for the program, 2 for a usage error);
warnings reach sys.stderr and `--emit=ir` text sys.stdout; a compile on one thread while another calls a model.
Usage: compile_test.py DSCC PYTHON_MODULE_DIR"""
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np

DSCC, MODDIR = sys.argv[1], sys.argv[2]
sys.path.insert(0, MODDIR)
import dscc  # noqa: E402

from checks import check, failures  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TWO_OUT = os.path.join(HERE, "inputs", "two_out.dsc")  # @pair: x [B, N] + y [N], x * y; B in [1, 64], N in [1, 4096]
tmp = tempfile.mkdtemp(prefix="dscc-compile-test-")
rng = np.random.default_rng(20261207)


def path(name):
    return os.path.join(tmp, name)


def compile_error(*args, **kwargs):
    """The CompileError dscc.compile raises, or None."""
    try:
        dscc.compile(*args, **kwargs)
    except dscc.CompileError as e:
        return e
    return None


# 1. The same bytes as the command line, and right answers at the range ends and odd sizes.
# (The same file name in two folders: a library's name is its SONAME.)
os.mkdir(path("py"))
os.mkdir(path("cli"))
got = dscc.compile(TWO_OUT, path("py/m.so"))
check(got == path("py/m.so") and os.path.isfile(got), f"dscc.compile returns the path it wrote ({got})")
r = subprocess.run([DSCC, "compile", TWO_OUT, "-o", path("cli/m.so")], capture_output=True, text=True)
check(r.returncode == 0, f"dscc compile: {r.stderr}")
with open(path("py/m.so"), "rb") as a, open(path("cli/m.so"), "rb") as b:
    check(a.read() == b.read(), "dscc.compile writes the same library as `dscc compile` (byte-identical)")
m = dscc.Model(got, context=dscc.Context(2))
for B, N in [(1, 1), (64, 4096), (1, 4096), (64, 1), (3, 17), (7, 1000)]:
    x = rng.standard_normal((B, N), dtype=np.float32)
    y = rng.standard_normal(N, dtype=np.float32)
    out = m(x=x, y=y)
    check(np.array_equal(out["s"], x + y) and np.array_equal(out["p"], x * y), f"@pair at B={B} N={N}")

# Options pass through as the command line's: -O0 and an explicit target still agree.
got = dscc.compile(TWO_OUT, path("o0.so"), "-O0", target="cpu")
x = rng.standard_normal((5, 33), dtype=np.float32)
y = rng.standard_normal(33, dtype=np.float32)
check(np.array_equal(dscc.Model(got)(x, y)["p"], x * y), "-O0, target='cpu'")

# 2. An ONNX model (the dynamo exporter's BERT of the zoo) with facts from where=, against PyTorch's outputs.
bert = os.path.join(ROOT, "test", "onnx", "fixtures", "bert_dynamo.onnx")
stored = np.load(os.path.join(ROOT, "test", "onnx", "fixtures", "bert_dynamo.npz"))
got = dscc.compile(bert, path("bert.so"), where=["batch in [1, 8]", "seq in [1, 64]"])
bm = dscc.Model(got)
check([s.type for s in bm.inputs] == ["i64[batch, seq]", "i64[batch, seq]"],
      f"where= facts give the plain signature ({[s.type for s in bm.inputs]})")
sizes = sorted({k.split("_in_")[0] for k in stored.files if "_in_" in k})
check(len(sizes) >= 6, f"{len(sizes)} stored sizes")
for size in sizes:
    out = bm(input_ids=stored[f"{size}_in_input_ids"], attention_mask=stored[f"{size}_in_attention_mask"])
    for name in ("last_hidden_state", "pooler_output"):
        want = stored[f"{size}_out_{name}"]
        ok = out[name].shape == want.shape and np.allclose(out[name], want, atol=1e-4, rtol=1e-4)
        check(ok, f"bert {size} {name} within 1e-4 + 1e-4 rel of PyTorch")

# 3. Errors: located, as CompileError with the command's status; nothing written.
with open(path("bad.dsc"), "w") as f:
    f.write("func @main(%x: f32[N]) -> f32[N] {\n  %y = frob %x : f32[N]\n  return %y\n}\n")
e = compile_error(path("bad.dsc"), path("bad.so"))
check(e is not None and e.status == 1 and "bad.dsc:2:8: error: unknown op 'frob'" in str(e),
      f"an unknown op: a located CompileError, status 1 ({e!r})")
check(not os.path.exists(path("bad.so")), "nothing written after an error")
e = compile_error(TWO_OUT, path("x.so"), "--no-such-flag")
check(e is not None and e.status == 2 and "--no-such-flag" in str(e), f"an unknown flag: status 2 ({e!r})")
e = compile_error(path("missing.dsc"), path("x.so"))
check(e is not None and e.status == 1 and "missing.dsc" in str(e), f"a missing file: named ({e!r})")
e = compile_error(bert, path("x.so"), where="batch in [9, 1]")
check(e is not None and e.status != 0 and "batch" in str(e), f"an empty range in where=: refused ({e!r})")
e = compile_error(TWO_OUT, path("x.so"), target="cuda:sm_7")
check(e is not None and "sm_7" in str(e), f"an unknown target: refused ({e!r})")

# 4. Warnings to sys.stderr (a reshape that holds only at S = 0), IR text to sys.stdout.
with open(path("degenerate.dsc"), "w") as f:
    f.write("func @main(%x: f32[S, 4]) -> f32[S, 5] where S in [0, 8] {\n"
            "  %y = reshape %x : f32[S, 5]\n  return %y\n}\n")
err = io.StringIO()
with contextlib.redirect_stderr(err):
    e = compile_error(path("degenerate.dsc"), path("degenerate.so"))
check(e is not None or "warning" in err.getvalue(),
      f"a program that holds only at S = 0: a warning or an error ({e!r}, {err.getvalue()!r})")
if e is None:
    check("degenerate.dsc:" in err.getvalue(), f"the warning is located ({err.getvalue()!r})")
out = io.StringIO()
with contextlib.redirect_stdout(out):
    dscc.compile(TWO_OUT, None, "--emit=ir")
check("func @pair" in out.getvalue() and "where B in [1, 64]" in out.getvalue(),
      f"--emit=ir without an output: the IR on sys.stdout ({out.getvalue()[:80]!r})")

# 5. A compile on one thread while another calls a model (the GIL is released meanwhile).
x = rng.standard_normal((64, 4096), dtype=np.float32)
y = rng.standard_normal(4096, dtype=np.float32)
calls, stop, wrong = [0], threading.Event(), []


def caller():
    while not stop.is_set():
        if not np.array_equal(m(x=x, y=y)["s"], x + y):
            wrong.append(1)
        calls[0] += 1


t = threading.Thread(target=caller)
t.start()
try:
    dscc.compile(bert, path("bert2.so"), where=["batch in [1, 8]", "seq in [1, 64]"])
finally:
    stop.set()
    t.join()
check(not wrong and calls[0] > 0, f"{calls[0]} model calls ran during a compile, {len(wrong)} wrong")

shutil.rmtree(tmp)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
