#!/usr/bin/python3
"""Differential test of compiled models: `dscc compile` each shared workload, then `dscc run W.so --check` against the reference interpreter at many sizes.

Usage: /usr/bin/python3 test/numeric/compiled_vs_interp.py PATH/TO/dscc [-k SUBSTRING] [-j JOBS] [-v]

For each program in bench/workloads/*.dsc (the seven shared workloads) the
script compiles it once (`dscc compile W.dsc -o TMP/W.so`), reads its symbols
and `where` ranges from the signature, and runs the compiled model at:

* boundaries of every symbol (the others held small): 1, the range ends,
  lo+1 and hi-1 when cheap, and v-1, v, v+1 around the vector widths 8 and
  16 and around 64 (7 8 9 15 16 17 63 64 65), where the range allows;
* 0: every range here starts at 1, so 0 must be rejected cleanly (exit 1,
  `dscc: error: FACT_VIOLATED: ...` naming the symbol); were 0 allowed, it
  would be checked like any size;
* 20 sizes drawn log-uniformly within the ranges (seeded, so the run is
  reproducible), capped in element count so the interpreter stays fast.

A case is checked by `dscc run W.so --random --seed K --dim ... --check`: the
interpreter runs on the same inputs and each output must satisfy
|compiled - interpreter| <= 1e-4 + 1e-4 * |interpreter| (the `--check`
defaults: f32 results of reassociated sums over up to 3072 terms stay well
inside, a wrong constant, a dropped term or a wrong tail does not), with equal
shapes, dtypes and NaN-ness. Sizes too large for the interpreter in this time
budget (BERT beyond 24 tokens, the 10^7..10^8-element range ends of gelu_bias,
rms_norm and softmax) are checked instead against a NumPy float64 reference
on inputs this script writes (uniform in [-1, 1), like `--random`), with
|compiled - numpy| <= 2e-4 + 2e-4 * |numpy|; for the largest ones only a
sample of rows (first, last, random) is compared, and every element must be
finite. The NumPy GELU uses the Abramowitz-Stegun 7.1.26 erf (abs error
< 1.5e-7, far below the tolerance).

Negative cases: a size breaking a `where` fact (S = 513 for bert_layer, and
0 for every symbol) must exit 1 with FACT_VIOLATED and a message naming the
symbol; an .npy of the wrong dtype (f64 for an f32 argument) or the wrong rank
must exit 1 with SHAPE_MISMATCH; inputs whose dims disagree must exit 1 with
an error. Thread counts 1, 2 and 3 rotate over the cases.

Prints one line per case and a summary; exits 1 on any failure.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOADS = os.path.join(ROOT, "bench", "workloads")

NUMPY_ATOL = 2e-4
NUMPY_RTOL = 2e-4
RANDOM_DRAWS = 20
ELEMENTS_CAP_RANDOM = 300_000      # largest tensor of a random draw checked by the interpreter
ELEMENTS_CAP_INTERP = 4_000_000    # above this a boundary case goes to NumPy (if there is a reference)
BERT_TOKENS_INTERP = 24            # B*S of bert_layer checked by the interpreter (~2-3 s each)
BERT_TOKENS_CAP = 2048             # B*S of the larger bert_layer cases (NumPy reference)
SAMPLE_ROWS = 32                   # rows compared at each of first/last/random in sampled references
VECTOR_EDGES = [7, 8, 9, 15, 16, 17, 63, 64, 65]


# ---------------------------------------------------------------- signatures


def parse_signature(path):
    """(func name, [(arg, dtype, [dim strings])], {symbol: (lo, hi)}) of the file's only function."""
    text = open(path).read()
    text = "\n".join(line.split("//")[0] for line in text.splitlines())
    m = re.search(r"func\s+@(\w+)\s*\((.*?)\)\s*->(.*?)\{", text, re.S)
    name, params, rest = m.group(1), m.group(2), m.group(3)
    args = [(a, dt, [d.strip() for d in dims.split(",") if d.strip()])
            for a, dt, dims in re.findall(r"%(\w+)\s*:\s*(\w+)\[([^\]]*)\]", params)]
    ranges = {s: (int(lo), int(hi)) for s, lo, hi in re.findall(r"(\w+)\s+in\s+\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]", rest)}
    return name, args, ranges


def shape_of(dims, env):
    return [int(d) if d.isdigit() else env[d] for d in dims]


def max_numel(args, env):
    return max(int(np.prod(shape_of(d, env), dtype=np.int64)) for _, _, d in args)


# ---------------------------------------------------------------- NumPy references (float64)


