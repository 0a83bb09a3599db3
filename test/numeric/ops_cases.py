"""The harness of ops_vs_numpy.py: IR dtypes as NumPy arrays (bf16 carried in f32), .npy files, random data from
one fixed-seed generator, and the cases (a program, its inputs and the outputs NumPy expects)."""

import math

import numpy as np

SEED = 20240611
rng = np.random.default_rng(SEED)

# numpy has no bfloat16: bf16 values travel as float32 arrays holding exactly
# representable values, and as raw 2-byte voids in .npy files.
CARRIER = {
    "f32": np.float32, "f16": np.float16, "bf16": np.float32, "f64": np.float64,
    "i64": np.int64, "i32": np.int32, "i8": np.int8, "i1": np.bool_,
}
FLOATS = ("f32", "f16", "bf16", "f64")
INTS = ("i64", "i32", "i8")

# (rtol, atol) for computed float results, by output dtype.
TOL = {"f32": (1e-5, 1e-6), "f64": (1e-12, 1e-12), "f16": (2e-3, 1e-3), "bf16": (1.6e-2, 1e-2)}


def bf16_bits(a):
    """Rounds float32 values to bfloat16 (nearest even) and returns the bit patterns."""
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def to_dtype(dt, a):
    """`a` converted to IR dtype `dt` (rounded as the dtype stores it), in its carrier."""
    a = np.asarray(a)
    if dt == "bf16":
        return bf16_value(bf16_bits(np.asarray(a, dtype=np.float32)))
    if dt == "i1":
        return a != 0
    if dt in INTS and a.dtype.kind == "f":
        return np.trunc(a).astype(np.int64).astype(CARRIER[dt])
    return a.astype(CARRIER[dt])


def save(path, dt, a):
    if dt == "bf16":
        np.save(path, bf16_bits(a).view("V2"))
    else:
        np.save(path, np.asarray(a, dtype=CARRIER[dt]))


def load(path):
    a = np.load(path)
    if a.dtype.kind == "V":
        return "bf16", bf16_value(a.view(np.uint16))
    names = {np.dtype(v): k for k, v in CARRIER.items() if k != "bf16"}
    return names[a.dtype], a


# ---------------------------------------------------------------- values


def rand(dt, shape, kind="any"):
    """Random values of IR dtype `dt`: kind any / pos / nonzero / unit (near 1) / small (integers -2..2)."""
    shape = tuple(shape)
    if dt == "i1":
        return rng.integers(0, 2, shape).astype(bool)
    if dt in INTS:
        if kind == "small":
            return rng.integers(-2, 3, shape).astype(CARRIER[dt])
        if kind == "nonzero":
            v = rng.integers(1, 20, shape) * rng.choice([-1, 1], shape)
            return v.astype(CARRIER[dt])
        if kind == "pos":
            return rng.integers(0, 6, shape).astype(CARRIER[dt])
        return rng.integers(-100, 101, shape).astype(CARRIER[dt])
    if kind == "pos":
        v = rng.uniform(0.1, 4.0, shape)
    elif kind == "nonzero":
        v = rng.uniform(0.25, 3.0, shape) * rng.choice([-1.0, 1.0], shape)
    elif kind == "unit":
        v = rng.uniform(0.5, 1.5, shape)
    elif kind == "small":
        v = rng.integers(-2, 3, shape).astype(np.float64)
    else:
        v = rng.normal(0.0, 1.5, shape)
        # Keep away from the exact zeros that relative tolerances cannot judge.
        v = np.where(np.abs(v) < 1e-3, 0.5, v)
    # f64 inputs hold float32 values so every conversion below is exact in numpy too.
    if dt == "f64":
        v = v.astype(np.float32)
    return to_dtype(dt, v)


# ---------------------------------------------------------------- cases


class Case:
    """One program, its inputs, and either expected outputs or an expected error."""

    def __init__(self, name, body, inputs=(), outs=(), static=False, types=None, error=None,
                 files=None, tol=None, where=""):
        self.name = name
        self.body = body            # op lines, without the return
        self.inputs = list(inputs)  # (name, dtype, array)
        self.outs = list(outs)      # (value name, dtype, expected array)
        self.static = static        # literal dims in the signature instead of symbols
        self.types = types or {}    # explicit argument / result types by name
        self.error = error          # expected substring of an error message
        self.files = files or {}    # extra .npy files next to the program: name -> (dtype, array)
        self.tol = tol              # "exact" or None (by dtype)
        self.where = where

    def program(self):
        args = []
        for n, dt, a in self.inputs:
            if n in self.types:
                t = self.types[n]
            elif self.static:
                t = f"{dt}[{', '.join(str(d) for d in a.shape)}]"
            else:
                t = f"{dt}[{', '.join(f'{n.upper()}{j}' for j in range(a.ndim))}]"
            args.append(f"%{n}: {t}")
        res = []
        for n, dt, a in self.outs:
            if n in self.types:
                res.append(self.types[n])
            elif self.static:
                res.append(f"{dt}[{', '.join(str(d) for d in np.shape(a))}]")
            else:
                res.append(f"{dt}[{', '.join('?' for _ in np.shape(a))}]")
        lines = [f"func @main({', '.join(args)}) -> {', '.join(res)}{(' where ' + self.where) if self.where else ''} {{"]
        lines += ["  " + l for l in self.body]
        lines.append("  return " + ", ".join("%" + n for n, _, _ in self.outs))
        lines.append("}")
        return "\n".join(lines) + "\n"


CASES = []


def add(*a, **k):
    CASES.append(Case(*a, **k))


def shape_name(*shapes):
    return "x".join("[" + ",".join(str(d) for d in s) + "]" for s in shapes)


# ---------------------------------------------------------------- references

erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def f64(a):
    return np.asarray(a, dtype=np.float64)
