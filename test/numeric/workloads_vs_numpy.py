#!/usr/bin/python3
"""Checks every bench workload run by `dscc run` against an independent NumPy reference, at sizes drawn from the project's shape files, plus rejected-input cases.

Usage: /usr/bin/python3 test/numeric/workloads_vs_numpy.py PATH/TO/dscc [-k SUBSTRING] [-v]

For each program in bench/workloads/*.dsc this script re-implements what the
program computes in NumPy (float64 throughout), draws sizes from the shape
file the workload belongs to (bench/workloads/shapes/*.yaml, drawn as
../shared/spec/shapes.md says: seeded `draws` from `dims` — `values` with
optional `weights`, `range` integers inclusive, uniform or log-uniform — plus
the explicit `points`), keeps a few small ones so the whole run stays short,
adds the cheap boundary sizes of the function's `where` ranges, writes random
normal inputs (fixed seed) as .npy files, runs `dscc run -i ... -o DIR` and
compares out0.npy with the reference.

The draw uses numpy's PCG64 seeded with the file's `seed`; the spec fixes the
distributions, not the generator, so the drawn sizes need not be those
`dscc-tune` draws. Which points are used and why (drawn, listed, clamped,
boundary) is printed on each line.

Tolerance: every workload output is f32 and is compared in float64 with
|got - ref| <= ATOL + RTOL * |ref|, RTOL = 2e-4, ATOL = 2e-5: well above f32
rounding of the longest chains here (a 3072-term matmul followed by a
LayerNorm in bert_layer), and below the effect of real mistakes such as a
tanh GELU (up to 5e-4), a missing mask or bias, a wrong divisor, or a wrong
epsilon in layer_norm or rms_norm (some rows of their inputs have a variance
or mean square near epsilon so that it matters; bert_layer's epsilon of 1e-12
is below f32 resolution and cannot be observed).

Masks (bert_layer, softmax) hold 0 or -10000 per position. Position 0 of
every batch row is always 0 (as a [CLS] token is in BERT), so no softmax row
is fully masked: in a fully masked row every score is s - 10000 rounded to f32,
whose spacing is 2^-10, so the f32 program and a float64 reference would
differ by rounding alone. One extra softmax case does mask a whole batch row,
and its reference rounds that single add (scores + mask) to f32 as the program
does, then continues in float64.

Negative cases expect exit status 1, no output file, and a message naming the
problem: a size breaking a `where` fact, an f64 array for an f32 argument, and
inputs whose dims disagree.

Prints one line per (workload, sizes) and exits non-zero listing failures.
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import yaml
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("workloads_vs_numpy.py needs PyYAML: apt-get install -y python3-yaml")

RTOL = 2e-4
ATOL = 2e-5

# Size caps that keep the whole script well under a minute on two cores.
BERT_TOKENS_CAP = 256          # B*S of bert_layer
ELEMENTS_CAP = 300_000         # elements of the largest tensor of the other workloads
BOUNDARY_ELEMENTS_CAP = 1_000_000  # a `where` end point is run up to this many elements
DRAWN_PER_WORKLOAD = {"bert_layer": 3, "softmax": 4}
DRAWN_DEFAULT = 5

erf_vec = np.vectorize(math.erf, otypes=[np.float64])


# ---------------------------------------------------------------- references (float64)


def gelu(x):
    """Exact GELU: x * Phi(x) with the erf form."""
    return 0.5 * x * (1.0 + erf_vec(x / math.sqrt(2.0)))


def layer_norm(x, g, b, eps):
    """Normalises over the last axis with the biased variance, then scales and shifts."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def ref_bert_layer(a):
    """Post-LN BERT encoder layer as bert_layer.dsc writes it (LayerNorm epsilon 1e-12 there)."""
    x, mask = a["x"], a["mask"]
    B, S, H = x.shape
    nh, hd = 12, 64

    def heads(t):  # [B, S, 768] -> [B, 12, S, 64]
        return t.reshape(B, S, nh, hd).transpose(0, 2, 1, 3)

    q = heads(x @ a["wq"] + a["bq"])
    k = heads(x @ a["wk"] + a["bk"])
    v = heads(x @ a["wv"] + a["bv"])
    scores = (q @ k.transpose(0, 1, 3, 2)) * 0.125 + mask[:, None, None, :]
    ctx = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(B, S, H)
    h = layer_norm(ctx @ a["wo"] + a["bo"] + x, a["ln1_g"], a["ln1_b"], 1e-12)
    f = gelu(h @ a["w1"] + a["b1"]) @ a["w2"] + a["b2"]
    return layer_norm(f + h, a["ln2_g"], a["ln2_b"], 1e-12)


