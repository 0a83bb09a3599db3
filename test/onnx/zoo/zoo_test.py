#!/usr/bin/env python3
# ctest onnx_zoo: dscc on the model zoo of issue #36 (real transformers as PyTorch's exporters write them today).
"""Usage: zoo_test.py DSCC [-j N] [--only NAME ...] [--keep DIR] [--write-expected]

Needs only Debian's python3 with numpy and python3-onnx (no PyPI). For every fixture NAME.onnx (+ NAME.onnx.data)
with PyTorch's inputs and outputs in NAME.npz (README.md; made by make_zoo.sh):

1. `dscc run NAME.onnx --where 'DIM in [1, MAX]' ... -i IN=FILE.npy ... -o DIR` (the interpreter) at every stored
   size, one range per dim_param of the graph inputs that is a plain name, MAX the largest size stored;
2. `dscc compile NAME.onnx -o NAME.so --where ...` once, with the same ranges;
3. `dscc run NAME.so -i ... -o DIR` at every stored size.

Each output is compared with PyTorch's: floats within 1e-4 + 1e-4 * |want| (NaN where NaN), integers and bools
exactly, equal shapes. A model is `ok` when every step succeeds and agrees, `wrong` on any mismatch, `crash` when
dscc dies of a signal, times out, or exits non-zero without an `error:` line, and `refused` when it exits non-zero
with one. The test fails on any wrong or crash, when a model that expected.txt says is `ok` is not, when one that it
says is `refused: REASON` is ok or refused for another reason (its first `error:` line lacks REASON), when a refusal
is not located (its first `error:` line must name the model file), and when expected.txt and the fixtures do not
list the same models. It prints a table family x exporter x result with each refusal's first error line, and the
exports PyTorch itself failed (exports.json). --write-expected writes expected.txt from what it observes.
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected.txt")
ATOL, RTOL = 1e-4, 1e-4
TIMEOUT = 600  # seconds for one dscc command
FAMILIES = ["bert", "distilbert", "roberta", "albert", "electra", "mpnet", "deberta_v2", "t5_encoder", "bart_encoder",
            "clip_text", "gpt2", "gpt2_decode", "llama", "qwen2", "qwen2_decode", "mistral", "gpt_neox", "opt",
            "phi", "bloom",
            # issue #37: vision, speech and OCR
            "resnet", "mobilenet_v3", "efficientnet", "vit", "vit_interpolate", "wav2vec2", "crnn", "gru_classifier"]  # table order
SEVERITY = {"ok": 0, "refused": 1, "wrong": 2, "crash": 3}


def fixtures():
    names = []
    for f in sorted(os.listdir(HERE)):
        if f.endswith(".npz") and os.path.exists(os.path.join(HERE, f[:-4] + ".onnx")):
            names.append(f[:-4])
    return names


def dim_params(path):
    """{dim_param: [(input, axis), ...]} of the graph inputs (weights in external data are not read)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    dims = {}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_param"):
                dims.setdefault(d.dim_param, []).append((vi.name, axis))
    return dims


def out_file(d, name):
    """Where `dscc run -o D` writes output NAME: `/` and a leading `.` become `_` (docs/onnx.md)."""
    name = name.replace("/", "_")
    if name.startswith("."):
        name = "_" + name[1:]
    return os.path.join(d, name + ".npy")


class Outcome:
    def __init__(self, result, detail=""):
        self.result, self.detail = result, detail


