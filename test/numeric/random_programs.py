#!/usr/bin/python3
"""Random valid programs, compiled and run against the reference interpreter: the main correctness test of codegen.

Usage: /usr/bin/python3 test/numeric/random_programs.py PATH/TO/dscc [--seed S] [--count N] [-j JOBS]
       [--target cpu|cuda:sm_90 [--emulate PATH/TO/dscc-unittests]] [--windows] [--scans] [--recurrent]
       [--check-bounds] [--keep DIR] [-v]

Each program is drawn from a seeded generator (program k of seed S is always
the same text) over every op of ir/Ops.def a kernel can hold, with symbolic
dims and `where` facts: unary and binary elementwise ops, broadcasting against
size-1 and rank-lower operands, computed values broadcast back against larger
ones (hand-written norms: a reduction over any axes, with or without keepdims,
combined with its own input; with one symbol on two axes, [N, N], a row
count read as a column), select with masks, reductions (sum, max, min,
mean, prod) over random axis sets with and without keepdims, argmax, transpose,
reshape that merges, splits, inserts and drops dims, slice with negative
bounds and steps (constant and symbolic dims), concat, gather with negative
indices, iota, broadcast_to, casts, softmax / log_softmax / layer_norm on any
axis, and matmul with batch broadcasting (also f64 and i32 matmuls, generic
kernels on the cpu), constant splats of symbolic shape; chains of these.
With --windows, also conv, conv_transpose and pool over [batch, channels,
spatial...] values (1-D and 2-D; groups, strides, dilations, pads, SAME
auto_pad where a spatial size may be 0, ceil mode and count_include_pad on
static sizes); the other batches keep their programs. With --recurrent, also
rnn layers (LSTM, GRU with and without linear_before_reset, RNN; forward,
reverse, bidirectional; output y, y_h or y_c, at times two of one layer's;
bias and initial states or not, initial_h at times an earlier layer's y_h;
layers stacked on y) over [seq, batch, input] values, seq and batch symbolic
(0 where N's range allows); f32 on the cpu (the runtime call's only dtype),
also f64, f16 and bf16 on a GPU target; every rnn result is returned.

Planner: `dscc-opt --default-pipeline --fusion-remarks` (next to dscc) must
plan it without demoting a kernel that lacks its kind's form to generic (the
planner names a kernel generic itself when an op's index map is not the
kernel's index, ir/IndexMap.h readsAtKernelIndex, or a matmul has no GEMM on
the target; a stitch lacking the form is planned again, never run as a
generic kernel that re-reads its reductions per element).

cpu: every program is compiled once (`dscc compile`); it must compile (any
refusal fails the test). It then runs at 4 to 6 sizes (every symbol at the low
end of its range, 0 where the range allows, 1, the high end, 7/8/9 around the
vector width, and a random draw) on random inputs written here (floats uniform
in [-1, 1), rnn weights and biases in [-1/sqrt(H), 1/sqrt(H)) as PyTorch
initialises them, gather indices uniform in [-D, D)), with `dscc run --check`
against the interpreter: |compiled - interpreter| <= 1e-5 + 1e-5 * |interpreter|
for f32 results (exact for integer results), equal shapes and NaN-ness.
A program with gather indices then runs once more with one index out of
range, compiled and interpreted refusing it alike (random_gather_range.py).

Every third program (k % 3 == 1) is compiled with `--streaming-min=1`, so
that its loop and stitch kernels run their streaming versions (non-temporal
stores, the next row prefetched) at every size whose rows are whole 64-byte
lines; those programs also run with every symbol at 16, 32 or 48. Every
third other one (k % 3 == 2) is compiled with `--row-schedule=1`, so that its
column reductions (last axis kept) run their row-split versions (chunks of
whole rows into a workspace, then a combine launch) at every size from 1 row.

--check-bounds (cpu): each program is compiled with `dscc compile
--check-bounds`, so every kernel load and store is checked against its
buffer's size; an out-of-bounds access aborts the run with the kernel, buffer,
element and size (docs/hardening.md), which fails the program here.

cuda:sm_90: every program must compile for the GPU (PTX assembled by ptxas
where the toolkit is present). With --emulate PATH/TO/dscc-unittests, every
stitch and input kernel of the program is also lowered in its cooperative GPU
versions (warp and block per row, with and without vectors, row-in-registers,
column tiles, split phases) and run in the CPU emulation of the schedules
(test/unit/GpuScheduleTest.cpp, GpuScheduleBatch.Program: one std::thread per
GPU thread, shuffles and barriers emulated) at the program's sizes, against
the interpreter (f32 rel 1e-4 + abs 1e-5). With --scans as well, every
scatter and cumsum kernel runs its GPU bodies (test/unit/GpuScatterTest.cpp,
GpuScatterBatch.Program: the launches in order, thread units spread over
std::threads, atomics for real) on the interpreter's operands. With
--windows as well, every conv, conv_transpose and pool kernel runs its GPU
body (test/unit/GpuWindowTest.cpp, GpuWindowBatch.Program: a unit per output
element over std::threads) on the interpreter's operands, bit for bit. With
--recurrent as well, every rnn kernel runs its GPU bodies
(test/unit/GpuRecurrentTest.cpp, GpuRecurrentBatch.Program: init and
projection, a loop over time steps, units over std::threads) on the
interpreter's operands, bit for bit, also at the low ends of the ranges (a
sequence or batch of 0).

Prints one line per failing program (with the seed and the file kept under
--keep) and a summary; exits 1 on any failure.
"""

