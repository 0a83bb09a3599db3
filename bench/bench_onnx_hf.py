#!/usr/bin/env python3
# Issue #36's "Twelve-layer sizes": BERT-base and GPT-2 (124M) as transformers + PyTorch's exporters write them,
# imported and compiled by dscc and run against ONNX Runtime on the same .onnx file.
"""Usage: test/onnx/zoo/.venv/bin/python bench/bench_onnx_hf.py [--models-dir bench/.models] [--only NAME ...]
          [--points 1x8 1x128 4x128 8x512] [--threads 2] [--repeats 5] [--out FILE]

The exports come from bench/export_twelve_layer.py (make_zoo.py's families at full size, both exporters at their
defaults; NAME.onnx, NAME.onnx.data for the dynamo exporter's external weights, NAME.npz with PyTorch's outputs at
the zoo's sizes, exports.json). Unlike bench_onnx.py, whose models are test/onnx/models/transformers.py's own
modules exported once by this bench, these are the files users get from transformers today. Per export:

1. `dscc import NAME.onnx -o NAME.dsc --where FACTS` and `dscc compile NAME.onnx -o NAME.so --where FACTS
   --no-cache` (FACTS: batch in [1, 8], seq in [1, 512]), each timed once (wall seconds, and the child's CPU
   seconds: on a shared machine the wall time includes waiting for a core). A refusal puts its `error:` line in
   the table instead of timings.
2. Correctness first, at the zoo's largest stored size (batch 4, seq 32, padded rows): dscc's outputs against ONNX
   Runtime's (the max abs error of each output; within |x - ort| <= 1e-3 + 1e-3 |ort| or marked ✗), and both
   against PyTorch's from NAME.npz.
3. Timing at each (batch, seq) point, as bench_onnx.py and bench_cpu.py do: dscc through the `dscc` Python module
   (build/python) on a context of T threads, `Model.bind` with outputs from `dscc.empty` (no allocation timed);
   ONNX Runtime: CPUExecutionProvider, intra-op T threads, inter-op 1, sequential, all graph optimisations, inputs
   and outputs bound in place (IOBinding); 0.3 s (at least one call) of warm-up per system and point, then
   bench_cpu.time_interleaved (median of R samples, the systems in turns, each sample after a 50 ms pause and
   50 ms of its own calls; at least 3 samples when a point would take over 20 s). After timing, the two systems'
   last outputs at that point (the same inputs) are compared: max |dscc - ORT| per point.

The 1-minute load average (`uptime`) before and after the run heads the report: above T, the numbers were shared
with other work. The report goes to stdout and to --out (default bench/results/DATE-onnx-twelve-layer.md).
"""
import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench_cpu import log, time_interleaved, write_report  # noqa: E402