def dscc(cmd, name):
    """Runs one dscc command; returns None on success, else an Outcome (refused / crash)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return Outcome("crash", "timed out after %d s: %s" % (TIMEOUT, " ".join(cmd)))
    if p.returncode == 0:
        return None
    text = (p.stderr + p.stdout).decode(errors="replace")
    if p.returncode < 0 or p.returncode >= 128:
        return Outcome("crash", "signal/exit %d: %s" % (p.returncode, (text.strip().splitlines() or [""])[-1]))
    errors = [l for l in text.splitlines() if "error:" in l]
    if not errors:
        return Outcome("crash", "exit %d without an error line: %s" % (p.returncode, text.strip()[:300]))
    o = Outcome("refused", errors[0].strip())
    o.located = name in errors[0]
    return o


def compare(outdir, want):
    """None when every output agrees, else what differs."""
    for name, w in want.items():
        f = out_file(outdir, name)
        if not os.path.exists(f):
            return "output %s not written (%s)" % (name, f)
        g = np.load(f)
        if g.shape != w.shape:
            return "output %s: shape %s, PyTorch %s" % (name, g.shape, w.shape)
        if w.dtype.kind == "f":
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            if not np.array_equal(np.isnan(g64), np.isnan(w64)):
                return "output %s: NaN where PyTorch has none or the reverse" % name
            ok = np.isnan(w64) | (np.abs(g64 - w64) <= ATOL + RTOL * np.abs(w64))
            if not ok.all():
                i = np.unravel_index(np.argmin(ok), ok.shape)
                return "output %s: %d of %d elements differ, e.g. at %s: %r vs PyTorch %r" % (
                    name, int((~ok).sum()), ok.size, tuple(int(x) for x in i), float(g64[i]), float(w64[i]))
        else:
            if g.dtype.kind not in "iub" or not np.array_equal(g.astype(np.int64), w.astype(np.int64)):
                return "output %s: %s values differ from PyTorch's (%s)" % (name, g.dtype, w.dtype)
    return None


def check(dscc_bin, name, work):
    """Runs the three steps on one fixture; returns (result, stage, detail, located, timings)."""
    model = os.path.join(HERE, name + ".onnx")
    data = np.load(os.path.join(HERE, name + ".npz"))
    meta = json.loads(str(data["meta"]))
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    nsizes = len(meta["sizes"])
    feeds, wants = [], []
    for k in range(nsizes):
        args = []
        for inp in meta["inputs"]:
            f = os.path.join(d, "%s.%d.npy" % (inp, k))
            np.save(f, data["in.%s.%d" % (inp, k)])
            args += ["-i", "%s=%s" % (inp, f)]
        feeds.append(args)
        wants.append({o: data["out.%s.%d" % (o, k)] for o in meta["outputs"]})

    outcomes = []  # (stage, Outcome)

    def step(stage, cmd, want=None, outdir=None):
        o = dscc(cmd, name)
        if o is None and want is not None:
            diff = compare(outdir, want)
            if diff:
                o = Outcome("wrong", diff)
        if o is not None:
            outcomes.append((stage, o))
        return o is None

    def size(k):
        return ",".join("%s=%d" % kv for kv in meta["sizes"][k].items())

    # One range per plain-named dim of the graph inputs, up to the largest size stored: facts about the model's
    # valid inputs, given to the interpreter too (a model may need them to import, e.g. seq <= its positions). From
    # 1, or from the least size the model accepts where meta names one ("min": {input: {axis: size}}; a CRNN's width
    # >= 4, wav2vec 2.0's samples >= 20).
    where = []
    for dim, uses in sorted(dim_params(model).items()):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", dim):
            continue
        hi = max(data["in.%s.%d" % (inp, k)].shape[axis] for inp, axis in uses for k in range(nsizes))
        lo = max(int(meta.get("min", {}).get(inp, {}).get(str(axis), 1)) for inp, axis in uses)
        where += ["--where", "%s in [%d, %d]" % (dim, lo, hi)]

    for k in range(nsizes):
        out = os.path.join(d, "interp.%d" % k)
        step("run .onnx at " + size(k), [dscc_bin, "run", model] + where + feeds[k] + ["-o", out], wants[k], out)

    lib = os.path.join(d, name + ".so")
    if step("compile", [dscc_bin, "compile", model, "-o", lib, "-j", "1", "--no-cache"] + where):
        for k in range(nsizes):
            out = os.path.join(d, "so.%d" % k)
            step("run .so at " + size(k), [dscc_bin, "run", lib, "--threads", "1"] + feeds[k] + ["-o", out],
                 wants[k], out)

    if not outcomes:
        return {"name": name, "result": "ok", "stage": "", "detail": "", "located": True, "where": where}
    stage, worst = max(outcomes, key=lambda so: SEVERITY[so[1].result])
    if worst.result == "refused":
        stage, worst = outcomes[0]  # the first refusal
    located = all(getattr(o, "located", True) for _, o in outcomes if o.result == "refused")
    return {"name": name, "result": worst.result, "stage": stage, "detail": worst.detail, "located": located,
            "where": where, "failures": len(outcomes)}


def read_expected():
    """{NAME: (status, reason)}: `NAME: ok` -> ("ok", None); `NAME: refused: REASON` -> ("refused", REASON)."""
    exp = {}
    if os.path.exists(EXPECTED):
        with open(EXPECTED) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    k, v = (s.strip() for s in line.split(":", 1))
                    status, _, reason = (s.strip() for s in v.partition(":"))
                    exp[k] = (status, reason or None)
    return exp


def reason_matches(reason, detail):
    """An expected refusal's REASON against the first error line: its fragments, split at ` ... `, appear in it in
    that order (`(Conv, ... not supported`: dscc refuses a Conv node as not supported)."""
    at = 0
    for frag in reason.split(" ... "):
        at = detail.find(frag, at)
        if at < 0:
            return False
        at += len(frag)
    return True


def reason_of(detail):
    """The REASON that --write-expected records for a refusal: `(OP, ... WHY` when the first error line names a
    node's op type (the node's name and its input shapes left out), else the text after `error: `."""
    m = re.search(r"node '.*' \((\w+), opset \d+;.*\): (.*)$", detail)
    if m:
        return "(%s, ... %s" % (m.group(1), m.group(2).strip())
    return detail.split("error:", 1)[-1].strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dscc")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="fixtures checked at once (default 2)")
    ap.add_argument("--only", nargs="*", help="these fixtures only")
    ap.add_argument("--keep", help="work in this folder and keep it")
    ap.add_argument("--write-expected", action="store_true", help="write expected.txt from the results")
    a = ap.parse_args()

    try:
        import onnx  # noqa: F401
    except ImportError:
        print("onnx_zoo: skipped: python3-onnx is not installed")
        return 77
    names = fixtures()
    if a.only:
        names = [n for n in names if n in a.only]
    work = a.keep or tempfile.mkdtemp(prefix="dscc-zoo-")
    os.makedirs(work, exist_ok=True)
    results = {}
    try:
        with cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            futs = {pool.submit(check, a.dscc, n, work): n for n in names}
            for fut in cf.as_completed(futs):
                r = fut.result()
                results[r["name"]] = r
                print("%-26s %-8s %s%s" % (r["name"], r["result"], r["stage"] + ": " if r["stage"] else "",
                                           r["detail"]), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)

    exports = {}
    ep = os.path.join(HERE, "exports.json")
    if os.path.exists(ep):
        with open(ep) as f:
            exports = {k: v for k, v in json.load(f).items() if isinstance(v, dict) and "exporter" in v}

    # The table: family x exporter.
    print()
    print("| family | exporter | result | first error (refused) or what differs |")
    print("|---|---|---|---|")
    def order(n):
        fam, exporter = n.rsplit("_", 1)
        return (FAMILIES.index(fam) if fam in FAMILIES else len(FAMILIES), fam, exporter)

    failed_exports = {n for n, e in exports.items() if e.get("export") == "failed"}
    for n in sorted(set(results) | failed_exports, key=order):
        fam, exporter = n.rsplit("_", 1)
        if n in results:
            r = results[n]
            detail = r["detail"].replace(HERE + os.sep, "")
            print("| %s | %s | %s | %s |" % (fam, exporter, r["result"],
                                              (r["stage"] + ": " if r["stage"] else "") + detail))
        else:
            print("| %s | %s | export failed | %s |" % (fam, exporter, exports[n].get("error", "")))
    print()

    bad = sorted(n for n, r in results.items() if r["result"] not in ("ok", "refused"))
    if a.write_expected and bad:
        print("not writing %s: a wrong answer or a crash is never expected (%s)" % (EXPECTED, ", ".join(bad)))
    elif a.write_expected:
        old = read_expected()
        with open(EXPECTED, "w") as f:
            f.write("# ctest onnx_zoo (zoo_test.py): what dscc does with each fixture: ok, or refused: REASON (the\n"
                    "# first error line holds REASON's fragments, split at ' ... ', in order).\n")
            # With --only, the other fixtures' lines stay as they were (only the models checked are rewritten).
            kept = {} if not a.only else {n: v for n, v in old.items() if n not in results and n in fixtures()}
            for n in sorted(set(results) | set(kept)):
                if n in kept:
                    want, reason = kept[n]
                    f.write("%s: %s\n" % (n, want if want != "refused" else "refused: %s" % reason))
                    continue
                r = results[n]
                if r["result"] != "refused":
                    f.write("%s: %s\n" % (n, r["result"]))
                    continue
                reason = old.get(n, (None, None))[1]  # a reason written by hand is kept while it still holds
                if not reason or not reason_matches(reason, r["detail"]):
                    reason = reason_of(r["detail"])
                f.write("%s: refused: %s\n" % (n, reason))
        print("wrote", EXPECTED)

    exp = read_expected()
    failed = []
    for n, r in sorted(results.items()):
        want, reason = exp.get(n, (None, None))
        if r["result"] in ("wrong", "crash"):
            failed.append("%s: %s (%s: %s)" % (n, r["result"], r["stage"], r["detail"]))
        elif want is None and not a.only:
            failed.append("%s: not in expected.txt (%s)" % (n, r["result"]))
        elif want == "ok" and r["result"] != "ok":
            failed.append("%s: expected ok, got %s (%s: %s)" % (n, r["result"], r["stage"], r["detail"]))
        elif want == "refused" and r["result"] == "ok":
            # An expected refusal is a status like any other: when it changes, expected.txt must say so.
            failed.append("%s: expected refused (%s), ok now: update expected.txt (--write-expected)" % (n, reason))
        elif want == "refused" and reason and not reason_matches(reason, r["detail"]):
            failed.append("%s: expected refused (%s), refused for another reason now (%s: %s): update expected.txt"
                          " (--write-expected)" % (n, reason, r["stage"], r["detail"]))
        if r["result"] == "refused" and not r["located"]:
            failed.append("%s: a refusal does not name the model file: %s" % (n, r["detail"]))
    if not a.only:
        for n in sorted(set(exp) - set(results)):
            failed.append("%s: in expected.txt but there is no fixture" % n)
    for f in failed:
        print("FAIL", f)
    counts = {k: sum(1 for r in results.values() if r["result"] == k) for k in SEVERITY}
    print("onnx_zoo: %d models: %s" % (len(results), ", ".join("%d %s" % (v, k) for k, v in counts.items())))
    print("%d passed, %d failed" % (len(results) - len({f.split(":")[0] for f in failed}),
                                    len({f.split(":")[0] for f in failed})))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
