"""Peeled streaming versions (codegen/cpu/CpuRowVector.cpp, streamRow) against NumPy: a stitch kernel with two f32
element outputs (one kept in a scratch row between phases) compiled with --streaming-min 1, called through the Python module with outputs at every offset
within a line (0..60 bytes), the two outputs at different offsets, rows around the line (16 f32) and the stack
scratch (4096 f32), ranges of the thread pool ending inside lines, and one output not even 4-byte aligned. Usage: stream_rows_test.py DSCC PYTHON_MODULE_DIR"""
import os
import subprocess
import sys
import tempfile

import numpy as np

DSCC, MODDIR = sys.argv[1], sys.argv[2]
sys.path.insert(0, MODDIR)
import dscc  # noqa: E402

from checks import check, failures  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def at_offset(shape, offset):
    """A float32 array whose data start `offset` bytes past a 64-byte boundary."""
    n = int(np.prod(shape))
    raw = np.empty(n * 4 + 128, np.uint8)
    skip = (-raw.ctypes.data) % 64 + offset
    return raw[skip:skip + n * 4].view(np.float32).reshape(shape)


def share(a):
    """Each element's share of its row's sum of squares, in float64."""
    e = a.astype(np.float64) ** 2
    return e / e.sum(axis=-1, keepdims=True)


tmp = tempfile.mkdtemp(prefix="dscc-stream-")
so = os.path.join(tmp, "rows.so")
subprocess.run([DSCC, "compile", os.path.join(HERE, "inputs", "stream_rows.dsc"), "-O3", "--streaming-min", "1",
                "-o", so], check=True)
plan = subprocess.run([DSCC, "explain", os.path.join(HERE, "inputs", "stream_rows.dsc"), "--dim", "N=3",
                       "--dim", "D=100", "--streaming-min", "1"], check=True, capture_output=True, text=True).stdout
check("rows peeled to 64-byte lines" in plan and "runs: rows.k0.p.i32.nt" in plan,
      "the stitch kernel runs its peeled streaming version at D=100")
ctx = dscc.Context(threads=2)
m = dscc.Model(so, context=ctx)
rng = np.random.default_rng(14)
# Tolerance: f32 against float64 NumPy, a few ULP of values up to 1 (scaled by 3 for the second output).
ATOL, RTOL = 2e-6, 2e-5
cases = []
for d in [1, 2, 15, 16, 17, 31, 33, 100, 343, 1024, 4095, 4096, 4097, 5000]:
    cases.append((3, d, 0, 0))
for off in range(0, 64, 4):
    cases.append((5, 343, off, off))
cases += [(4, 343, 0, 20), (4, 343, 12, 48), (2, 4097, 4, 8), (7, 16, 60, 4), (9, 17, 8, 8), (1, 1, 4, 4)]
# Many rows: the thread pool's ranges end inside lines; rows shorter than a line share lines three and more ways.
cases += [(20011, 5, 0, 0), (20011, 3, 36, 36), (7001, 17, 4, 4), (3001, 343, 8, 8), (4001, 100, 0, 44)]
for n, d, off_s, off_t in cases:
    a = (rng.standard_normal((n, d)) * 4).astype(np.float32)
    s, t = at_offset((n, d), off_s), at_offset((n, d), off_t)
    s.fill(np.nan)
    t.fill(np.nan)
    m.bind(a, out=[s, t], context=ctx)()
    want = share(a)
    ok = np.allclose(s, want, atol=ATOL, rtol=RTOL) and np.allclose(t, 3 * want, atol=3 * ATOL, rtol=RTOL)
    err = max(float(np.nanmax(np.abs(s - want))), float(np.nanmax(np.abs(t - 3 * want))))
    check(ok, f"N={n} D={d} outputs at +{off_s} and +{off_t} bytes: max abs err {err:.2e}")

# An output not 4-byte aligned: the module refuses it, or the kernel streams nothing and is still right.
raw = np.empty(5 * 343 * 4 + 128, np.uint8)
skip = (-raw.ctypes.data) % 64 + 2
odd = raw[skip:skip + 5 * 343 * 4].view(np.float32).reshape(5, 343)
a = rng.standard_normal((5, 343)).astype(np.float32)
t = at_offset((5, 343), 0)
try:
    m.bind(a, out=[odd, t], context=ctx)()
    check(np.allclose(odd, share(a), atol=ATOL, rtol=RTOL), "an output 2 bytes past a line: right")
except Exception as e:  # a clear refusal is right too
    check("align" in str(e).lower(), f"an output 2 bytes past a line: refused ({e})")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
