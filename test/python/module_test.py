"""The `dscc` Python module: named inputs, dtype/rank/size errors as exceptions with the runtime's message,
outputs equal to `dscc run`'s, 8 threads calling one model, DLPack inputs, dscc.empty's aligned arrays, RSS stable over repeated calls,
`python3 -m dscc`.  Usage: module_test.py DSCC PYTHON_MODULE_DIR"""
import glob
import os
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


def raises(exc, fn, *needles):
    try:
        fn()
    except exc as e:
        msg = str(e)
        missing = [n for n in needles if n not in msg]
        return not missing, msg
    except Exception as e:  # the wrong kind
        return False, f"{type(e).__name__}: {e}"
    return False, "no exception"


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


tmp = tempfile.mkdtemp(prefix="dscc-py-")
so = os.path.join(tmp, "pair.so")
subprocess.run([DSCC, "compile", os.path.join(HERE, "inputs", "two_out.dsc"), "-o", so], check=True)
ctx = dscc.Context(threads=2)
check(ctx.threads == 2, "Context(threads=2).threads == 2")
m = dscc.Model(so, context=ctx)
check([s.name for s in m.inputs] == ["x", "y"] and [s.name for s in m.outputs] == ["s", "p"],
      f"signature read from the model: {m}")
check(m.inputs[0].dims == ["B", "N"] and m.inputs[0].dtype == np.float32, "input spec dims and dtype")

rng = np.random.default_rng(0)
x = rng.standard_normal((3, 5), dtype=np.float32)
y = rng.standard_normal(5, dtype=np.float32)
out = m(x=x, y=y)
check(list(out) == ["s", "p"], "outputs by name, in order")
check(np.array_equal(out["s"], x + y) and np.array_equal(out["p"], x * y), "named inputs: values")
check(np.array_equal(m(x, y)["p"], x * y) and np.array_equal(m(x, y=y)["s"], x + y), "positional and mixed inputs")
check(out["s"].base is not None and not out["s"].flags.owndata, "outputs wrap the runtime's buffers (no copy)")
# C-order strides from the ABI's element sizes (pybind11 2.10 read 0 from NumPy 2's dtype struct).
check(out["s"].strides == (20, 4) and out["p"].strides == (20, 4) and out["s"].flags.c_contiguous,
      f"outputs are C-contiguous with strides from the element size: {out['s'].strides}")
xt = np.asfortranarray(x)
check(np.array_equal(m(x=xt, y=y)["s"], x + y), "a non-contiguous input is made contiguous")
check(np.array_equal(m(x=x[:, ::1], y=y)["s"], x + y), "a C-contiguous view goes in as is")


# Profiling from Python: off by default; on, one record per launch, named as `dscc explain` names the kernel.
check(not ctx.profiling and ctx.profile() == [], "profiling is off by default and records nothing")
ctx.profiling = True
m(x=x, y=y)
ctx.profiling = False
recs = ctx.profile()
# N = 5 breaks the vector guard (N % 16 == 0), the 32-bit one holds: both kernels run their i32 versions.
check([r["function"] for r in recs] == ["pair.k0.s.i32", "pair.k1.p.i32"]
      and all(r["call"] == "kernel" and r["version"] == "i32" for r in recs)
      and all(r["end_ns"] >= r["start_ns"] and r["sizes"].get("B") == 3 for r in recs),
      f"profile records of one call: {recs}")
ctx.clear_profile()
check(ctx.profile() == [], "clear_profile drops the records")


buf_s, buf_p = np.empty((3, 5), np.float32), np.empty((3, 5), np.float32)
got = m(x=x, y=y, out={"s": buf_s, "p": buf_p})
check(got["s"] is buf_s and np.array_equal(buf_s, x + y) and np.array_equal(buf_p, x * y),
      "out=: the outputs written into the caller's arrays")
ok, msg = raises(dscc.ShapeMismatchError, lambda: m(x=x, y=y, out=[np.empty((3, 4), np.float32), buf_p]), "output 0", "3, 4")
check(ok, f"out= of the wrong shape -> the model's ShapeMismatchError: {msg}")

