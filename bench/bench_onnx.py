#!/usr/bin/env python3
# Imported ONNX models end to end: dscc against ONNX Runtime on the same .onnx file, and torch eager on the source module.
"""Usage: bench/.venv/bin/python bench/bench_onnx.py [--threads 2] [--layers 2] [--out FILE]

Builds test/onnx/models/transformers.py's `Bert` (post-norm encoder, padding
mask) and `Gpt` (pre-norm decoder, causal mask, tied LM head, argmax) at
BERT-base width (d 768, 12 heads, ff 3072; vocab 8000; `--layers` layers),
exports each once with the venv's PyTorch (`torch.onnx.export(dynamo=True)`,
opset 18, dynamic batch in [1, 16] and seq in [1, 256]) to
bench/.cache/onnx/NAME.onnx, and then

- dscc: `dscc compile NAME.onnx -o NAME.so` (the same file), called through
  the `dscc` Python module (build/python) on a context of T threads;
- ONNX Runtime: an InferenceSession on the same file, CPUExecutionProvider,
  intra-op threads T, inter-op 1, all graph optimisations;
- torch eager: the source module, torch.set_num_threads(T), no_grad.

Correctness first: at B=2, S=7 every system's outputs are compared with
torch eager's (|x - ref| <= 1e-3 + 1e-3 |ref|; argmax must match exactly
where the two best logits differ by more than 1e-3); a system that fails is
not timed. Then each (B, S) point is timed like bench_cpu.py (median of R
samples, each looping calls for at least 5 ms, the systems sampled in turns,
each sample after a 50 ms pause and 50 ms of its own calls), after 0.3 s of
warm-up calls per system and point. The report (Markdown, ratios
= peer time / dscc time) goes to stdout and to bench/results/DATE-onnx-models.md.
"""
import argparse
import datetime
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "test" / "onnx" / "models"))
from bench_cpu import log, time_interleaved, write_report  # noqa: E402
from machine_limits import copy_bandwidth, sgemm_rate  # noqa: E402

POINTS = [(1, 8), (1, 32), (1, 128), (4, 32), (4, 128), (8, 64), (16, 128)]
VOCAB = 8000
MAX_SEQ = 256
D, FF = 768, 3072


def weight_bytes(name: str, layers: int) -> int:
    """Bytes of the model's matmul weights (read once per call)."""
    return layers * (4 * D * D + 2 * D * FF) * 4 + (VOCAB * D * 4 if name == "gpt" else D * D * 4)


def limit_seconds(name: str, layers: int, b: int, s: int, sgemm_gflops: float, copy_gbs: float) -> float:
    """The least time a call can take on this machine: its matmul FLOPs at the measured sgemm rate, or its
    weights read once plus its output written once at `copy_gbs` (the copy rate measured over the weights'
    size: from the cache where they fit in it, as they stay there from call to call), whichever is longer."""
    t = b * s
    per_layer = 2 * (4 * D * D + 2 * D * FF) * t + 2 * 2 * s * D * t  # weight GEMMs; Q K^T and P V
    flops = layers * per_layer
    weights = weight_bytes(name, layers)
    if name == "gpt":
        flops += 2 * D * VOCAB * t  # the tied LM head
        out_bytes = t * VOCAB * 4
    else:
        flops += 2 * D * D * b  # the pooler
        out_bytes = t * D * 4
    return max(flops / (sgemm_gflops * 1e9), (weights + out_bytes) / (copy_gbs * 1e9))


def build_model(name: str, layers: int):
    """The source module at BERT-base width, seeded, in eval mode."""
    import torch
    import transformers as tm

    tm.MAX_SEQ = MAX_SEQ  # the position tables' length, read when the modules are built
    torch.manual_seed(0)
    if name == "bert":
        m = tm.Bert(vocab=VOCAB, d=768, heads=12, ff=3072, layers=layers)
    else:
        m = tm.Gpt(vocab=VOCAB, d=768, heads=12, layers=layers)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.LayerNorm):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)
    return m.eval()


def feeds(name: str, b: int, s: int, seed: int) -> dict:
    """Token ids (and for BERT a padding mask with random row lengths >= 1) as int64 arrays."""
    rng = np.random.default_rng(seed)
    out = {"input_ids": rng.integers(0, VOCAB, (b, s), dtype=np.int64)}
    if name == "bert":
        lens = rng.integers(1, s + 1, b)
        out["attention_mask"] = (np.arange(s)[None, :] < lens[:, None]).astype(np.int64)
    return out


