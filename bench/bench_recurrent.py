#!/usr/bin/env python3
# Issue #37's recurrent benchmark: a CRNN text recogniser and a 2-layer LSTM of 512 as PyTorch's default exporter
# writes them, compiled once by dscc for a range of sizes, against ONNX Runtime on the same file and PyTorch eager.
"""Usage: test/onnx/zoo/.venv/bin/python bench/bench_recurrent.py [--only crnn lstm] [--threads 2] [--repeats 5]
          [--out FILE]

Models (random weights from torch.manual_seed(37), batch norm statistics moved off 0 and 1, `.eval()`), exported
once by `torch.onnx.export(..., dynamo=True)` at its defaults with the named dims dynamic (NAME.onnx + .data in
bench/.models, reused when present):

- crnn: Shi et al.'s CRNN at its published widths (conv 3x3 stages of 64, 128, 256, 256, 512, 512 channels with
  batch norm and ReLU, max pools down to height 1, a 2x1 conv of 512), a 2-layer bidirectional LSTM of 256 and a
  linear head of 37 classes; grey text lines [batch, 1, 32, width], width in [16, 512]; points width 100 and 317.
- lstm: nn.LSTM(512, 512, num_layers=2) over [steps, batch, 512]; points 100 steps, batch 1 and 8.

Each point as bench/bench_vision.py times it: dscc (the `dscc` Python module, T threads, outputs bound in place),
ONNX Runtime (intra-op T, IOBinding) and PyTorch eager on the same random input; 0.3 s warm-up, median of R
interleaved samples, dscc's output checked against both (1e-3 + 1e-3·|x|, else ✗).
"""
import argparse
import datetime
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench_cpu import log, write_report  # noqa: E402
from bench_onnx_hf import first_error, ort_session, provenance, timed, uptime  # noqa: E402
from bench_vision import report, time_point  # noqa: E402


def crnn_model():
    import torch
    from torch import nn

    class CRNN(nn.Module):
        def __init__(self, classes=37, hidden=256):
            super().__init__()

            def stage(cin, cout):
                return [nn.Conv2d(cin, cout, 3, 1, 1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

            self.cnn = nn.Sequential(
                *stage(1, 64), nn.MaxPool2d(2, 2),
                *stage(64, 128), nn.MaxPool2d(2, 2),
                *stage(128, 256), *stage(256, 256), nn.MaxPool2d((2, 2), (2, 1), (0, 1)),
                *stage(256, 512), *stage(512, 512), nn.MaxPool2d((2, 2), (2, 1), (0, 1)),
                nn.Conv2d(512, 512, (2, 1)), nn.BatchNorm2d(512), nn.ReLU(inplace=True))
            self.rnn = nn.LSTM(512, hidden, num_layers=2, bidirectional=True)
            self.head = nn.Linear(2 * hidden, classes)

        def forward(self, input):
            x = self.cnn(input).squeeze(2).permute(2, 0, 1)  # [w', b, 512]
            x, _ = self.rnn(x)
            return self.head(x)

    return CRNN()


def lstm_model():
    from torch import nn

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(512, 512, num_layers=2)

        def forward(self, input):
            return self.rnn(input)[0]

    return Stack()


# name: (builder, example input shape, dynamic dims {axis: (name, min, max)}, --where facts, points as input shapes)
MODELS = {
    "crnn": (crnn_model, (2, 1, 32, 64), {0: ("batch", 1, 8), 3: ("width", 16, 512)},
             ["batch in [1, 8]", "width in [16, 512]"], [(1, 1, 32, 100), (1, 1, 32, 317), (8, 1, 32, 100)]),
    "lstm": (lstm_model, (20, 2, 512), {0: ("steps", 1, 512), 1: ("batch", 1, 16)},
             ["steps in [1, 512]", "batch in [1, 16]"], [(100, 1, 512), (100, 8, 512)]),
}


def build(name):
    import torch
    torch.manual_seed(37)
    m = MODELS[name][0]().eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.normal_(0, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
    return m


def export(name, path):
    import torch
    _, shape, dyn, _, _ = MODELS[name]
    m = build(name)
    dims = ({a: torch.export.Dim(n, min=lo, max=hi) for a, (n, lo, hi) in dyn.items()},)
    torch.onnx.export(m, (torch.randn(*shape),), str(path), dynamo=True, dynamic_shapes=dims, input_names=["x"],
                      output_names=["y"])


def bench_model(name, args, dscc, ctx):
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
    where = [a for w in MODELS[name][3] for a in ("--where", w)]
    log(f"{name}: dscc compile")
    wall, cpu, p = timed([args.dscc, "compile", path, "-o", so, *where, "--no-cache"])
    if p.returncode:
        res["error"] = "compile: " + first_error(p.stderr + p.stdout)
        return res
    res["compile"] = (wall, cpu)
    model = dscc.Model(str(so), context=ctx)
    sess = ort_session(path, args.threads)
    torch.set_num_threads(args.threads)
    for shape in MODELS[name][4]:
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        pt = "x".join(map(str, shape))
        res["points"].append(dict(pt=pt, **time_point(dscc, model, sess, model_t, x, args.repeats)))
        t = res["points"][-1]["t"]
        log(f"{name} {pt}: dscc {t['dscc'] * 1e3:.2f} ms, ORT {t['ort'] * 1e3:.2f} ms, torch {t['torch'] * 1e3:.2f} ms")
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", type=Path, default=BENCH / ".models")
    ap.add_argument("--work", type=Path, default=BENCH / ".cache" / "recurrent")
    ap.add_argument("--only", nargs="+", choices=list(MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dscc", type=Path, default=ROOT / "build" / "tools" / "dscc")
    ap.add_argument("--out", type=Path, default=BENCH / "results" / f"{datetime.date.today().isoformat()}-recurrent.md")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.dscc.resolve().parent.parent / "python"))
    import dscc
    import onnxruntime as ort
    import torch

    up0, prov = uptime(), provenance(args.dscc)
    ctx = dscc.Context(threads=args.threads)
    results = [bench_model(n, args, dscc, ctx) for n in (args.only or list(MODELS))]
    up1 = uptime()
    models = ("(bench/bench_recurrent.py): a CRNN at Shi et al.'s widths (input b×1×32×width, 2-layer bidirectional "
              "LSTM of 256) and nn.LSTM(512, 512, num_layers=2) (input steps×batch×512), random weights, exported by "
              "`torch.onnx.export(dynamo=True)` at its defaults; compiled once with "
              + "; ".join(", ".join(f"`--where '{w}'`" for w in MODELS[n][3]) + f" ({n})" for n in MODELS))
    text = report(args, "Recurrent models through dscc, ONNX Runtime and PyTorch eager", models, "input", results, ort,
                  torch, up0, up1, prov)
    write_report(text, args.out, "recurrent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