def ref_softmax(a, round_mask_add=False):
    s, mask = a["s"], a["mask"]
    if round_mask_add:
        # The program adds in f32: s*0.125 is exact, the sum with -10000 is rounded.
        x = (np.float32(0.125) * s.astype(np.float32) + mask.astype(np.float32)[:, None, None, :]).astype(np.float64)
    else:
        x = s * 0.125 + mask[:, None, None, :]
    return softmax(x)


def ref_layer_norm(a):
    return layer_norm(a["x"], a["g"], a["b"], 1e-5)


def ref_gelu_bias(a):
    return gelu(a["x"] + a["b"])


def ref_elementwise_chain(a):
    x, w = a["a"], a["w"]
    return np.tanh(x * w + 1.0) * (1.0 / (1.0 + np.exp(-x)))


def ref_col_reduce(a):
    x = a["x"]
    return x.sum(axis=0) / x.shape[0]


def ref_rms_norm(a):
    x, g = a["x"], a["g"]
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * g


# ---------------------------------------------------------------- inputs (float32)


def normal(rng, shape, scale=1.0, loc=0.0):
    v = rng.normal(loc, scale, shape)
    v = np.where(v == 0.0, 0.5, v)  # nonzero
    return v.astype(np.float32)


def make_mask(rng, B, S, full_row=None):
    """0 or -10000 per position, position 0 always attended unless batch row `full_row` is all masked."""
    m = np.where(rng.random((B, S)) < 0.3, -10000.0, 0.0).astype(np.float32)
    m[:, 0] = 0.0
    if full_row is not None:
        m[full_row, :] = -10000.0
    return m


def in_bert(rng, d):
    B, S = d["B"], d["S"]
    a = {"x": normal(rng, (B, S, 768)), "mask": make_mask(rng, B, S)}
    for n in ("q", "k", "v", "o"):
        a["w" + n] = normal(rng, (768, 768), 1.0 / math.sqrt(768))
        a["b" + n] = normal(rng, (768,), 0.1)
    a["ln1_g"], a["ln1_b"] = normal(rng, (768,), 0.3, 1.0), normal(rng, (768,), 0.3)
    a["w1"], a["b1"] = normal(rng, (768, 3072), 1.0 / math.sqrt(768)), normal(rng, (3072,), 0.1)
    a["w2"], a["b2"] = normal(rng, (3072, 768), 1.0 / math.sqrt(3072)), normal(rng, (768,), 0.1)
    a["ln2_g"], a["ln2_b"] = normal(rng, (768,), 0.3, 1.0), normal(rng, (768,), 0.3)
    return a


def in_softmax(rng, d, full_row=None):
    B, S = d["B"], d["S"]
    # Scores of spread ~8 become ~1 after the 0.125 scale: softmax rows are not one-hot.
    return {"s": normal(rng, (B, 12, S, S), 8.0), "mask": make_mask(rng, B, S, full_row)}


def in_layer_norm(rng, d):
    N, D = d["N"], d["D"]
    # Rows with an offset mean check that the mean is subtracted before the variance;
    # every third row (from row 1) has a variance near epsilon = 1e-5, so that a
    # wrong or missing epsilon shows.
    x = normal(rng, (N, D), 2.0, 3.0)
    x[1::3] = normal(rng, (len(range(1, N, 3)), D), 3e-3)
    return {"x": x, "g": normal(rng, (D,)), "b": normal(rng, (D,))}


def in_gelu_bias(rng, d):
    return {"x": normal(rng, (d["T"], 3072), 2.0), "b": normal(rng, (3072,))}


def in_elementwise_chain(rng, d):
    return {"a": normal(rng, (d["N"], d["D"]), 1.5), "w": normal(rng, (d["D"],))}


