#!/usr/bin/env python3
# Issue #37's vision benchmark: torchvision's ResNet-50 and MobileNetV3-large as PyTorch's default exporter writes
# them, compiled once by dscc for a range of image sizes, against ONNX Runtime on the same file and PyTorch eager.
"""Usage: test/onnx/zoo/.venv/bin/python bench/bench_vision.py [--models-dir bench/.models] [--only NAME ...]
          [--points 1x224x224 8x224x224 1x193x257 8x193x257] [--threads 2] [--repeats 5] [--out FILE]

Per model (torchvision.models.NAME(weights=None), random weights from torch.manual_seed(37), batch norm statistics
moved off 0 and 1, `.eval()`), exported once by `torch.onnx.export(..., dynamo=True)` at its defaults with batch,
height and width dynamic (NAME.onnx + NAME.onnx.data in --models-dir, reused when present):

1. `dscc compile NAME.onnx -o NAME.so --where 'batch in [1, 8]' --where 'height in [32, 512]' --where 'width in [32,
   512]' --no-cache`, timed once (wall and the child's CPU seconds).
2. At every point, dscc (the `dscc` Python module, a context of T threads, outputs bound in place), ONNX Runtime
   (CPUExecutionProvider, intra-op T, IOBinding; bench_onnx_hf.ort_session) and PyTorch eager
   (torch.set_num_threads(T), torch.inference_mode) run the same random image batch; 0.3 s of warm-up each, then
   bench_cpu.time_interleaved (median of R interleaved samples). dscc's output is checked against both peers'
   (within 1e-3 + 1e-3·|x|, else ✗).

The 1-minute load average before and after heads the report: above T, the machine was shared and every number
with it. The report goes to stdout and --out (default bench/results/DATE-vision.md).
"""
import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench_cpu import log, time_interleaved, write_report  # noqa: E402
from bench_onnx_hf import close, first_error, ort_bound, ort_session, provenance, timed, uptime  # noqa: E402

MODELS = ["resnet50", "mobilenet_v3_large"]
WHERE = ["batch in [1, 8]", "height in [32, 512]", "width in [32, 512]"]
POINTS = ["1x224x224", "8x224x224", "1x193x257", "8x193x257"]