# bind: checked once, then each call writes the bound arrays; new data in the same input arrays is seen.
bx, by = x.copy(), y.copy()
bs, bp = np.zeros((3, 5), np.float32), np.zeros((3, 5), np.float32)
call = m.bind(bx, y=by, out={"s": bs, "p": bp})
check(call() is None and np.array_equal(bs, x + y) and np.array_equal(bp, x * y), "bind: the call writes out")
bx *= 2.0
call()
check(np.array_equal(bs, 2 * x + y) and np.array_equal(bp, 2 * x * y), "bind: later calls see new input data")
ok, msg = raises(dscc.ShapeMismatchError, lambda: m.bind(bx, by, out=[np.empty((3, 4), np.float32), bp])(),
                 "output 0", "3, 4")
check(ok, f"bind with an output of the wrong shape -> ShapeMismatchError: {msg}")
ok, msg = raises(dscc.ShapeMismatchError, lambda: m.bind(bx.astype(np.float64), by, out=[bs, bp]), "dtype")
check(ok, f"bind with an input of the wrong dtype -> ShapeMismatchError at bind time: {msg}")


class DLPackOnly:
    """An array from another library: only the DLPack protocol."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


check(np.array_equal(m(x=DLPackOnly(x), y=DLPackOnly(y))["p"], x * y), "DLPack inputs")

ok, msg = raises(dscc.ShapeMismatchError, lambda: m(x=x.astype(np.float64), y=y), "dtype", "float64", "%x")
check(ok, f"wrong dtype -> ShapeMismatchError: {msg}")
ok, msg = raises(dscc.ShapeMismatchError, lambda: m(x=x[0], y=y), "rank", "%x")
check(ok, f"wrong rank -> ShapeMismatchError: {msg}")
ok, msg = raises(dscc.ShapeMismatchError, lambda: m(x=x, y=np.zeros(6, np.float32)), "%y", "6")
check(ok, f"wrong size -> ShapeMismatchError with the runtime's message: {msg}")
ok, msg = raises(dscc.FactViolatedError, lambda: m(x=np.zeros((65, 5), np.float32), y=y), "B in [1, 64]")
check(ok, f"size outside the facts -> FactViolatedError: {msg}")
e = None
try:
    m(x=np.zeros((65, 5), np.float32), y=y)
except dscc.Error as err:
    e = err
check(e is not None and e.status == 3 and e.status_name == "FACT_VIOLATED" and isinstance(e, ValueError),
      "the exception carries the status")
ok, msg = raises(dscc.InvalidArgumentError, lambda: m(x=x, z=y), "no input 'z'", "x, y")
check(ok, f"unknown input name: {msg}")
ok, msg = raises(dscc.InvalidArgumentError, lambda: m(x=x), "missing", "y")
check(ok, f"missing input: {msg}")
ok, msg = raises(dscc.InvalidArgumentError, lambda: dscc.Context(threads=-1), "context")
check(ok, f"Context(-1): {msg}")
ok, msg = raises(dscc.InvalidArgumentError, lambda: dscc.Model(os.path.join(tmp, "none.so")), "cannot load")
check(ok, f"a missing model file: {msg}")

# Named results (ONNX output names) name the outputs.
named_so = os.path.join(tmp, "named.so")
subprocess.run([DSCC, "compile", os.path.join(HERE, "inputs", "named.dsc"), "-o", named_so], check=True)
v = np.arange(4, dtype=np.float32)
named_out = dscc.Model(named_so)(x=v)
check(list(named_out) == ["out:0", "logits"] and np.array_equal(named_out["logits"], v * v),
      f"outputs named by the results' names: {list(named_out)}")

# The same outputs as `dscc run` on the same inputs (written as .npy).
np.save(os.path.join(tmp, "x.npy"), x)
np.save(os.path.join(tmp, "y.npy"), y)
outdir = os.path.join(tmp, "run")
subprocess.run([DSCC, "run", so, "-i", "x=" + os.path.join(tmp, "x.npy"), "-i", "y=" + os.path.join(tmp, "y.npy"),
                "-o", outdir], check=True, stdout=subprocess.DEVNULL)
for i, name in enumerate(["s", "p"]):
    cands = [os.path.join(outdir, f) for f in (f"out{i}.npy", f"{name}.npy") if os.path.exists(os.path.join(outdir, f))]
    check(bool(cands) and np.array_equal(np.load(cands[0]), out[name]), f"output {name} equals `dscc run -o`'s")

# 8 threads calling one model on one context at once, each with its own sizes.
errors = []


def worker(k):
    r = np.random.default_rng(k)
    for it in range(50):
        b, n = 1 + (k + it) % 7, 1 + (3 * k + it) % 300
        a, v = r.standard_normal((b, n), dtype=np.float32), r.standard_normal(n, dtype=np.float32)
        o = m(x=a, y=v)
        if not (np.array_equal(o["s"], a + v) and np.array_equal(o["p"], a * v)):
            errors.append((k, it))
        if it % 10 == 0:  # failures too, concurrently: each thread reads its own message
            try:
                m(x=np.zeros((65, n), np.float32), y=v)
                errors.append((k, it, "no error"))
            except dscc.FactViolatedError as e:
                if "B = 65" not in str(e) and "65" not in str(e):
                    errors.append((k, it, str(e)))


threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(not errors, f"8 threads calling one model and context: {errors[:3]}")

# dscc.empty: 64-byte aligned C-contiguous arrays (out= that the streaming versions take), at any shape.
for shape, dt in [((3, 5), np.float32), ((64, 4096), np.float32), ((0, 7), np.float32), ((), np.float64),
                  (17, np.int8), ((2, 3, 4), np.float16)]:
    a = dscc.empty(shape, dt)
    want = (shape,) if isinstance(shape, int) else shape
    check((a.size == 0 or a.ctypes.data % 64 == 0) and a.shape == want and a.dtype == dt and a.flags["C_CONTIGUOUS"]
          and a.flags["WRITEABLE"], f"dscc.empty({shape}, {np.dtype(dt).name}): aligned, shape and dtype kept")
ok, msg = raises(ValueError, lambda: dscc.empty((2, -1)), "negative")
check(ok, f"dscc.empty of a negative dimension -> ValueError: {msg}")
es, ep = dscc.empty((3, 5)), dscc.empty((3, 5))
got = m(x=x, y=y, out=[es, ep])
check(got["s"] is es and np.array_equal(es, x + y) and np.array_equal(ep, x * y),
      "out= of dscc.empty arrays: the same results")

# No leaks: RSS stable over repeated calls (1 MiB outputs; inputs and outputs dropped each time).
big_x = np.ones((64, 4096), np.float32)
big_y = np.ones(4096, np.float32)
for _ in range(200):
    m(x=big_x, y=big_y)
before = rss_kib()
for _ in range(3000):
    m(x=big_x, y=big_y)
    try:
        m(x=big_x, y=np.ones(5, np.float32))
    except dscc.ShapeMismatchError:
        pass
grown = rss_kib() - before
check(grown < 16 * 1024, f"RSS grew {grown} KiB over 3000 calls (< 16 MiB)")

# python3 -m dscc forwards to the command line.
env = dict(os.environ, PYTHONPATH=MODDIR)
r = subprocess.run([sys.executable, "-m", "dscc", "compile", os.path.join(HERE, "inputs", "two_out.dsc"), "-o",
                    os.path.join(tmp, "viapy.so")], env=env)
check(r.returncode == 0 and os.path.exists(os.path.join(tmp, "viapy.so")), "python3 -m dscc compile")
r = subprocess.run([sys.executable, "-m", "dscc", "compile", "--no-such-flag"], env=env, stderr=subprocess.PIPE,
                   text=True)
check(r.returncode == 2 and "dscc: error:" in r.stderr, "python3 -m dscc passes the exit status through")

for f in glob.glob(os.path.join(tmp, "**", "*"), recursive=True):
    if os.path.isfile(f):
        os.remove(f)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