def in_col_reduce(rng, d):
    return {"x": normal(rng, (d["N"], d["D"]), 1.0, 0.5)}


def in_rms_norm(rng, d):
    # Every third row (from row 1) has a mean square near epsilon = 1e-6.
    x = normal(rng, (d["T"], 4096))
    x[1::3] = normal(rng, (len(range(1, d["T"], 3)), 4096), 1e-3)
    return {"x": x, "g": normal(rng, (4096,))}


# ---------------------------------------------------------------- workloads

# name: (program, shape file, inputs, reference, cost of a point, cap, clamp)
#   cost: the quantity the cap bounds; clamp: returns (point, note) within the cap.


def clamp_dim(d, sym, value, why):
    if d[sym] <= value:
        return d, None
    note = f"clamped {sym} {d[sym]}->{value} ({why})"
    d = dict(d)
    d[sym] = value
    return d, note


WORKLOADS = [
    dict(name="bert_layer", shapes="bert_serving.yaml", inputs=in_bert, ref=ref_bert_layer,
         cost=lambda d: d["B"] * d["S"], cap=BERT_TOKENS_CAP, what="B*S",
         clamp=lambda d: clamp_dim(d, "S", max(1, BERT_TOKENS_CAP // d["B"]), f"B*S <= {BERT_TOKENS_CAP}")),
    dict(name="softmax", shapes="bert_serving.yaml", inputs=in_softmax, ref=ref_softmax,
         cost=lambda d: d["B"] * 12 * d["S"] * d["S"], cap=ELEMENTS_CAP, what="B*12*S*S",
         clamp=lambda d: clamp_dim(d, "S", max(1, math.isqrt(ELEMENTS_CAP // (12 * d["B"]))),
                                   f"B*12*S*S <= {ELEMENTS_CAP}")),
    dict(name="layer_norm", shapes="layer_norm_rows.yaml", inputs=in_layer_norm, ref=ref_layer_norm,
         cost=lambda d: d["N"] * d["D"], cap=ELEMENTS_CAP, what="N*D",
         clamp=lambda d: clamp_dim(d, "N", max(1, ELEMENTS_CAP // d["D"]), f"N*D <= {ELEMENTS_CAP}")),
    dict(name="col_reduce", shapes="layer_norm_rows.yaml", inputs=in_col_reduce, ref=ref_col_reduce,
         cost=lambda d: d["N"] * d["D"], cap=ELEMENTS_CAP, what="N*D",
         clamp=lambda d: clamp_dim(d, "N", max(1, ELEMENTS_CAP // d["D"]), f"N*D <= {ELEMENTS_CAP}")),
    dict(name="elementwise_chain", shapes="layer_norm_rows.yaml", inputs=in_elementwise_chain,
         ref=ref_elementwise_chain, cost=lambda d: d["N"] * d["D"], cap=ELEMENTS_CAP, what="N*D",
         clamp=lambda d: clamp_dim(d, "N", max(1, ELEMENTS_CAP // d["D"]), f"N*D <= {ELEMENTS_CAP}")),
    dict(name="gelu_bias", shapes="tokens.yaml", inputs=in_gelu_bias, ref=ref_gelu_bias,
         cost=lambda d: d["T"] * 3072, cap=ELEMENTS_CAP, what="T*3072",
         clamp=lambda d: clamp_dim(d, "T", max(1, ELEMENTS_CAP // 3072), f"T*3072 <= {ELEMENTS_CAP}")),
    dict(name="rms_norm", shapes="tokens.yaml", inputs=in_rms_norm, ref=ref_rms_norm,
         cost=lambda d: d["T"] * 4096, cap=ELEMENTS_CAP, what="T*4096",
         clamp=lambda d: clamp_dim(d, "T", max(1, ELEMENTS_CAP // 4096), f"T*4096 <= {ELEMENTS_CAP}")),
]


def where_ranges(program):
    """{symbol: (lo, hi)} from the `where S in [lo, hi]` facts of the program."""
    with open(program) as f:
        text = f.read()
    m = re.search(r"\bwhere\b(.*?)\{", text, re.S)
    if not m:
        return {}
    return {s: (int(lo), int(hi)) for s, lo, hi in re.findall(r"(\w+)\s+in\s+\[\s*(\d+)\s*,\s*(\d+)\s*\]", m.group(1))}


def function_name(program):
    with open(program) as f:
        return re.search(r"func\s+@(\w+)", f.read()).group(1)


def arg_names(program):
    with open(program) as f:
        text = f.read()
    sig = re.search(r"func\s+@\w+\((.*?)\)\s*->", text, re.S).group(1)
    return re.findall(r"%(\w+)\s*:", sig)


def draw(spec):
    """The points of a shape file: (label, {symbol: size}, weight), drawn ones then listed ones."""
    rng = np.random.default_rng(spec.get("seed", 0))
    dims = spec.get("dims") or {}
    out = []
    for i in range(spec.get("draws", 0) if dims else 0):
        p = {}
        for sym, d in dims.items():
            if "values" in d:
                vals = list(d["values"])
                w = np.asarray(d.get("weights", [1] * len(vals)), dtype=np.float64)
                p[sym] = int(vals[rng.choice(len(vals), p=w / w.sum())])
            elif "range" in d:
                lo, hi = (int(v) for v in d["range"])
                dist = d.get("dist", "uniform")
                if dist == "uniform":
                    p[sym] = int(rng.integers(lo, hi + 1))
                elif dist == "log-uniform":
                    if lo < 1:
                        raise ValueError(f"log-uniform range of {sym} must start at 1 or more")
                    v = math.floor(math.exp(rng.uniform(math.log(lo), math.log(hi + 1))))
                    p[sym] = min(max(int(v), lo), hi)
                else:
                    raise ValueError(f"unknown dist {dist!r} for {sym}")
            else:
                raise ValueError(f"dim {sym} has neither values nor range")
        out.append((f"draw {i}", p, 1))
    for j, q in enumerate(spec.get("points") or []):
        q = dict(q)
        w = q.pop("weight", 1)
        out.append((f"points[{j}] weight {w}", {k: int(v) for k, v in q.items()}, w))
    return out


def select_points(wl, spec, ranges, func):
    """The sizes to run, and notes on skipped points.

    Listed points (clamped if too big), small drawn ones, then `where` boundaries.
    """
    syms = list(ranges)
    own = spec.get("func") in (None, func)
    pts, notes = [], []
    for label, p, w in draw(spec):
        if sorted(p) != sorted(syms):
            raise ValueError(f"{wl['shapes']} {label} {p}: symbols differ from the function's {syms}")
        p = {s: p[s] for s in syms}
        broken = [f"{s} in [{ranges[s][0]}, {ranges[s][1]}]" for s in syms
                  if not ranges[s][0] <= p[s] <= ranges[s][1]]
        if broken and own:
            # The spec makes this an error of the shape file.
            raise ValueError(f"{wl['shapes']} {label} {fmt_dims(p)} breaks the fact '{broken[0]}' of @{func}")
        if broken:
            # A file written for another function: its points may exceed this one's ranges.
            notes.append(f"{label} {fmt_dims(p)} (breaks '{broken[0]}' of @{func})")
            continue
        pts.append((label, p, w))
    chosen = []
    seen = set()

    def take(label, p):
        key = tuple(p[s] for s in syms)
        if key in seen:
            return False
        seen.add(key)
        chosen.append((label, p))
        return True

    cap = wl["cap"]
    for label, p, _ in pts:
        if label.startswith("points"):
            q, note = (p, None) if wl["cost"](p) <= cap else wl["clamp"](p)
            take(f"{label}" + (f", {note}" if note else ""), q)
    want = DRAWN_PER_WORKLOAD.get(wl["name"], DRAWN_DEFAULT)
    drawn = [(label, p) for label, p, _ in pts if label.startswith("draw")]
    small = [(label, p) for label, p in drawn if wl["cost"](p) <= cap]
    n_drawn = 0
    for label, p in small:
        if n_drawn >= want:
            break
        n_drawn += take(label, p)
    for label, p in drawn:  # too few small draws: clamp big ones
        if n_drawn >= want:
            break
        if wl["cost"](p) > cap:
            q, note = wl["clamp"](p)
            n_drawn += take(f"{label}, {note}", q)

    # `where` boundaries: every symbol at its low end; each symbol at its low end with
    # the others as in the first drawn point; each symbol at its high end with the
    # others at their low ends, when cheap; low ends of the shape file's ranges.
    lows = {s: ranges[s][0] for s in syms}
    take("where: all at low end", dict(lows))
    mid = small[0][1] if small else lows
    for s in syms:
        p = dict(mid)
        p[s] = ranges[s][0]
        take(f"where: {s} at low end", p)
    for s in syms:
        p = dict(lows)
        p[s] = ranges[s][1]
        limit = cap if wl["name"] == "bert_layer" else BOUNDARY_ELEMENTS_CAP
        if wl["cost"](p) <= limit:
            take(f"where: {s} at high end", p)
    for s, d in (spec.get("dims") or {}).items():
        if "range" in d:
            p = dict(mid)
            p[s] = int(d["range"][0])
            take(f"{wl['shapes']}: {s} at range low end", p)
    return chosen, notes


# ---------------------------------------------------------------- running


def run_dscc(dscc, program, inputs, work, tag):
    d = os.path.join(work, tag)
    os.makedirs(d, exist_ok=True)
    cmd = [dscc, "run", program]
    for n, a in inputs.items():
        p = os.path.join(d, f"{n}.npy")
        np.save(p, a)
        cmd += ["-i", f"{n}={p}"]
    out = os.path.join(d, "out")
    cmd += ["-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return r, os.path.join(out, "out0.npy")


def compare(got, ref):
    """(max abs error, None) or (max abs error, why it fails)."""
    if got.dtype != np.float32:
        return None, f"dtype {got.dtype}, expected float32"
    if got.shape != ref.shape:
        return None, f"shape {got.shape}, expected {ref.shape}"
    g = got.astype(np.float64)
    if not np.all(np.isfinite(g)):
        return None, f"{int(np.sum(~np.isfinite(g)))} non-finite values"
    err = np.abs(g - ref)
    mx = float(err.max()) if err.size else 0.0
    bad = err > ATOL + RTOL * np.abs(ref)
    if np.any(bad):
        i = np.unravel_index(int(np.argmax(err / (ATOL + RTOL * np.abs(ref)))), err.shape)
        return mx, (f"{int(bad.sum())} of {err.size} elements out of tolerance; worst at {tuple(int(v) for v in i)}: "
                    f"got {g[i]!r}, expected {ref[i]!r}")
    return mx, None


def fmt_dims(p):
    return " ".join(f"{k}={v}" for k, v in p.items())


def negative_cases(root):
    """(name, program, inputs, [regex the error must match, ...])."""
    wl = os.path.join(root, "bench", "workloads")
    rng = np.random.default_rng(99)
    ln = os.path.join(wl, "layer_norm.dsc")
    rms = os.path.join(wl, "rms_norm.dsc")
    return [
        ("layer_norm N=2 D=16385 (breaks 'D in [1, 16384]')", ln,
         {"x": normal(rng, (2, 16385)), "g": normal(rng, (16385,)), "b": normal(rng, (16385,))},
         [r"layer_norm\.dsc:\d+:\d+: error: ", r"D in \[1, 16384\]", r"D = 16385"]),
        ("layer_norm %x given as f64[4, 8]", ln,
         {"x": rng.normal(size=(4, 8)), "g": normal(rng, (8,)), "b": normal(rng, (8,))},
         [r"layer_norm\.dsc:\d+:\d+: error: ", r"%x", r"f32\[N, D\]", r"f64\[4, 8\]"]),
        ("rms_norm T=3 with %g of length 4095", rms,
         {"x": normal(rng, (3, 4096)), "g": normal(rng, (4095,))},
         [r"rms_norm\.dsc:\d+:\d+: error: ", r"%g", r"4095", r"4096"]),
        ("layer_norm %x f32[3, 5] with %g of length 4", ln,
         {"x": normal(rng, (3, 5)), "g": normal(rng, (4,)), "b": normal(rng, (5,))},
         [r"layer_norm\.dsc:\d+:\d+: error: ", r"%g", r"\b4\b", r"D = 5"]),
    ]


def main():
    ap = argparse.ArgumentParser(description="Checks the bench workloads run by `dscc run` against NumPy.")
    ap.add_argument("dscc", help="path to the dscc binary")
    ap.add_argument("-k", dest="only", help="run only cases whose line contains this")
    ap.add_argument("-v", dest="verbose", action="store_true", help="print the dscc command output of failures")
    opts = ap.parse_args()
    dscc = os.path.abspath(opts.dscc)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    wdir = os.path.join(root, "bench", "workloads")

    failures = []
    count = 0
    t0 = time.time()
    print(f"tolerance: |got - ref| <= {ATOL:g} + {RTOL:g} * |ref| (float64 reference, f32 outputs)")
    with tempfile.TemporaryDirectory(prefix="dscc-workloads-vs-numpy-") as work:
        for wi, wl in enumerate(WORKLOADS):
            program = os.path.join(wdir, wl["name"] + ".dsc")
            with open(os.path.join(wdir, "shapes", wl["shapes"])) as f:
                spec = yaml.safe_load(f)
            ranges = where_ranges(program)
            names = arg_names(program)
            func = function_name(program)
            chosen, notes = select_points(wl, spec, ranges, func)
            if notes and not opts.only:
                print(f"skip {wl['name']}: {len(notes)} of the points of {wl['shapes']} (written for "
                      f"@{spec.get('func')}) break @{func}'s facts, e.g. {notes[0]}")
            cases = [(label, p, None) for label, p in chosen]
            if wl["name"] == "softmax":
                cases.append(("batch row 0 fully masked", {"B": 2, "S": 16}, 0))
            for ci, (label, p, full_row) in enumerate(cases):
                line = f"{wl['name']} {fmt_dims(p)} [{label}]"
                if opts.only and opts.only not in line:
                    continue
                count += 1
                rng = np.random.default_rng(1000 * wi + ci)
                inputs = wl["inputs"](rng, p) if full_row is None else wl["inputs"](rng, p, full_row)
                assert sorted(inputs) == sorted(names), (wl["name"], sorted(inputs), names)
                if full_row is None:
                    ref = wl["ref"]({k: v.astype(np.float64) for k, v in inputs.items()})
                else:
                    ref = ref_softmax({k: v.astype(np.float64) for k, v in inputs.items()}, round_mask_add=True)
                r, out = run_dscc(dscc, program, inputs, work, f"{wl['name']}-{ci}")
                why, mx = None, None
                if r.returncode != 0:
                    why = f"dscc exited {r.returncode}: {r.stderr.strip()}"
                elif not os.path.exists(out):
                    why = f"no {out}"
                else:
                    mx, why = compare(np.load(out), ref)
                err = f"max_abs_err={mx:.3e}" if mx is not None else "max_abs_err=n/a"
                print(f"{'FAIL' if why else 'ok  '} {line} {err}" + (f": {why}" if why else ""))
                if why:
                    failures.append(line)
                    if opts.verbose:
                        print(r.stdout + r.stderr)

        for ni, (name, program, inputs, patterns) in enumerate(negative_cases(root)):
            line = f"reject {name}"
            if opts.only and opts.only not in line:
                continue
            count += 1
            r, out = run_dscc(dscc, program, inputs, work, f"neg-{ni}")
            why = None
            if r.returncode != 1:
                why = f"exit status {r.returncode}, expected 1"
            elif os.path.exists(out):
                why = "wrote an output anyway"
            else:
                missing = [p for p in patterns if not re.search(p, r.stderr)]
                if missing:
                    why = f"message does not match {missing}"
            msg = r.stderr.strip().splitlines()[0] if r.stderr.strip() else "(no message)"
            print(f"{'FAIL' if why else 'ok  '} {line}: {msg}" + (f" -- {why}" if why else ""))
            if why:
                failures.append(line)
                if opts.verbose:
                    print(r.stdout + r.stderr)

    print(f"\n{count - len(failures)} of {count} cases passed in {time.time() - t0:.1f} s")
    if failures:
        print("failures:")
        for f in failures:
            print(f"  {f}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