def export(name: str, m, path: Path):
    """torch.onnx.export(dynamo=True) with dynamic batch and seq, weights embedded."""
    import torch
    import transformers as tm

    batch = torch.export.Dim("batch", min=1, max=16)
    seq = torch.export.Dim("seq", min=1, max=MAX_SEQ)
    ex = feeds(name, 2, 5, 1)
    args = tuple(torch.from_numpy(ex[k]) for k in tm.INPUTS[name])
    shapes = {k: {0: batch, 1: seq} for k in tm.INPUTS[name]}
    prog = torch.onnx.export(m, args, dynamo=True, dynamic_shapes=shapes, input_names=tm.INPUTS[name],
                             output_names=tm.OUTPUTS[name], opset_version=18, external_data=False)
    prog.optimize()
    prog.save(str(path), external_data=False)


def close(got: np.ndarray, ref: np.ndarray, name: str) -> str:
    """"" when `got` matches `ref` within the tolerance, else why not."""
    if got.shape != ref.shape:
        return f"{name}: shape {got.shape}, expected {ref.shape}"
    if got.dtype.kind in "iu":
        return "" if np.array_equal(got, ref) else f"{name}: {np.sum(got != ref)} of {got.size} differ"
    err = np.abs(got.astype(np.float64) - ref)
    bad = err > 1e-3 + 1e-3 * np.abs(ref)
    return "" if not bad.any() else f"{name}: max error {err.max():.2e}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", nargs="+", default=["bert", "gpt"], choices=["bert", "gpt"])
    ap.add_argument("--dscc", type=Path, default=ROOT / "build" / "tools" / "dscc")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.dscc.resolve().parent.parent / "python"))
    import dscc
    import onnxruntime as ort
    import torch
    import transformers as tm

    torch.set_num_threads(args.threads)
    cache = BENCH / ".cache" / "onnx"
    cache.mkdir(parents=True, exist_ok=True)
    ctx = dscc.Context(threads=args.threads)
    load0 = os.getloadavg()[0]
    bench_cache = BENCH / ".cache"
    sgemm_gflops, sgemm_how = sgemm_rate(args.threads, bench_cache)
    # The copy over the same bytes as each model's weights (half read, half written), as bench_stream.py.
    # Never under the rate from memory (256 MB): a copy of a cache-sized array is noisy on a shared host.
    dram = copy_bandwidth(args.threads, bench_cache)
    copy = {}
    for n in args.models:
        c = copy_bandwidth(args.threads, bench_cache, max(1, -(-weight_bytes(n, args.layers) // (2 << 20))))
        copy[n] = c if c[0] >= dram[0] else dram
    log(f"limits: sgemm {sgemm_gflops:.1f} GFLOP/s, copy " + ", ".join(f"{n} {c[0]:.1f} GB/s" for n, c in copy.items()))
    sections, summary, bound_ort = [], [], {}
    for name in args.models:
        m = build_model(name, args.layers)
        onnx_path = cache / f"{name}-L{args.layers}.onnx"
        if not onnx_path.exists():
            log(f"{name}: exporting {onnx_path}")
            export(name, m, onnx_path)
        so = cache / f"{name}-L{args.layers}.so"
        t0 = time.perf_counter()
        subprocess.run([str(args.dscc), "compile", str(onnx_path), "-o", str(so)], check=True)
        compile_s = time.perf_counter() - t0
        model = dscc.Model(str(so), context=ctx)
        so_opts = ort.SessionOptions()
        so_opts.intra_op_num_threads = args.threads
        so_opts.inter_op_num_threads = 1
        so_opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(str(onnx_path), so_opts, providers=["CPUExecutionProvider"])
        outs = tm.OUTPUTS[name]

        def run_torch(f):
            with torch.no_grad():
                r = m(*[torch.from_numpy(f[k]) for k in tm.INPUTS[name]])
            return {k: v.numpy() for k, v in zip(outs, r)}

        systems = {"dscc": lambda f: model(**f), "ort": lambda f: dict(zip(outs, sess.run(outs, f))),
                   "eager": run_torch}
        check = feeds(name, 2, 7, 3)
        ref = run_torch(check)
        status = {}
        for sname, fn in systems.items():
            got = fn(check)
            errs = [close(np.asarray(got[k]), ref[k], k) for k in outs if k != "next_token"]
            if "next_token" in outs:
                top2 = np.sort(ref["logits"][:, -1, :], axis=-1)[:, -2:]
                sure = (top2[:, 1] - top2[:, 0]) > 1e-3
                if not np.array_equal(np.asarray(got["next_token"])[sure], ref["next_token"][sure]):
                    errs.append("next_token differs")
            errs = [e for e in errs if e]
            status[sname] = "ok" if not errs else "✗ " + "; ".join(errs)
            log(f"{name} {sname}: {status[sname]}")
        rows = []
        for b, s in POINTS:
            f = feeds(name, b, s, 100 * b + s)
            calls = {}
            for sname, fn in systems.items():
                if status[sname] != "ok":
                    continue
                # Warm-up: the first calls at a new shape pay one-time costs (oneDNN's and MLAS's
                # kernel selection, first-touch pages of buffers, the pool's threads waking up),
                # which a serving process pays once, not per request.
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < 0.3:
                    fn(f)
                calls[sname] = (lambda fn: lambda: fn(f))(fn)
            # Sampled in turns, as bench_cpu.py does: the VM's speed changes every few tens of ms.
            t = time_interleaved(calls, args.repeats)
            rows.append(((b, s), t))
            log(f"{name} B={b} S={s}: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in t.items()))
        L = [f"### {name} ({args.layers} layers, d 768, 12 heads, vocab {VOCAB}; `{onnx_path.name}`)", "",
             f"- dscc compile of the .onnx: {compile_s:.1f} s",
             *[f"- {k}: {v}" for k, v in status.items()], "",
             "| point | dscc | ONNX Runtime | torch eager | dscc vs ONNX Runtime | dscc vs torch eager "
             "| limit | dscc % of limit | ONNX Runtime vs the limit |",
             "|---|---|---|---|---|---|---|---|---|"]
        ratios = {"ort": [], "eager": []}
        for (b, s), t in rows:
            lim = limit_seconds(name, args.layers, b, s, sgemm_gflops, copy[name][0])
            lim_cells = [f"{lim * 1e3:.2f} ms", f"{100 * lim / t['dscc']:.0f}%" if "dscc" in t else "—",
                         f"{t['ort'] / lim:.2f}×" if "ort" in t else "—"]
            if "ort" in t:
                bound_ort.setdefault(name, []).append(t["ort"] / lim)
            cell = lambda k: f"{t[k] * 1e3:.2f} ms" if k in t else "—"
            rat = {}
            for p in ("ort", "eager"):
                if "dscc" in t and p in t:
                    rat[p] = t[p] / t["dscc"]
                    ratios[p].append(rat[p])
            L.append(f"| B={b} S={s} | {cell('dscc')} | {cell('ort')} | {cell('eager')} | "
                     + " | ".join(f"{rat[p]:.2f}×" if p in rat else "—" for p in ("ort", "eager")) + " | "
                     + " | ".join(lim_cells) + " |")
        L.append("")
        sections += L
        gm = lambda v: float(np.exp(np.mean(np.log(v)))) if v else None
        bo = bound_ort.get(name, [])
        summary.append(f"| {name} | {len(rows)} | " + " | ".join(
            "—" if not ratios[p] else f"{gm(ratios[p]):.2f}× (worst {min(ratios[p]):.2f}×)" for p in ("ort", "eager"))
            + " | " + ("—" if not bo else f"{gm(bo):.2f}× (worst {min(bo):.2f}×)") + " |")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    report = [f"# dscc on imported ONNX models — {datetime.date.today().isoformat()}", "",
              f"- commit: {rev}; threads per system: {args.threads}; 1-minute load average at the start "
              f"{load0:.1f}, at the end {os.getloadavg()[0]:.1f}",
              f"- ONNX Runtime {ort.__version__}, PyTorch {torch.__version__}, the same .onnx file for dscc and ONNX Runtime",
              f"- limits measured in this run: {sgemm_how}: {sgemm_gflops:.1f} GFLOP/s; "
              + "; ".join(f"{n}: {how} (the weights' {weight_bytes(n, args.layers) / 2**20:.0f} MB): {gbs:.1f} GB/s"
                          for n, (gbs, how) in copy.items()) + ". "
              "A point's limit is the longer of its matmul FLOPs at the sgemm rate (weight GEMMs, Q·Kᵀ and P·V, "
              "the LM head or pooler) and its weights read once plus its output written once at the copy rate; "
              "`ONNX Runtime vs the limit` is the best ratio against ONNX Runtime any compiler reaching the limit "
              "could show",
              "", "| model | points | dscc vs ONNX Runtime (geomean) | dscc vs torch eager (geomean) "
              "| ONNX Runtime vs the limit (geomean) |",
              "|---|---|---|---|---|", *summary, "", *sections]
    write_report("\n".join(report), args.out, "onnx-models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