import argparse
import concurrent.futures
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from random_scans import ScanOps, emulate_scans  # noqa: E402 - scatter and cumsum (--scans)
from random_windows import WindowOps, emulate_windows  # noqa: E402 - conv and pool (--windows)
from random_recurrent import RecurrentOps, emulate_recurrent  # noqa: E402 - rnn (--recurrent)
from random_movement import MovementOps  # noqa: E402 - transpose, reshape, slice, concat, gather, iota, broadcast
from random_gather_range import check_gather_range  # noqa: E402 - an out-of-range gather index

UNARY = ["neg", "abs", "tanh", "sigmoid", "sin", "cos", "relu", "erf", "floor", "ceil", "sign"]
BINARY = ["add", "sub", "mul", "max", "min"]
REDUCE = ["reduce_sum", "reduce_max", "reduce_min", "reduce_mean", "reduce_prod"]
COMPARE = ["gt", "lt", "ge", "le", "eq", "ne"]
LIBDEVICE = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
SYMBOLS = [("N", 1, 17), ("M", 1, 9), ("K", 1, 9)]


class Gen(WindowOps, ScanOps, RecurrentOps, MovementOps):
    """One random program."""

    def __init__(self, seed, windows=False, scans=False, recurrent=False, gpu=False):
        self.r = random.Random(seed)
        self.windows = windows  # also conv and pool (--windows; other batches keep their programs)
        self.scans = scans  # also scatter and cumsum (--scans; likewise)
        self.recurrent = recurrent  # also rnn (--recurrent; likewise)
        self.gpu = gpu  # for a GPU target: rnn also of f64, f16 and bf16
        self.rnn_states = []  # (name, dims, dtype) of rnn y_h results, initial states of later layers
        self.rnn_outs = []  # (name, dims) of rnn results (as f32), all returned
        self.args = []      # (name, dtype, dims, kind) kind: data | ("index", D-expr) | ("weight", k)
        self.lines = []
        self.pool = []      # (name, dims) f32 values
        self.ints = []      # (name, dims) i64 values
        self.n = 0
        self.syms = {}
        self.uses_empty_reduce = False
        self.centred = set()  # values minus their own mean (op_normalize)
        self.flat = set()  # softmax outputs: near 1/n, where rounding may decide their order (op_softmax)
        # Ranges: N may start at 0 in some programs (checked at 0 then).
        zero = self.r.random() < 0.3
        for s, lo, hi in SYMBOLS:
            self.syms[s] = (0 if zero and s == "N" else lo, hi)

    def fresh(self, p="v"):
        self.n += 1
        return "%s%d" % (p, self.n)

    def dim(self):
        x = self.r.random()
        if x < 0.35:
            return "N"
        if x < 0.55:
            return "M"
        return str(self.r.choice([1, 2, 3, 4, 5, 6, 8]))

    def positive(self, d):
        """True when dim d is >= 1 at every size of the ranges."""
        if d.isdigit():
            return int(d) >= 1
        if d in self.syms:
            return self.syms[d][0] >= 1
        return False

    def extent(self, dims):
        """The most elements dims span over the ranges (a product-dim counts 2601)."""
        n = 1
        for d in dims:
            n *= int(d) if d.isdigit() else self.syms[d][1] if d in self.syms else 2601
        return n

    def arg(self, dims, dtype="f32", kind="data", pool=False):
        name = self.fresh("a")
        self.args.append((name, dtype, dims, kind))
        if pool:
            self.pool.append((name, dims))
        return name

    def emit(self, text, dims, name=None, pool=True):
        name = name or self.fresh()
        self.lines.append("  %%%s = %s" % (name, text))
        if pool:
            self.pool.append((name, dims))
        return name

    def pick(self):
        # Recent values more often, so chains grow.
        k = len(self.pool)
        i = max(0, k - 1 - int(self.r.expovariate(0.5)))
        return self.pool[i]

    def partner(self, dims, exclude=None, fresh=False):
        """A value that broadcasts with dims: same shape, size-1 dims, lower rank, or a scalar.

        fresh: never a computed value (comparisons: x against a function of x
        flips on the last ulp of vector math, which is no compiler bug)."""
        same = [v for v in self.pool if v[1] == dims and v[0] != exclude]
        x = self.r.random()
        if same and x < 0.35 and not fresh:
            return self.r.choice(same)[0], dims
        if x < 0.5:
            return self.emit("constant %.3f : f32[]" % self.r.uniform(-2, 2), [], pool=False), []
        drop = self.r.randint(0, len(dims)) if dims else 0
        nd = [("1" if self.r.random() < 0.3 else d) for d in dims[drop:]]
        # K is 1 or M at run time (size_sets): a broadcast decided at run time.
        nd = [("K" if d == "M" and self.r.random() < 0.3 else d) for d in nd]
        return self.arg(nd), nd

    # ------------------------------------------------------------ ops

    def op(self):
        x, dims = self.pick()
        choices = ["unary", "binary", "binary", "reduce", "transpose", "reshape", "slice", "concat",
                   "gather", "iota", "select", "softmax", "layer_norm", "matmul", "argmax", "broadcast",
                   "cast", "exp", "positive", "divide", "integer", "logic", "gelu", "splat", "combine", "normalize",
                   "normalize", "rows", "rows", "rows"]
        if self.windows:
            choices += ["window"] * 9
        if self.scans:
            choices += ["scatter", "cumsum"] * 3
        if self.recurrent:
            choices += ["rnn"] * 14
        kind = self.r.choice(choices)
        if (x in self.centred or x in self.flat) and kind in ("integer", "logic", "argmax", "select"):
            # A value minus its own mean is rounding noise where its rows are
            # constant (a scalar argument broadcast); a step function of it
            # (floor, a comparison, the first maximum) turns noise that
            # differs with the order of the sum into 0 against -1 (seed 5007
            # program 337), no compiler bug: a continuous function instead.
            # A softmax of values a few 1e-8 apart is 1/n within an f32 ULP,
            # so the first maximum is rounding's choice (seed 9103 program
            # 383: NumPy in f64 disagreed with the interpreter at 110 of 867
            # elements and with the compiled code at 64).
            kind = "unary"
        getattr(self, "op_" + kind)(x, dims)

    def op_splat(self, x, dims):
        # A constant of the value's (symbolic) shape.
        c = self.emit("constant splat<%.3f> : f32[%s]" % (self.r.uniform(-2, 2), ", ".join(dims)), dims, pool=False)
        self.emit("add %%%s, %%%s" % (x, c), dims)

    @staticmethod
    def broadcasts(small, big):
        """True when a value of dims `small` broadcasts to `big` by name (right-aligned, equal or 1)."""
        if len(small) > len(big):
            return False
        lead = len(big) - len(small)
        return all(d == "1" or d == big[lead + i] for i, d in enumerate(small))

    def op_combine(self, x, dims):
        # A computed value broadcast against a larger one: a reduced value
        # read back at rows, columns or any other projection of the kernel's
        # index (with dims of one symbol, [N, N], a row count read as a
        # column: what element counts alone cannot tell apart).
        cands = [v for v in self.pool if v[1] != dims and self.broadcasts(v[1], dims)]
        computed = [v for v in cands if not v[0].startswith("a")]
        if not cands:
            return self.op_binary(x, dims)
        y, _ = self.r.choice(computed if computed and self.r.random() < 0.8 else cands)
        a, b = (x, y) if self.r.random() < 0.7 else (y, x)
        self.emit("%s %%%s, %%%s" % (self.r.choice(BINARY), a, b), dims)

    def op_normalize(self, x, dims):
        # x combined with a function of its own reduction (a hand-written
        # softmax, norm or centring), over any axes, with or without keepdims;
        # without keepdims the reduced value broadcasts where the names allow
        # (trailing axes kept, or a square [N, N] read across).
        if not dims:
            return self.op_unary(x, dims)
        axes = self.axes_subset(len(dims))
        keep = self.r.random() < 0.5
        kind = self.r.choice(["reduce_sum", "reduce_max", "reduce_mean"])
        positive = all(self.positive(dims[a]) for a in axes)
        if x in self.centred:
            # The sum of a value minus its own mean is 0 up to rounding,
            # which differs with the order of the sum (1e-5 and more at 2,601
            # terms: seed 3001 program 296), no compiler bug: its max instead.
            if not positive:
                return self.op_unary(x, dims)
            kind = "reduce_max"
        if kind == "reduce_max" and not positive:
            kind = "reduce_sum"
        out = [("1" if i in axes else d) for i, d in enumerate(dims)] if keep else \
              [d for i, d in enumerate(dims) if i not in axes]
        r = self.emit("%s %%%s {axes = [%s]%s}" % (kind, x, ", ".join(map(str, axes)),
                                                   ", keepdims = true" if keep else ""), out, pool=False)
        f = None
        if self.r.random() < 0.5 or kind == "reduce_sum":
            # A sum grows with the row length; combined back unbounded, a
            # chain of these grows the values by the row length per step and
            # later cancellations (centring, log_softmax) lose their leading
            # digits to f32 rounding, which differs from the interpreter's
            # f64 sums by 1e-4 relative (seeds 3004/406, 3005/29, 1/15), no
            # compiler bug: a sum is combined through tanh or sigmoid.
            f = self.r.choice(["tanh", "sigmoid"] if kind == "reduce_sum" else ["tanh", "neg", "sigmoid"])
            r = self.emit("%s %%%s" % (f, r), out, pool=False)
        if not self.broadcasts(out, dims):
            self.pool.append((r, out))
            return
        op = self.r.choice(["sub", "add", "mul"])
        y = self.emit("%s %%%s, %%%s" % (op, x, r), dims)
        if kind == "reduce_mean" and ((op == "sub" and f is None) or (op == "add" and f == "neg")):
            self.centred.add(y)
        if self.r.random() < 0.4:
            # A second reduction of the combined value (two-pass norms).
            self.op_normalize(y, dims)

    def op_unary(self, x, dims):
        if x in self.centred:  # continuous only (op), and still noise where x is
            self.centred.add(self.emit("%s %%%s" % (self.r.choice([u for u in UNARY if u not in ("floor", "ceil")]), x),
                                       dims))
            return
        self.emit("%s %%%s" % (self.r.choice(UNARY), x), dims)

    def op_positive(self, x, dims):
        # Functions of a positive argument: |x| + 0.25 keeps them finite.
        a = self.emit("abs %%%s" % x, dims, pool=False)
        c = self.emit("constant 0.25 : f32[]", [], pool=False)
        p = self.emit("add %%%s, %%%s" % (a, c), dims, pool=False)
        f = self.r.choice(["sqrt", "log", "rsqrt", "reciprocal", "pow"])
        if f == "pow":
            e = self.emit("constant %.2f : f32[]" % self.r.choice([0.5, 1.5, 2.0, -1.0]), [], pool=False)
            self.emit("pow %%%s, %%%s" % (p, e), dims)
        else:
            self.emit("%s %%%s" % (f, p), dims)

    def op_divide(self, x, dims):
        y, ydims = self.partner(dims, x)
        t = self.emit("tanh %%%s" % y, ydims, pool=False)
        c = self.emit("constant 1.5 : f32[]", [], pool=False)
        d = self.emit("add %%%s, %%%s" % (t, c), ydims, pool=False)
        self.emit("div %%%s, %%%s" % (x, d), dims if len(dims) >= len(ydims) else ydims)

    def op_gelu(self, x, dims):
        if self.r.random() < 0.5:
            self.emit("gelu %%%s" % x, dims)
        else:
            self.emit("gelu %%%s {approximate = \"tanh\"}" % x, dims)

    def floor4(self, x, dims):
        """4x + 0.375: what the integer chains floor (steps at (k - 0.375) / 4, not at 0)."""
        c = self.emit("constant 4.0 : f32[]", [], pool=False)
        m = self.emit("mul %%%s, %%%s" % (x, c), dims, pool=False)
        o = self.emit("constant 0.375 : f32[]", [], pool=False)
        return self.emit("add %%%s, %%%s" % (m, o), dims, pool=False)

    def op_integer(self, x, dims):
        # An i32 chain: floor(4x + 0.375) as integers, integer ops, maybe an
        # integer reduction or argmax, back to f32. The offset keeps the
        # step away from 0: a tail value of gelu or sigmoid is a tiny
        # negative in the interpreter (f64) and 0 in a kernel (f32), and
        # floor(4x) made that -1 against 0 (seed 8017 program 125).
        m = self.floor4(x, dims)
        f = self.emit("floor %%%s" % m, dims, pool=False)
        i = self.emit("cast %%%s {to = i32}" % f, dims, pool=False)
        k = self.emit("constant 3 : i32[]", [], pool=False)
        j = self.emit("%s %%%s, %%%s" % (self.r.choice(["add", "mul", "max", "min", "sub", "div"]), i, k), dims,
                      pool=False)
        out = dims
        if dims and self.r.random() < 0.5:
            axes = self.axes_subset(len(dims))
            kind = self.r.choice(["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
            if kind != "reduce_sum" and not all(self.positive(dims[a]) for a in axes):
                kind = "reduce_sum"
            out = [d for n, d in enumerate(dims) if n not in axes]
            j = self.emit("%s %%%s {axes = [%s]}" % (kind, j, ", ".join(map(str, axes))), out, pool=False)
        self.emit("cast %%%s {to = f32}" % j, out)

    def op_logic(self, x, dims):
        y, _ = self.partner(dims, x, fresh=True)
        a = self.emit("gt %%%s, %%%s" % (x, y), dims, pool=False)
        z, _ = self.partner(dims, x, fresh=True)
        b = self.emit("le %%%s, %%%s" % (x, z), dims, pool=False)
        l = self.emit("%s %%%s, %%%s" % (self.r.choice(["and", "or"]), a, b), dims, pool=False)
        if self.r.random() < 0.5:
            l = self.emit("not %%%s" % l, dims, pool=False)
        if self.r.random() < 0.5:
            self.emit("select %%%s, %%%s, %%%s" % (l, x, y), dims)
        else:
            self.emit("cast %%%s {to = f32}" % l, dims)

    def op_exp(self, x, dims):
        t = self.emit("tanh %%%s" % x, dims, pool=False)
        self.emit("exp %%%s" % t, dims)

    def op_binary(self, x, dims):
        y, ydims = self.partner(dims, x)
        out = dims if len(dims) >= len(ydims) else ydims
        a, b = (x, y) if self.r.random() < 0.7 else (y, x)
        self.emit("%s %%%s, %%%s" % (self.r.choice(BINARY), a, b), out)

    def op_select(self, x, dims):
        y, ydims = self.partner(dims, x, fresh=True)
        c = self.emit("%s %%%s, %%%s" % (self.r.choice(COMPARE), x, y), dims, pool=False)
        z, _ = self.partner(dims)
        self.emit("select %%%s, %%%s, %%%s" % (c, x, z), dims)

    def axes_subset(self, rank):
        k = self.r.randint(1, rank)
        return sorted(self.r.sample(range(rank), k))

    def op_reduce(self, x, dims):
        if not dims:
            return self.op_unary(x, dims)
        axes = self.axes_subset(len(dims))
        keep = self.r.random() < 0.5
        kind = self.r.choice(REDUCE)
        if x in self.centred and kind in ("reduce_sum", "reduce_mean"):
            kind = "reduce_max"  # not a sum of rounding noise (op_normalize)
        if kind in ("reduce_max", "reduce_min") and not all(self.positive(dims[a]) for a in axes):
            kind = "reduce_sum" if x not in self.centred else None
        if kind is None:
            return self.op_unary(x, dims)
        if kind == "reduce_prod" and self.extent([dims[a] for a in axes]) > 64:
            # A product of many terms gathers one f32 rounding per term in
            # whatever order it is taken: 8e-5 relative over 765 terms (seed
            # 5001 program 230), no compiler bug. Long products are sums.
            kind = "reduce_sum" if x not in self.centred else "reduce_max"
            if kind == "reduce_max" and not all(self.positive(dims[a]) for a in axes):
                return self.op_unary(x, dims)
        out = [("1" if i in axes else d) for i, d in enumerate(dims)] if keep else \
              [d for i, d in enumerate(dims) if i not in axes]
        neg = self.r.random() < 0.3
        ax = ", ".join(str(a - len(dims) if neg else a) for a in axes)
        self.emit("%s %%%s {axes = [%s]%s}" % (kind, x, ax, ", keepdims = true" if keep else ""), out)

    def op_argmax(self, x, dims):
        ok = [i for i, d in enumerate(dims) if self.positive(d)]
        if not ok:
            return self.op_unary(x, dims)
        a = self.r.choice(ok)
        keep = self.r.random() < 0.4
        out = [("1" if i == a else d) for i, d in enumerate(dims)] if keep else \
              [d for i, d in enumerate(dims) if i != a]
        m = self.emit("argmax %%%s {axis = %d%s}" % (x, a, ", keepdims = true" if keep else ""), out, pool=False)
        self.ints.append((m, out))
        if self.r.random() < 0.6:
            self.emit("cast %%%s {to = f32}" % m, out)

    def op_cast(self, x, dims):
        t = self.emit("cast %%%s {to = f64}" % x, dims, pool=False)
        u = self.emit("add %%%s, %%%s" % (t, t), dims, pool=False)
        self.emit("cast %%%s {to = f32}" % u, dims)

    def typ(self, dims, dt="f32"):
        return "%s[%s]" % (dt, ", ".join(dims))

    def arg_symbols(self):
        return {d for _, _, dims, _ in self.args for d in dims if d.isidentifier()}

    def bound_dim(self):
        d = self.dim()
        return d if not d.isidentifier() or d in self.arg_symbols() else "3"

    def op_softmax(self, x, dims):
        if not dims:
            return self.op_unary(x, dims)
        a = self.r.randrange(len(dims))
        if not self.positive(dims[a]):
            return self.op_unary(x, dims)
        kind = self.r.choice(["softmax", "log_softmax"])
        self.flat.add(self.emit("%s %%%s {axis = %d}" % (kind, x, a - len(dims) if self.r.random() < 0.5 else a), dims))

    def op_layer_norm(self, x, dims):
        if not dims:
            return self.op_unary(x, dims)
        a = self.r.randrange(len(dims))
        tail = dims[a:]
        # Rows of equal elements (a broadcast) normalise rounding noise; a
        # full-size random term keeps the problem well conditioned, and tanh
        # first keeps the values small (a row of large, nearly equal values,
        # such as an integer product, loses its deviations to f32 rounding of
        # the mean: seed 8 program 82, no compiler bug).
        x = self.emit("tanh %%%s" % x, dims, pool=False)
        x = self.emit("add %%%s, %%%s" % (x, self.arg(dims)), dims, pool=False)
        g = self.arg(tail)
        b = self.arg([tail[-1]]) if self.r.random() < 0.5 else self.arg(tail)
        self.emit("layer_norm %%%s, %%%s, %%%s {axis = %d, epsilon = 0.00001}" % (x, g, b, a), dims)

    def op_matmul(self, x, dims):
        if len(dims) < 2 or len(dims) > 3:
            return self.op_unary(x, dims)
        k = dims[-1]
        if "*" in k:
            # A product of symbols as the inner dim (up to 17*9*17 = 2601
            # terms): f32 sums that cancel to 0.3 from terms of size 17 differ
            # from the interpreter's f64 sums by 1.5e-5 (seed 2002 program
            # 439), the rounding of the sum, not a compiler bug.
            return self.op_unary(x, dims)
        if self.r.random() < 0.2:
            # A matmul the cpu has no GEMM routine for (f64, i32): a generic kernel.
            dt = self.r.choice(["f64", "i32"])
            n = self.r.choice(["3", "M"])
            if dt == "f64":
                a = self.emit("cast %%%s {to = f64}" % x, dims, pool=False)
            else:  # small integers: floor(4x + 0.375) keeps the sums exact
                m = self.floor4(x, dims)
                f = self.emit("floor %%%s" % m, dims, pool=False)
                a = self.emit("cast %%%s {to = i32}" % f, dims, pool=False)
            w = self.arg([k, n], dtype=dt)
            p = self.emit("matmul %%%s, %%%s" % (a, w), dims[:-1] + [n], pool=False)
            self.emit("cast %%%s {to = f32}" % p, dims[:-1] + [n])
            return
        n = self.r.choice(["3", "5", "M"])
        if self.r.random() < 0.25:
            w = self.arg([n, k])
            self.emit("matmul %%%s, %%%s {transpose_b = true}" % (x, w), dims[:-1] + [n])
            return
        if self.r.random() < 0.5 or len(dims) == 3:
            w = self.arg([k, n])
            out = dims[:-1] + [n]
        else:
            t = self.r.choice(["2", "M"])
            w = self.arg([t, k, n])
            out = [t] + dims[:-1] + [n]
        self.emit("matmul %%%s, %%%s" % (x, w), out)

    def program(self):
        rank = self.r.randint(1, 3)
        first = [self.dim() for _ in range(rank)]
        first[self.r.randrange(rank)] = self.r.choice(["N", "M"])
        if self.windows and self.r.random() < 0.6:
            # Images: [batch, channels, spatial...] with symbolic or static spatial sizes.
            first = [self.r.choice(["1", "2", "M"]), self.r.choice(["2", "3", "4", "M"])] + \
                    [self.r.choice(["N", "M", "5", "7", "8"]) for _ in range(self.r.randint(1, 2))]
            if not any(d in self.syms for d in first):
                first[0] = "M"  # a symbol, so the function has facts
        if self.recurrent and self.r.random() < 0.7:
            first = self.sequence()
            if not any(d in self.syms for d in first):
                first[0] = "M"
        self.arg(first, pool=True)
        if self.r.random() < 0.5:
            self.arg([self.dim() for _ in range(self.r.randint(1, 3))], pool=True)
        for _ in range(self.r.randint(2, 7)):
            self.op()
        outs = [self.pool[-1]]
        for v in self.r.sample(self.pool, min(2, len(self.pool))):
            if v not in outs and self.r.random() < 0.5 and not v[0].startswith("a"):
                outs.append(v)
        if self.ints and self.r.random() < 0.5:
            outs.append(self.ints[-1] + ("i64",))
        outs += [v for v in self.rnn_outs if v not in outs]  # every rnn's result, or the pipeline drops it
        rets, types = [], []
        for o in outs:
            rets.append("%" + o[0])
            types.append(("i64" if len(o) > 2 else "f32") + "[%s]" % ", ".join("?" for _ in o[1]))
        used = set()
        text = "\n".join(self.lines)
        for s in self.syms:
            used.add(s)
        params = ", ".join("%%%s: %s[%s]" % (n, dt, ", ".join(d)) for n, dt, d, _ in self.args)
        facts = ", ".join("%s in [%d, %d]" % (s, lo, hi) for s, (lo, hi) in self.syms.items()
                          if s in self.arg_symbols())
        return ("func @main(%s) -> (%s)\n    where %s {\n%s\n  return %s\n}\n" %
                (params, ", ".join(types), facts, text, ", ".join(rets)))


def evaluate(d, sizes):
    return int(eval(d, {"__builtins__": {}}, dict(sizes)))


def size_sets(g, r, lines=False):
    """Sizes to run: the low ends, 0 where allowed, 1, the high ends, around 8, and a random draw;
    `lines`: also whole 64-byte lines of f32 (16, 32 or 48), where streaming versions run."""
    syms = {s: v for s, v in g.syms.items() if s in g.arg_symbols()}
    sets = [{s: lo for s, (lo, hi) in syms.items()},
            {s: max(1, lo) for s, (lo, hi) in syms.items()},
            {s: hi for s, (lo, hi) in syms.items()},
            {s: min(hi, max(lo, r.choice([7, 8, 9]))) for s, (lo, hi) in syms.items()},
            {s: r.randint(lo, hi) for s, (lo, hi) in syms.items()}]
    if lines:
        sets.append({s: min(hi, max(lo, r.choice([16, 32, 48]))) for s, (lo, hi) in syms.items()})
    out = []
    for k, s in enumerate(sets):
        if "K" in s:
            s["K"] = 1 if k % 2 == 0 or "M" not in s else s["M"]
        if s not in out:
            out.append(s)
    return out


def run_one(dscc, seed, k, target, keep, verbose, emulate=None, check_bounds=False, windows=False, scans=False,
            recurrent=False):
    g = Gen(seed * 1000003 + k, windows, scans, recurrent, target != "cpu")
    text = g.program()
    tag = "seed %d program %d" % (seed, k)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "p.dsc")
        open(src, "w").write(text)
        so = os.path.join(tmp, "p.so")
        # The planner test: no kernel is demoted for lacking its kind's form.
        opt = os.path.join(os.path.dirname(dscc), "dscc-opt")
        c = subprocess.run([opt, src, "--default-pipeline", "--fusion-remarks"], capture_output=True, text=True,
                           timeout=300)
        refused = [l for l in c.stdout.splitlines()
                   if "it lacks the" in l]
        if c.returncode != 0 or refused:
            return fail(tag, "planner: " + (c.stderr.strip() or "a kernel demoted for lacking its kind's form:\n" +
                                           "\n".join(refused)), text, keep, k)
        cmd = [dscc, "compile", src, "-o", so]
        if target != "cpu":
            cmd.append("--target=" + target)
        if check_bounds:
            cmd.append("--check-bounds")
        streaming = target == "cpu" and k % 3 == 1
        if streaming:
            # Every third program takes its streaming versions (non-temporal
            # stores, next-row prefetch) wherever rows are whole lines.
            cmd.append("--streaming-min=1")
        if target == "cpu" and k % 3 == 2:
            # ... and every third other one splits its column reductions
            # into chunks of rows from the first row on.
            cmd.append("--row-schedule=1")
        c = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if c.returncode != 0:
            return fail(tag, "compile failed:\n" + c.stderr.strip(), text, keep, k)
        if target != "cpu":
            # dscc keeps a PTX-only artifact when ptxas fails: that is a failure here.
            if "ptxas failed" in c.stderr:
                return fail(tag, "ptxas rejected the PTX:\n" + c.stderr.strip(), text, keep, k)
            if not emulate:
                return True, tag, 0
            # The cooperative schedules (warp, block, tile, split) of every
            # stitch and input kernel, run in the CPU emulation of
            # test/unit/GpuScheduleTest.cpp at this program's sizes.
            # Three of the size sets (1, the high ends, around the vector
            # width): each emulated run starts a block of 256 threads.
            sets = size_sets(g, random.Random(seed * 7919 + k))
            text_of = lambda zs: ";".join(",".join("%s=%d" % kv for kv in sorted(z.items())) for z in zs)  # noqa: E731
            env = dict(os.environ, DSCC_EMU_PROGRAM=src, DSCC_EMU_SIZES=text_of(sets[1:4]))
            c = subprocess.run([emulate, "--gtest_filter=GpuScheduleBatch.Program"], capture_output=True, text=True,
                               timeout=600, env=env)
            if c.returncode != 0 or "[  PASSED  ] 1 test" not in c.stdout:
                return fail(tag, "GPU schedule emulation:\n" + c.stdout[-3000:] + c.stderr[-1000:], text, keep, k)
            runs = 0
            for line in c.stdout.splitlines():
                if line.startswith("emulated: "):
                    runs = int(line.split(",")[1].split()[0])
            if scans:
                err, n = emulate_scans(emulate, env, text)
                if err:
                    return fail(tag, err, text, keep, k)
                runs += n
            if windows:
                err, n = emulate_windows(emulate, env, text)
                if err:
                    return fail(tag, err, text, keep, k)
                runs += n
            if recurrent:
                # Also at the low ends: a sequence or batch of 0 where N's range starts at 0.
                err, n = emulate_recurrent(emulate, dict(env, DSCC_EMU_SIZES=text_of(sets[:4])), text)
                if err:
                    return fail(tag, err, text, keep, k)
                runs += n
            if verbose:
                print("ok   %s (%d emulated runs)" % (tag, runs), flush=True)
            return True, tag, runs
        r = random.Random(seed * 7919 + k)
        runs = 0
        for sizes in size_sets(g, r, lines=streaming):
            rng = np.random.default_rng(seed * 131 + k * 17 + runs)
            ins = []
            for name, dt, dims, kind in g.args:
                shape = [evaluate(d, sizes) for d in dims]
                if kind == "data" and dt == "i32":
                    a = rng.integers(-9, 10, size=shape).astype(np.int32)
                elif kind[0] != "index":  # "data", or ("weight", k): uniform in [-k, k)
                    a = (rng.uniform(-1, 1, size=shape) * (1.0 if kind == "data" else kind[1])).astype(
                        np.float64 if dt == "f64" else np.float32)
                else:
                    D = evaluate(kind[1], sizes)
                    a = rng.integers(-D, D, size=shape).astype(np.int64)
                p = os.path.join(tmp, name + ".npy")
                np.save(p, a)
                ins += ["-i", "%s=%s" % (name, p)]
            cmd = [dscc, "run", so, "--check", "--atol", "1e-5", "--rtol", "1e-5"] + ins
            c = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            runs += 1
            if c.returncode != 0 or "check: ok" not in c.stdout:
                return fail(tag, "at %s:\n%s%s" % (sizes, c.stdout[-2000:], c.stderr[-2000:]), text, keep, k)
            last = (sizes, ins)
        # One index made out of range: compiled code must refuse it as the interpreter does (random_gather_range.py).
        idx = [(name, kind) for name, dt, dims, kind in g.args if kind[0] == "index"] if runs else []
        if idx:
            why = check_gather_range(dscc, src, so, tmp, idx, last, k, lambda kind, sizes: evaluate(kind[1], sizes))
            if why:
                return fail(tag, why, text, keep, k)
        if verbose:
            print("ok   %s (%d sizes)" % (tag, runs), flush=True)
        return True, tag, runs


def fail(tag, why, text, keep, k):
    where = ""
    if keep:
        os.makedirs(keep, exist_ok=True)
        path = os.path.join(keep, "p%d.dsc" % k)
        open(path, "w").write(text)
        where = " (kept: %s)" % path
    print("FAIL %s%s: %s" % (tag, where, why), flush=True)
    return False, tag, 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dscc")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--check-bounds", action="store_true",
                    help="compile with --check-bounds (every kernel load and store checked; cpu only)")
    ap.add_argument("--keep", default="")
    ap.add_argument("--emulate", default="", help="cuda targets: dscc-unittests, to run the cooperative schedules "
                    "of every stitch and input kernel in its CPU emulation (GpuScheduleBatch.Program)")
    ap.add_argument("--print", action="store_true", help="print program K (--first) and exit")
    ap.add_argument("--windows", action="store_true", help="also draw conv, conv_transpose and pool (oneDNN calls on "
                    "the cpu, kernels of ours on the GPU)")
    ap.add_argument("--scans", action="store_true", help="also draw scatter and cumsum (runtime calls on the cpu, "
                    "kernels of ours on the GPU)")
    ap.add_argument("--recurrent", action="store_true", help="also draw rnn: LSTM, GRU and RNN layers (a runtime "
                    "call on the cpu, f32; kernels of ours per time step on the GPU, also f64, f16 and bf16)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if a.print:
        print(Gen(a.seed * 1000003 + a.first, a.windows, a.scans, a.recurrent, a.target != "cpu").program())
        return 0
    if a.check_bounds and a.target != "cpu":
        ap.error("--check-bounds applies to the cpu target only")
    if a.target != "cpu" and not os.path.exists(LIBDEVICE):
        print("random programs: skipped: %s not found (the CUDA toolkit compiles math for the GPU)" % LIBDEVICE)
        return 77
    ks = range(a.first, a.first + a.count)
    bad = 0
    runs = 0
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for ok, tag, n in ex.map(lambda k: run_one(a.dscc, a.seed, k, a.target, a.keep, a.verbose, a.emulate or None,
                                                   a.check_bounds, a.windows, a.scans, a.recurrent), ks):
            bad += not ok
            runs += n
    what = ("%d emulated (version, size) runs of cooperative kernels" % runs if a.emulate and a.target != "cpu"
            else "checked at %d sizes" % runs)
    print("random programs (%s%s, seed %d): %d compiled and %s; %d passed, %d failed" %
          (a.target, ", bounds checks" if a.check_bounds else "", a.seed, len(ks), what, len(ks) - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