def erf(x):
    """Abramowitz-Stegun 7.1.26: |error| < 1.5e-7."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_bert_layer(a, rows):
    f = {k: v.astype(np.float64) for k, v in a.items()}
    x = f["x"]
    B, S, _ = x.shape

    def heads(t):
        return t.reshape(B, S, 12, 64).transpose(0, 2, 1, 3)

    q = heads(x @ f["wq"] + f["bq"])
    k = heads(x @ f["wk"] + f["bk"])
    v = heads(x @ f["wv"] + f["bv"])
    s = q @ k.transpose(0, 1, 3, 2) * 0.125 + f["mask"].reshape(B, 1, 1, S)
    c = (softmax(s) @ v).transpose(0, 2, 1, 3).reshape(B, S, 768)
    h = layer_norm(c @ f["wo"] + f["bo"] + x, f["ln1_g"], f["ln1_b"], 1e-12)
    y = gelu(h @ f["w1"] + f["b1"]) @ f["w2"] + f["b2"] + h
    return layer_norm(y, f["ln2_g"], f["ln2_b"], 1e-12), None


def ref_gelu_bias(a, rows):
    x = a["x"][rows].astype(np.float64)
    return gelu(x + a["b"]), rows


def ref_rms_norm(a, rows):
    x = a["x"][rows].astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * a["g"], rows


def ref_attn_softmax(a, rows):
    s = a["s"][:, :, rows, :].astype(np.float64)
    B, S = a["mask"].shape
    return softmax(s * 0.125 + a["mask"].astype(np.float64).reshape(B, 1, 1, S)), rows


# Which dimension of the output the sampled rows index (None: all rows compared).
REFERENCES = {
    "bert_layer": (ref_bert_layer, None),
    "gelu_bias": (ref_gelu_bias, 0),
    "rms_norm": (ref_rms_norm, 0),
    "attn_softmax": (ref_attn_softmax, 2),
}


# ---------------------------------------------------------------- cases


def plan_cases(wname, func, args, ranges, rng):
    """[(kind, dims, why)], kind in check | numpy | reject."""
    is_bert = func == "bert_layer"
    has_ref = func in REFERENCES
    base = {s: min(max(3, lo), hi) for s, (lo, hi) in ranges.items()}
    if is_bert:
        base = {"B": 1, "S": 3}

    def kind_of(env):
        if is_bert:
            t = env["B"] * env["S"]
            return "check" if t <= BERT_TOKENS_INTERP else "numpy"
        n = max_numel(args, env)
        return "numpy" if n > ELEMENTS_CAP_INTERP and has_ref else "check"

    def cheap(env):
        return env["B"] * env["S"] <= BERT_TOKENS_INTERP if is_bert else max_numel(args, env) <= ELEMENTS_CAP_INTERP

    cases, seen = [], set()

    def add(kind, env, why):
        key = (kind, tuple(sorted(env.items())))
        if key not in seen:
            seen.add(key)
            cases.append((kind, dict(env), why))

    for s, (lo, hi) in sorted(ranges.items()):
        if lo <= 0:
            add(kind_of({**base, s: 0}), {**base, s: 0}, f"{s}=0 (allowed)")
        else:
            add("reject", {**base, s: 0}, f"{s}=0 breaks {s} in [{lo}, {hi}]")
        add("reject", {**base, s: hi + 1}, f"{s}={hi + 1} breaks {s} in [{lo}, {hi}]")
        values = {(1, "1"), (lo, "lo"), (hi, "hi")}
        for v, tag in ((lo + 1, "lo+1"), (hi - 1, "hi-1")):
            if cheap({**base, s: v}):
                values.add((v, tag))
        values |= {(v, "vector edge") for v in VECTOR_EDGES}
        for v, tag in sorted(values):
            if lo <= v <= hi:
                # At the top of one range the others sit at their bottom, so the largest tensors stay bounded.
                env = {**({t: r[0] for t, r in ranges.items()} if tag in ("hi", "hi-1") else base), s: v}
                add(kind_of(env), env, f"{s}={v} ({tag})")

    drawn = 0
    for attempt in range(20000):
        if drawn == RANDOM_DRAWS:
            break
        env = {s: int(round(np.exp(rng.uniform(np.log(max(lo, 1)), np.log(hi + 1) - 1e-9)))) for s, (lo, hi) in ranges.items()}
        env = {s: min(max(v, ranges[s][0]), ranges[s][1]) for s, v in env.items()}
        if is_bert:
            # Most draws small enough for the interpreter, a few larger ones against NumPy.
            cap = BERT_TOKENS_INTERP if drawn < 12 else BERT_TOKENS_CAP
            if env["B"] * env["S"] > cap:
                continue
        elif max_numel(args, env) > ELEMENTS_CAP_RANDOM:
            continue
        add(kind_of(env), env, "random")
        drawn += 1
    return cases


# ---------------------------------------------------------------- running


def dim_flags(env):
    out = []
    for s, v in sorted(env.items()):
        out += ["--dim", f"{s}={v}"]
    return out


def run(cmd, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def write_inputs(args, env, seed, folder):
    rng = np.random.default_rng(seed)
    arrays, flags = {}, []
    for a, dt, dims in args:
        arr = rng.uniform(-1.0, 1.0, size=shape_of(dims, env)).astype(np.float32)
        path = os.path.join(folder, a + ".npy")
        np.save(path, arr)
        arrays[a] = arr
        flags += ["-i", f"{a}={path}"]
    return arrays, flags


def sample_rows(n, rng):
    idx = set(range(min(n, SAMPLE_ROWS))) | set(range(max(0, n - SAMPLE_ROWS), n))
    idx |= set(rng.integers(0, n, size=min(n, SAMPLE_ROWS)).tolist()) if n else set()
    return np.array(sorted(idx), dtype=np.int64)


def case_check(dscc, so, env, seed, threads):
    cmd = [dscc, "run", so, "--random", "--seed", str(seed), "--threads", str(threads), "--check"] + dim_flags(env)
    rc, out, err = run(cmd)
    errs = re.findall(r"max_abs_err=\S+ max_rel_err=\S+", out)
    if rc != 0:
        return False, f"exit {rc}: {(err.strip() or out.strip())[-400:]}"
    if "check: ok" not in out:
        return False, "no 'check: ok' in output"
    return True, " ".join(errs)


def case_numpy(dscc, so, func, args, env, seed, threads, tmp):
    folder = tempfile.mkdtemp(dir=tmp)
    arrays, flags = write_inputs(args, env, seed, folder)
    outdir = os.path.join(folder, "out")
    rc, out, err = run([dscc, "run", so, "--threads", str(threads), "-o", outdir] + flags)
    if rc != 0:
        return False, f"exit {rc}: {(err.strip() or out.strip())[-400:]}"
    got = np.load(os.path.join(outdir, "out0.npy"))
    ref_fn, row_axis = REFERENCES[func]
    if row_axis is not None:
        rows = sample_rows(got.shape[row_axis], np.random.default_rng(seed))
    else:
        rows = None
    want, rows = ref_fn(arrays, rows)
    for f in os.listdir(folder):
        if f.endswith(".npy"):
            os.remove(os.path.join(folder, f))
    if not np.all(np.isfinite(got)):
        return False, "non-finite values in the compiled output"
    g = got.astype(np.float64)
    if rows is not None:
        g = np.take(g, rows, axis=row_axis)
    if g.shape != want.shape:
        return False, f"shape {got.shape}, NumPy {want.shape}"
    d = np.abs(g - want)
    ok = bool(np.all(d <= NUMPY_ATOL + NUMPY_RTOL * np.abs(want)))
    rel = float(np.max(d / np.maximum(np.abs(want), 1e-30))) if d.size else 0.0
    note = f"vs numpy{' (%d sampled rows)' % len(rows) if rows is not None else ''}: max_abs_err={float(d.max()) if d.size else 0.0:.3g} max_rel_err={rel:.3g}"
    return ok, note


def case_reject(dscc, so, env, why, seed):
    rc, out, err = run([dscc, "run", so, "--random", "--seed", str(seed), "--threads", "1"] + dim_flags(env))
    sym = why.split("=")[0]
    if rc != 1:
        return False, f"expected exit 1, got {rc}: {err.strip()[-300:]}"
    if "dscc: error: FACT_VIOLATED" not in err or not re.search(r"\b%s\b" % re.escape(sym), err.split("FACT_VIOLATED", 1)[1]):
        return False, f"expected FACT_VIOLATED naming {sym}: {err.strip()[-300:]}"
    return True, err.strip().splitlines()[-1][:160]


def bad_input_cases(dscc, so, args, ranges, tmp):
    """Wrong dtype, wrong rank and disagreeing dims for the first argument: clean exit 1."""
    results = []
    env = {s: min(max(5, lo), hi) for s, (lo, hi) in ranges.items()}
    a, _, dims = args[0]
    shape = shape_of(dims, env)
    folder = tempfile.mkdtemp(dir=tmp)
    variants = [
        ("f64 .npy for an f32 argument", np.zeros(shape, np.float64) + 0.5, "SHAPE_MISMATCH"),
        ("rank %d .npy for a rank-%d argument" % (len(shape) + 1, len(shape)), np.ones(shape + [2], np.float32), "SHAPE_MISMATCH"),
    ]
    if len(args) > 1 and len(shape) >= 1:
        other = args[1]
        oshape = shape_of(other[2], env)
        if oshape:
            bad = list(oshape)
            bad[-1] += 1
            variants.append((f"%{other[0]} dims disagree with %{a}", None, None))
    for label, arr, status in variants:
        if arr is None:
            rng = np.random.default_rng(0)
            flags = []
            for k, (name, _, d) in enumerate(args):
                s = shape_of(d, env)
                if k == 1:
                    s[-1] += 1
                p = os.path.join(folder, f"dis_{name}.npy")
                np.save(p, rng.uniform(-1, 1, size=s).astype(np.float32))
                flags += ["-i", f"{name}={p}"]
        else:
            p = os.path.join(folder, "bad.npy")
            np.save(p, arr)
            flags = ["-i", f"{a}={p}", "--random"] + dim_flags(env)
        rc, out, err = run([dscc, "run", so, "--threads", "1"] + flags)
        ok = rc == 1 and "dscc: error:" in err and (status is None or status in err)
        results.append((ok, label, err.strip().splitlines()[-1][:160] if err.strip() else f"exit {rc}, no message"))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dscc")
    ap.add_argument("-k", default="", help="only workloads whose file name contains this")
    ap.add_argument("-j", type=int, default=2, help="cases run at once (default 2)")
    ap.add_argument("-v", action="store_true")
    opt = ap.parse_args()
    dscc = os.path.abspath(opt.dscc)
    start = time.time()
    failures, total = [], 0
    with tempfile.TemporaryDirectory(prefix="dscc-cvi-") as tmp:
        files = sorted(f for f in os.listdir(WORKLOADS) if f.endswith(".dsc") and opt.k in f)
        for fname in files:
            wname = fname[:-4]
            path = os.path.join(WORKLOADS, fname)
            func, args, ranges = parse_signature(path)
            so = os.path.join(tmp, wname + ".so")
            t0 = time.time()
            rc, out, err = run([dscc, "compile", path, "-o", so])
            total += 1
            if rc != 0:
                failures.append(f"{wname}: compile failed: {err.strip()[-400:]}")
                print(f"FAIL {wname}: compile: exit {rc}: {err.strip()[-400:]}", flush=True)
                continue
            print(f"== {wname} (@{func}, {', '.join(f'{s} in [{lo}, {hi}]' for s, (lo, hi) in sorted(ranges.items()))}): compiled in {time.time() - t0:.1f} s", flush=True)
            cases = plan_cases(wname, func, args, ranges, np.random.default_rng(sum(map(ord, wname))))
            jobs = []
            with concurrent.futures.ThreadPoolExecutor(max_workers=opt.j) as pool:
                for i, (kind, env, why) in enumerate(cases):
                    seed = 1000 + i
                    threads = 1 + i % 3
                    if kind == "check":
                        fut = pool.submit(case_check, dscc, so, env, seed, threads)
                    elif kind == "numpy":
                        fut = pool.submit(case_numpy, dscc, so, func, args, env, seed, threads, tmp)
                    else:
                        fut = pool.submit(case_reject, dscc, so, env, why, seed)
                    jobs.append((kind, env, why, threads, fut))
                for kind, env, why, threads, fut in jobs:
                    total += 1
                    try:
                        ok, note = fut.result()
                    except Exception as e:  # a crash of the script's own checks is a failure too
                        ok, note = False, f"{type(e).__name__}: {e}"
                    sizes = " ".join(f"{s}={v}" for s, v in sorted(env.items()))
                    line = f"{'ok  ' if ok else 'FAIL'} {wname} {sizes} [{why}; {kind}; threads={threads}] {note}"
                    print(line, flush=True)
                    if not ok:
                        failures.append(line)
            for ok, label, note in bad_input_cases(dscc, so, args, ranges, tmp):
                total += 1
                line = f"{'ok  ' if ok else 'FAIL'} {wname} bad input: {label}: {note}"
                print(line, flush=True)
                if not ok:
                    failures.append(line)
    print(f"\n{total - len(failures)} of {total} cases passed in {time.time() - start:.0f} s")
    if failures:
        print("failures:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