def build(name: str):
    import torch
    import torchvision
    torch.manual_seed(37)
    m = getattr(torchvision.models, name)(weights=None).eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.normal_(0, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
    return m


def export(name: str, path: Path):
    import torch
    m = build(name)
    x = torch.randn(2, 3, 64, 64)
    dims = {"x": {0: torch.export.Dim("batch", max=8), 2: torch.export.Dim("height", min=32, max=512),
                  3: torch.export.Dim("width", min=32, max=512)}}
    torch.onnx.export(m, (x,), str(path), dynamo=True, dynamic_shapes=dims, input_names=["x"], output_names=["y"])
    return m


def time_point(dscc, model, sess, model_t, x, repeats: int) -> dict:
    """dscc (outputs bound in place), ORT (IOBinding) and PyTorch eager on input `x`: 0.3 s of warm-up each, then
    the median of `repeats` interleaved samples; dscc's output checked against both peers'. Shared with
    bench_recurrent.py."""
    import torch
    in_name, out_name = sess.get_inputs()[0].name, sess.get_outputs()[0].name
    first = np.asarray(model(**{in_name: x})[out_name])
    d_out, o_out = dscc.empty(first.shape, first.dtype), dscc.empty(first.shape, first.dtype)
    xt = torch.from_numpy(x)

    def eager():
        with torch.inference_mode():
            return model_t(xt)
    calls = {"dscc": model.bind(**{in_name: x}, out=[d_out]), "ort": ort_bound(sess, {in_name: x}, {out_name: o_out}),
             "torch": eager}
    for call in calls.values():
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.3:
            call()
    t = time_interleaved(calls, repeats)
    ok_o, e_o = close(np.asarray(d_out), np.asarray(o_out))
    ok_t, e_t = close(np.asarray(d_out), eager().numpy())
    return {"t": t, "ok": ok_o and ok_t, "e_ort": e_o, "e_torch": e_t}


def report(args, title: str, models: str, first_col: str, results, ort, torch, up0, up1, prov) -> str:
    """The markdown report of `results` (bench_model's): load, provenance, what was measured, one row per point.
    Shared with bench_recurrent.py."""
    load = lambda u: u.split("load average:")[-1].strip()
    busy = max(float(load(u).split(",")[0]) for u in (up0, up1)) > args.threads
    L = [f"# {title} — {datetime.date.today().isoformat()}", "",
         f"- **load** (`uptime`): before {load(up0)}; after {load(up1)}; {os.cpu_count()} CPUs. "
         + ("**The machine was busy: every time below was shared with other work.**" if busy else ""),
         f"- dscc: {prov}; ONNX Runtime {ort.__version__}; PyTorch {torch.__version__} (eager, the same weights)",
         "- models: " + models,
         f"- timing: {args.threads} threads each, outputs bound in place for dscc and ORT, median of {args.repeats} "
         "interleaved samples; ratios above 1: dscc faster", "",
         f"| model | compile s | {first_col} | dscc ms | ORT ms | PyTorch ms | ORT/dscc | PyTorch/dscc | max \\|dscc−ORT\\| | max \\|dscc−PyTorch\\| |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        comp = f"{r['compile'][0]:.1f} ({r['compile'][1]:.1f})" if "compile" in r else "✗"
        if "error" in r:
            L.append(f"| {r['name']} | {comp} | refused: `{r['error']}` | | | | | | | |")
        for i, p in enumerate(r["points"]):
            t, bad = p["t"], "" if p["ok"] else "✗ "
            L.append(f"| {r['name'] if i == 0 else ''} | {comp if i == 0 else ''} | {p['pt']} | {t['dscc'] * 1e3:.2f} | "
                     f"{t['ort'] * 1e3:.2f} | {t['torch'] * 1e3:.2f} | {bad}{t['ort'] / t['dscc']:.2f}× | "
                     f"{bad}{t['torch'] / t['dscc']:.2f}× | {p['e_ort']:.1e} | {p['e_torch']:.1e} |")
    return "\n".join(L) + "\n"


def bench_model(name: str, args, dscc, ctx) -> dict:
    import torch
    res = {"name": name, "points": []}
    path = args.models_dir / f"{name}.onnx"
    if not path.exists():
        log(f"{name}: export")
        args.models_dir.mkdir(parents=True, exist_ok=True)
        export(name, path)
    model_t = build(name)
    work = args.work / name
    work.mkdir(parents=True, exist_ok=True)
    so = work / f"{name}.so"
    where = [a for w in WHERE for a in ("--where", w)]
    log(f"{name}: dscc compile")
    wall, cpu, p = timed([args.dscc, "compile", path, "-o", so, *where, "--no-cache"])
    if p.returncode:
        res["error"] = "compile: " + first_error(p.stderr + p.stdout)
        return res
    res["compile"] = (wall, cpu)
    model = dscc.Model(str(so), context=ctx)
    sess = ort_session(path, args.threads)
    torch.set_num_threads(args.threads)
    for pt in args.points:
        b, h, w = (int(v) for v in pt.split("x"))
        x = np.random.default_rng(b * 1000 + h + w).standard_normal((b, 3, h, w)).astype(np.float32)
        res["points"].append(dict(pt=pt, **time_point(dscc, model, sess, model_t, x, args.repeats)))
        t = res["points"][-1]["t"]
        log(f"{name} {pt}: dscc {t['dscc'] * 1e3:.1f} ms, ORT {t['ort'] * 1e3:.1f} ms, torch {t['torch'] * 1e3:.1f} ms")
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", type=Path, default=BENCH / ".models")
    ap.add_argument("--work", type=Path, default=BENCH / ".cache" / "vision")
    ap.add_argument("--only", nargs="+", choices=MODELS)
    ap.add_argument("--points", nargs="+", default=POINTS, help="BATCHxHEIGHTxWIDTH, within the --where facts")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dscc", type=Path, default=ROOT / "build" / "tools" / "dscc")
    ap.add_argument("--out", type=Path, default=BENCH / "results" / f"{datetime.date.today().isoformat()}-vision.md")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.dscc.resolve().parent.parent / "python"))
    import dscc
    import onnxruntime as ort
    import torch

    up0, prov = uptime(), provenance(args.dscc)
    ctx = dscc.Context(threads=args.threads)
    results = [bench_model(n, args, dscc, ctx) for n in (args.only or MODELS)]
    up1 = uptime()
    models = ("torchvision, random weights, exported by `torch.onnx.export(dynamo=True)` at its defaults, batch, "
              "height and width dynamic; compiled once with " + " ".join(f"`--where '{w}'`" for w in WHERE))
    text = report(args, "Vision models through dscc, ONNX Runtime and PyTorch eager", models, "point (b×h×w)", results,
                  ort, torch, up0, up1, prov)
    write_report(text, args.out, "vision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