WHERE = ["batch in [1, 8]", "seq in [1, 512]"]
WHERE_TEXT = " ".join(f"--where '{w}'" for w in WHERE)
POINTS = ["1x8", "1x128", "4x128", "8x512"]
#: Vocabulary per family of export_twelve_layer.py (token ids are drawn in [0, vocab)).
VOCAB = {"bert_base": 30522, "gpt2_124m": 50257}
EXPORTS = ["bert_base_dynamo", "bert_base_torchscript", "gpt2_124m_dynamo", "gpt2_124m_torchscript"]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def provenance(dscc: Path) -> str:
    """The binary's build time, the checkout's commit and whether it had uncommitted changes, and the version."""
    git = lambda *a: subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout
    # Uncommitted changes that can reach the binary (not the bench, tests, docs).
    dirty = [ln[3:] for ln in git("status", "--porcelain", "--untracked-files=no").splitlines()
             if ln.strip() and not ln[3:].startswith(("bench/", "test/", "docs/", ".gitignore"))]
    version = subprocess.run([str(dscc), "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    built = datetime.datetime.fromtimestamp(dscc.stat().st_mtime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (f"built {built} in the checkout at commit {git('rev-parse', '--short', 'HEAD').strip()}"
            + (f" with uncommitted changes to {', '.join(dirty[:6])}{' ...' if len(dirty) > 6 else ''}" if dirty else
               ", no uncommitted changes to its sources")
            + (f" ({version[0]})" if version else ""))


def first_error(text: str) -> str:
    """The first `error:` line of a tool's output, else its last non-empty line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln
    return lines[-1] if lines else "(no output)"


def timed(cmd) -> tuple:
    """Runs cmd once: (wall seconds, the child's user + system CPU seconds, CompletedProcess)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p


def feeds(names, vocab: int, b: int, s: int, seed: int) -> dict:
    """As make_zoo.make_inputs: ids uniform in [0, vocab); a mask of 1s with, in rows after the first, some trailing
    0s (never a row of 0s); token types 0 then 1 from a random split. All int64."""
    rng = np.random.default_rng(seed)
    mask = np.ones((b, s), np.int64)
    for row in range(1, b):
        pad = int(rng.integers(0, s // 2 + 1))
        if pad:
            mask[row, s - pad:] = 0
    split = rng.integers(0, s + 1, (b, 1))
    all_ = {"input_ids": rng.integers(0, vocab, (b, s), dtype=np.int64), "attention_mask": mask,
            "token_type_ids": (np.arange(s)[None, :] >= split).astype(np.int64)}
    return {n: all_[n] for n in names}


def close(got: np.ndarray, ref: np.ndarray) -> tuple:
    """(within 1e-3 + 1e-3 |ref|, max abs error)."""
    if got.shape != ref.shape:
        return False, float("inf")
    err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    return bool((err <= 1e-3 + 1e-3 * np.abs(ref)).all()), float(err.max()) if err.size else 0.0


def mb(n: int) -> str:
    return f"{n / 2**20:.0f}"


def ort_session(path: Path, threads: int, spin: bool = True):
    """ONNX Runtime's CPU session as bench_cpu.py makes it; spin=False turns off its intra-op workers' spinning
    (`session.intra_op.allow_spinning` 0), which on an oversubscribed machine burns time slices others need."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    if not spin:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_bound(sess, f: dict, outs: dict):
    """A callable running the session with inputs and outputs bound in place (no allocation)."""
    io = sess.io_binding()
    for n, a in f.items():
        io.bind_cpu_input(n, a)
    for n, a in outs.items():
        io.bind_output(n, "cpu", 0, a.dtype, list(a.shape), a.ctypes.data)
    return lambda: sess.run_with_iobinding(io)


def bench_export(name: str, rec: dict, args, dscc, ctx) -> dict:
    """One export: import and compile times, the check, and the timed points; a dict for the report."""
    res = {"name": name, "family": rec.get("family", name.rsplit("_", 1)[0]),
           "exporter": rec.get("exporter", name.rsplit("_", 1)[1]), "points": [], "notes": []}
    if rec.get("export") == "failed":
        res["error"] = "export failed in PyTorch: " + rec.get("error", "?")
        return res
    onnx_path = args.models_dir / f"{name}.onnx"
    if not onnx_path.exists():
        res["error"] = f"{onnx_path} missing (run bench/export_twelve_layer.py)"
        return res
    res["onnx_bytes"] = sum(p.stat().st_size for p in (onnx_path, Path(str(onnx_path) + ".data")) if p.exists())
    if rec.get("direct_error"):
        res["notes"].append(f"TorchScript export through make_zoo's `Positional` wrapper ({rec['direct_error']})")
    work = args.work / name
    work.mkdir(parents=True, exist_ok=True)
    for stale in work.iterdir():
        stale.unlink()
    where = [a for w in WHERE for a in ("--where", w)]
    log(f"{name}: dscc import")
    wall, cpu, p = timed([args.dscc, "import", onnx_path, "-o", work / f"{name}.dsc", *where])
    res["import"] = (wall, cpu) if p.returncode == 0 else None
    if p.returncode:
        res["error"] = "import: " + first_error(p.stderr + p.stdout)
    log(f"{name}: import {wall:.1f} s (cpu {cpu:.1f} s), rc {p.returncode}")
    so = work / f"{name}.so"
    log(f"{name}: dscc compile")
    wall, cpu, p = timed([args.dscc, "compile", onnx_path, "-o", so, *where, "--no-cache"])
    log(f"{name}: compile {wall:.1f} s (cpu {cpu:.1f} s), rc {p.returncode}")
    if p.returncode:
        res.setdefault("error", "compile: " + first_error(p.stderr + p.stdout))
        return res
    res["compile"] = (wall, cpu)
    res["so_bytes"] = so.stat().st_size
    model = dscc.Model(str(so), context=ctx)
    sess = ort_session(onnx_path, args.threads)
    sess_nospin = ort_session(onnx_path, args.threads, spin=False)
    in_names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]

    # The check, at the zoo's largest stored size, on the inputs PyTorch's outputs in NAME.npz were made from.
    npz = np.load(args.models_dir / f"{name}.npz")
    meta = json.loads(str(npz["meta"]))
    k = len(meta["sizes"]) - 1
    size = meta["sizes"][k]
    f = {n: npz[f"in.{n}.{k}"] for n in in_names}
    d_out = model(**f)
    o_out = dict(zip(out_names, sess.run(out_names, f)))
    ok, errs = True, []
    for n in out_names:
        t = npz[f"out.{n}.{k}"]
        good, e_do = close(np.asarray(d_out[n]), o_out[n])
        _, e_dt = close(np.asarray(d_out[n]), t)
        _, e_ot = close(o_out[n], t)
        ok &= good
        errs.append(f"{n}: dscc−ORT {e_do:.1e}{'' if good else ' ✗'}, dscc−PyTorch {e_dt:.1e}, ORT−PyTorch {e_ot:.1e}")
    res["check"] = (ok, f"batch {size['batch']}, seq {size['seq']}: " + "; ".join(errs))
    log(f"{name}: check {'ok' if ok else 'FAILED'}: {res['check'][1]}")

    for pt in args.points:
        b, s = (int(x) for x in pt.split("x"))
        f = feeds(in_names, VOCAB[res["family"]], b, s, 100 * b + s)
        try:
            first = model(**f)
        except Exception as e:  # noqa: BLE001 - a refusal at a point is reported, not fatal
            res["points"].append({"b": b, "s": s, "error": f"dscc: {type(e).__name__}: {str(e).splitlines()[0][:200]}"})
            continue
        d_outs = {n: dscc.empty(np.asarray(first[n]).shape, np.asarray(first[n]).dtype) for n in out_names}
        o_outs = {n: dscc.empty(np.asarray(first[n]).shape, np.asarray(first[n]).dtype) for n in out_names}
        del first
        n_outs = {n: dscc.empty(a.shape, a.dtype) for n, a in o_outs.items()}  # IOBinding keeps raw pointers only
        calls = {"dscc": model.bind(**f, out=[d_outs[n] for n in out_names]), "ort": ort_bound(sess, f, o_outs),
                 "ort_nospin": ort_bound(sess_nospin, f, n_outs)}
        one = {}
        for sname, call in calls.items():
            # The first calls at a new shape pay one-time costs (kernel selection, first-touch pages, waking the
            # pool's threads), which a serving process pays once.
            t0 = time.perf_counter()
            call()
            one[sname] = time.perf_counter() - t0
            while time.perf_counter() - t0 < 0.3:
                call()
        if max(one.values()) < args.long_call_s:
            t = time_interleaved(calls, args.repeats)
        else:
            # Calls of seconds: time_interleaved would add a calibration call and a warm-up call per sample; here
            # each sample is one call, the systems in turns (round r starts at system r mod n), after a 50 ms pause.
            samples, names = {k: [] for k in calls}, list(calls)
            for r in range(min(args.repeats, 3)):
                for i in range(len(names)):
                    k = names[(r + i) % len(names)]
                    time.sleep(0.05)
                    t0 = time.perf_counter()
                    calls[k]()
                    samples[k].append(time.perf_counter() - t0)
            t = {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
        # dscc's last outputs against both ORT sessions' (the same inputs).
        diff = max(float(np.abs(d_outs[n].astype(np.float64) - o[n]).max()) for n in out_names for o in (o_outs, n_outs))
        res["points"].append({"b": b, "s": s, "t": t, "diff": diff})
        log(f"{name} B={b} S={s}: dscc {t['dscc'] * 1e3:.1f} ms, ORT {t['ort'] * 1e3:.1f} ms, "
            f"ORT without spinning {t['ort_nospin'] * 1e3:.1f} ms, "
            f"ORT/dscc {t['ort'] / t['dscc']:.2f}, max |dscc-ORT| {diff:.1e}")
        del calls, d_outs, o_outs, n_outs
    del model, sess, sess_nospin
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", type=Path, default=BENCH / ".models")
    ap.add_argument("--work", type=Path, default=BENCH / ".cache" / "hf", help="where the .dsc and .so go")
    ap.add_argument("--only", nargs="+", choices=EXPORTS)
    ap.add_argument("--points", nargs="+", default=POINTS, help="BATCHxSEQ, within the --where facts")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--long-call-s", type=float, default=1.0,
                    help="points whose first call takes longer are timed with up to 3 single-call samples")
    ap.add_argument("--dscc", type=Path, default=ROOT / "build" / "tools" / "dscc")
    ap.add_argument("--out", type=Path, default=BENCH / "results" / f"{datetime.date.today().isoformat()}-onnx-twelve-layer.md")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.dscc.resolve().parent.parent / "python"))
    import dscc
    import onnxruntime as ort

    up0 = uptime()
    prov0 = provenance(args.dscc)
    rec_path = args.models_dir / "exports.json"
    records = json.loads(rec_path.read_text()) if rec_path.exists() else {}
    ctx = dscc.Context(threads=args.threads)
    results = [bench_export(n, records.get(n, {}), args, dscc, ctx) for n in (args.only or EXPORTS)]
    up1 = uptime()
    prov1 = provenance(args.dscc)

    vers = records.get("versions", {})
    load = lambda u: u.split("load average:")[-1].strip()
    L = [f"# BERT-base and GPT-2 (124M) from transformers through dscc and ONNX Runtime — {datetime.date.today().isoformat()}",
         "",
         f"- **load** (1, 5, 15-minute averages, `uptime`): before {load(up0)}; after {load(up1)}; "
         f"{os.cpu_count()} CPUs. "
         + ("**The machine was busy: every time below, both systems', was shared with other work.**"
            if max(float(load(u).split(',')[0]) for u in (up0, up1)) > args.threads else ""),
         f"- dscc: `{args.dscc.relative_to(ROOT) if args.dscc.is_relative_to(ROOT) else args.dscc}` {prov0}"
         + ("" if prov1 == prov0 else f". **It was rebuilt during the run**: at the end {prov1}"),
         f"- ONNX Runtime {ort.__version__}; exports by PyTorch {vers.get('torch', '?')}, transformers "
         f"{vers.get('transformers', '?')}, onnxscript {vers.get('onnxscript', '?')} (`bench/export_twelve_layer.py`: "
         "BertModel(BertConfig()), GPT2LMHeadModel(GPT2Config(use_cache=False)), random weights, both exporters at "
         "their defaults, batch and seq dynamic)",
         f"- import: `dscc import NAME.onnx -o NAME.dsc {WHERE_TEXT}`; compile: "
         f"`dscc compile NAME.onnx -o NAME.so {WHERE_TEXT} --no-cache`; once each, wall "
         "seconds (CPU seconds of the child in parentheses). Goals (issue #36): import < 5 s, compile < 15 s",
         f"- timing: {args.threads} threads per system (dscc context threads; ORT intra-op {args.threads}, inter-op "
         f"1), inputs and outputs bound in place, median of up to {args.repeats} interleaved samples "
         f"(bench_cpu.time_interleaved; points whose first call took over {args.long_call_s:g} s: up to 3 single-call "
         "samples in turns); ratio = ORT time / dscc time (above 1: dscc faster). ORT: the default session "
         "(intra-op workers spin while waiting); ORT no-spin: the same with `session.intra_op.allow_spinning` = 0, "
         "which on an oversubscribed machine stops ORT's waiting workers from burning the time slices its working "
         "ones need; best ORT/dscc takes the faster of the two",
         "- size: the .onnx file (+ its .data) and dscc's .so, MiB",
         "",
         "| model | exporter | import s | compile s | size .onnx / .so | point | dscc ms | ORT ms | ORT/dscc "
         "| ORT no-spin ms | best ORT/dscc | max \\|dscc−ORT\\| |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for r in results:
        imp = f"{r['import'][0]:.1f} ({r['import'][1]:.1f})" if r.get("import") else "✗"
        comp = f"{r['compile'][0]:.1f} ({r['compile'][1]:.1f})" if r.get("compile") else "✗"
        size = (mb(r["onnx_bytes"]) if "onnx_bytes" in r else "—") + " / " + (mb(r["so_bytes"]) if "so_bytes" in r else "—")
        head = f"| {r['family']} | {r['exporter']} | {imp} | {comp} | {size} "
        if "error" in r:
            L.append(head + f"| — | refused: `{r['error']}` | | | | | | |")
        wrong = "check" in r and not r["check"][0]
        for i, p in enumerate(r["points"]):
            h = head if i == 0 and "error" not in r else "| | | | | "
            if "error" in p:
                L.append(h + f"| {p['b']}×{p['s']} | {p['error']} | | | | | |")
                continue
            t = p["t"]
            ratio = t["ort"] / t["dscc"]
            best = min(t["ort"], t["ort_nospin"]) / t["dscc"]
            bad = "✗ wrong: " if wrong else ""
            L.append(h + f"| {p['b']}×{p['s']} | {t['dscc'] * 1e3:.1f} | {t['ort'] * 1e3:.1f} | {bad}{ratio:.2f}× | "
                     f"{t['ort_nospin'] * 1e3:.1f} | {bad}{best:.2f}× | {p['diff']:.1e} |")
        if "check" in r:
            notes.append(f"- {r['name']}: check {'ok' if r['check'][0] else '✗ FAILED'} at {r['check'][1]}")
        notes += [f"- {r['name']}: {n}" for n in r["notes"]]
    L += ["", "Checks (max abs error per output; dscc−ORT within 1e-3 + 1e-3·|ORT| everywhere, or ✗):", "", *notes, ""]
    write_report("\n".join(L) + "\n", args.out, "onnx-twelve-layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
