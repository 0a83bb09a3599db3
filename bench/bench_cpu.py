#!/usr/bin/env python3
# CPU benchmark: dscc-compiled models against PyTorch eager, torch.compile(dynamic=True) and ONNX Runtime.
"""Times the shared workloads (bench/workloads/*.dsc) at weighted shape points.

Usage: bench/.venv/bin/python bench/bench_cpu.py [--threads T] [--workloads W ...]
       [--points K] [--repeats R] [--out FILE.md]

Every system is first checked against the dscc reference interpreter
(`dscc run`) at a small shape (|x - ref| <= 1e-3 + 1e-3 |ref|); a system that
disagrees is not reported. At every timed point the dscc output is also
compared with PyTorch eager's at the same tolerance. bench/README.md explains
the method and the columns.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dscc_abi  # noqa: E402
import shapes  # noqa: E402
from machine_limits import copy_bandwidth, last_level_cache_bytes, read_bandwidth, sgemm_rate  # noqa: E402
from peers import BENCH, SHAPES, WORKLOAD_LIST, WORKLOADS_BY_NAME, Workload  # noqa: E402

ROOT = BENCH.parent
SYSTEMS = ["dscc", "eager", "compile", "ort"]
TITLES = {"dscc": "dscc", "eager": "torch eager", "compile": "torch.compile", "ort": "ONNX Runtime"}
RTOL = ATOL = 1e-3
#: bert_layer points above this many tokens (B*S) are left out by default: one call costs ~15 MFLOP
#: per token, and the whole run must fit in ~10 minutes on two cores.
DEFAULT_BERT_MAX_TOKENS = 2048
#: memory-bound points whose inputs plus outputs exceed this are left out (time and RAM).
DEFAULT_MAX_MB = 512


def log(*a):
    """Progress goes to stderr so stdout carries only the report."""
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Timing


def _calibrate(fn: Callable[[], object], min_sample_s: float) -> tuple:
    """(seconds of one call, calls per sample so that a sample lasts min_sample_s)."""
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    return one, max(1, min(10000, int(min_sample_s / one)))


def _warm(fn: Callable[[], object], warm_s: float) -> None:
    """Calls fn for warm_s seconds (at least once), untimed: this VM's vCPUs ran a call 1.5-2x slower for a
    while after an idle gap or another system's calls, and a peer's spinning worker threads go idle meanwhile."""
    t0 = time.perf_counter()
    fn()
    while time.perf_counter() - t0 < warm_s:
        fn()


def _sample(fn: Callable[[], object], inner: int) -> float:
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def time_fn(fn: Callable[[], object], repeats: int, min_sample_s: float = 0.005, budget_s: float = 20.0,
            warm_s: float = 0.05) -> float:
    """Median seconds per call over `repeats` samples after a warm-up; each sample loops enough calls to last
    min_sample_s."""
    one, inner = _calibrate(fn, min_sample_s)
    # Large points: fewer samples rather than a run that blows the time budget (at least 3).
    repeats = max(3, min(repeats, int(budget_s / (one * inner)))) if one * inner * repeats > budget_s else repeats
    _warm(fn, warm_s)
    samples = sorted(_sample(fn, inner) for _ in range(repeats))
    return samples[len(samples) // 2]


def time_interleaved(fns: Dict[str, Callable[[], object]], repeats: int, min_sample_s: float = 0.005,
                     budget_s: float = 20.0, warm_s: float = 0.05) -> Dict[str, float]:
    """Median seconds per call of each system, sampled in turns (round r starts at system r mod n), each sample
    after warm_s of that system's own calls: the VM's speed changes every few tens of ms, and systems timed one
    after the other saw different speeds (a softmax call of one size took 0.20 ms and 0.45 ms in two runs)."""
    cal = {s: _calibrate(fn, min_sample_s) for s, fn in fns.items()}
    longest = max((one * inner for one, inner in cal.values()), default=0.0)
    if longest * repeats * len(fns) > budget_s:
        repeats = max(3, int(budget_s / (longest * len(fns))))
    samples: Dict[str, list] = {s: [] for s in fns}
    names = list(fns)
    for r in range(repeats):
        for i in range(len(names)):
            s = names[(r + i) % len(names)]
            # ONNX Runtime's workers spin after its calls: a dscc sample right after one ran up to 1.8x slower.
            time.sleep(0.05)
            _warm(fns[s], warm_s)
            samples[s].append(_sample(fns[s], cal[s][1]))
    return {s: sorted(v)[len(v) // 2] for s, v in samples.items()}


#: The machine's limits measured at the start of the run: copy GB/s, read-only GB/s, sgemm GFLOP/s, last-level cache bytes.
LIMITS: dict = {"sgemm": 1.0, "sgemm_how": "?", "llc": 32 << 20, "read": 0.0}


def write_report(text: str, out: Optional[Path], kind: str) -> Path:
    """Writes a report to `out` or bench/results/DATE-KIND.md, prints it, and returns the path."""
    out = out or BENCH / "results" / f"{datetime.date.today().isoformat()}-{kind}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    return out


def bert_flops(point) -> float:
    """Multiply-add flops of one bert_layer call: the six weight GEMMs and the two attention products."""
    t, s = point["B"] * point["S"], point["S"]
    return t * (2 * 768 * 768 * 4 + 2 * 768 * 3072 * 2 + 4 * s * 768)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------------------------
# Systems: each is built once per workload and gives run(point inputs) -> callable + output.


class TorchSystems:
    """Eager and torch.compile(dynamic=True) for one workload, with a compile counter."""

    def __init__(self, wl: Workload, threads: int):
        import torch

        self.torch = torch
        torch.set_num_threads(threads)
        self.module = wl.make_module().eval()
        self.compiles = 0
        dyn = torch._dynamo.config
        # The default limit (8) would silently fall back to eager after 8 recompiles.
        for knob in ("recompile_limit", "cache_size_limit"):
            if hasattr(dyn, knob):
                setattr(dyn, knob, 64)

        def counting_inductor(gm, example_inputs):
            # The same entry point as backend="inductor"; counting here is exact per graph compiled.
            from torch._inductor.compile_fx import compile_fx

            self.compiles += 1
            return compile_fx(gm, example_inputs)

        self.compiled = torch.compile(self.module, dynamic=True, backend=counting_inductor)

    def eager(self, args):
        """A callable running the eager module on these tensors."""
        torch, m = self.torch, self.module

        def run():
            with torch.inference_mode():
                return m(*args)

        return run

    def compiled_fn(self, args):
        """A callable running the compiled module on these tensors."""
        torch, m = self.torch, self.compiled

        def run():
            with torch.inference_mode():
                return m(*args)

        return run


class OrtSystem:
    """The workload exported with dynamic axes and run by ONNX Runtime into caller-allocated outputs."""

    def __init__(self, wl: Workload, module, sample_inputs, threads: int, cache: Path):
        import onnxruntime as ort
        import torch

        self.ort = ort
        path = cache / f"{wl.name}.onnx"
        names = [n for n, _ in wl.args]
        targs = tuple(torch.from_numpy(a) for a in sample_inputs)
        kw = dict(input_names=names, output_names=["out"], dynamic_axes=wl.dynamic_axes())
        # The exporters print progress on stdout, which carries the report: send it to stderr.
        with _stdout_to_stderr(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                # The TorchScript exporter takes dynamic_axes as they are; it cannot export a
                # layer_norm whose normalised shape is symbolic, where the dynamo exporter can.
                torch.onnx.export(module, targs, str(path), opset_version=17, dynamo=False, **kw)
                self.exporter = "TorchScript exporter, opset 17"
            except Exception as e:  # noqa: BLE001 - any exporter failure falls back to the other
                log(f"  ONNX TorchScript export failed ({type(e).__name__}); trying the dynamo exporter")
                torch.onnx.export(module, targs, str(path), opset_version=18, dynamo=True, **kw)
                self.exporter = "dynamo exporter, opset 18"
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        self.feed_names = names
        self.names = [i.name for i in self.sess.get_inputs()]
        self.out_name = self.sess.get_outputs()[0].name

    def bind(self, inputs: List[np.ndarray], out: np.ndarray):
        """A callable running the session with inputs and output bound in place (no allocation)."""
        io = self.sess.io_binding()
        by_name = dict(zip(self.feed_names, inputs))
        for n in self.names:
            io.bind_cpu_input(n, by_name[n])
        io.bind_output(self.out_name, "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
        sess = self.sess
        return lambda: sess.run_with_iobinding(io)


@contextlib.contextmanager
def _stdout_to_stderr():
    """Sends file descriptor 1 to stderr for a while: the exporters' C++ side prints there too."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


# ---------------------------------------------------------------------------------------------
# Numerical check against the reference interpreter


def interpret(dscc: Path, wl: Workload, inputs: List[np.ndarray], tmp: Path) -> np.ndarray:
    """Runs `dscc run` on the workload with these inputs; returns out0."""
    cmd = [str(dscc), "run", str(wl.dsc), "--func", wl.func, "-o", str(tmp / "out")]
    for (name, _), a in zip(wl.args, inputs):
        p = tmp / f"{name}.npy"
        np.save(p, a)
        cmd += ["-i", f"{name}={p}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"dscc run failed: {r.stderr.strip()}")
    return np.load(tmp / "out" / "out0.npy")


def max_err(out, ref) -> tuple:
    """(agrees within RTOL/ATOL, max |out - ref|)."""
    out = np.asarray(out, dtype=np.float32)
    if out.shape != ref.shape:
        return False, float("inf")
    err = float(np.max(np.abs(out - ref))) if ref.size else 0.0
    return bool(np.allclose(out, ref, rtol=RTOL, atol=ATOL)), err


# ---------------------------------------------------------------------------------------------
# One workload


def traffic_bytes(wl: Workload, point) -> int:
    """Bytes a perfect kernel moves: every input read once plus the output written once."""
    ins = sum(4 * math.prod(wl.shape_of(d, point)) for _, d in wl.args)
    return ins + 4 * math.prod(out_shape(wl, point))


def out_shape(wl: Workload, point) -> tuple:
    """The workload's output shape at a point (all outputs are shaped like the first input but col_reduce's)."""
    if wl.name == "col_reduce":
        return (point["D"],)
    return wl.shape_of(wl.args[0][1], point)


def pick_points(wl: Workload, k: int, max_mb: float, bert_max_tokens: int):
    """The K weighted points to time and a note on what was left out."""
    doc = shapes.load(SHAPES / wl.shapes_file)
    pts = [({s: p[y] for s, y in wl.symbol_map.items()}, w, l) for p, w, l in shapes.all_points(doc)]
    rejected = [p for p, _, _ in pts if wl.admits(p)]
    pts = [x for x in pts if not wl.admits(x[0])]

    def keep(p):
        if not wl.memory_bound:
            return p["B"] * p["S"] <= bert_max_tokens
        return traffic_bytes(wl, p) <= max_mb * (1 << 20)

    chosen, dropped = shapes.representative_points(pts, k, lambda p: traffic_bytes(wl, p), keep)
    notes = []
    if rejected:
        notes.append(f"{len(rejected)} points of {wl.shapes_file} break the program's `where` facts and are skipped")
    if dropped > 0:
        cap = f"B*S > {bert_max_tokens}" if not wl.memory_bound else f"inputs+output > {max_mb:g} MB"
        notes.append(f"{dropped:.0%} of the distribution's weight ({cap}) is not timed")
    return chosen, notes


class ModuleModel:
    """A compiled model called through the `dscc` Python module (python/, built next to the dscc binary) on a
    context of its own: `Model.bind` calls writing into the caller's arrays, as ONNX Runtime's outputs are bound
    in place (IOBinding)."""

    def __init__(self, so: Path, threads: int, dscc_bin: Path):
        sys.path.insert(0, str(Path(dscc_bin).resolve().parent.parent / "python"))
        import dscc

        self.ctx = dscc.Context(threads=threads)
        self.model = dscc.Model(str(so), context=self.ctx)
        self.entry = self.model.entry
        self.arg_names = [spec.name for spec in self.model.inputs]

    def bind(self, inputs, outputs):
        """A call on these arrays (outputs written in place), checked once (`Model.bind`)."""
        return self.model.bind(*inputs, out=list(outputs), context=self.ctx)

    def close(self):
        self.model = None


def run_workload(wl: Workload, args, model_so: Optional[Path], tmp: Path) -> dict:
    """Checks every system, then times them at the chosen points; returns rows and status for the report."""
    res = {"wl": wl, "rows": [], "status": {}, "notes": [], "compile_s": None}
    points, res["notes"] = pick_points(wl, args.points, args.max_mb, args.bert_max_tokens)
    systems: Dict[str, object] = {}

    # --- build the systems -------------------------------------------------------------------
    model = None
    if "dscc" in args.systems:
        if model_so is None:
            res["status"]["dscc"] = "n/a: `dscc compile` not available"
        else:
            try:
                model = ModuleModel(model_so, args.threads, args.dscc)
                got = model.arg_names
                if got != [n for n, _ in wl.args]:
                    # inputs are passed by position: a reordered signature would silently swap them
                    raise RuntimeError(f"the model's arguments {got} are not the workload's "
                                             f"{[n for n, _ in wl.args]}")
                systems["dscc"] = model
            except Exception as e:  # a broken artifact is reported, not fatal to the run
                res["status"]["dscc"] = f"n/a: {e}"
    torch_sys = None
    if any(s in args.systems for s in ("eager", "compile", "ort")):
        try:
            torch_sys = TorchSystems(wl, args.threads)
            for s in ("eager", "compile"):
                if s in args.systems:
                    systems[s] = torch_sys
        except ImportError:
            for s in ("eager", "compile", "ort"):
                res["status"][s] = "n/a: torch not installed"
    check_in = wl.inputs(wl.check_point, seed=1)
    if "ort" in args.systems and torch_sys is not None:
        try:
            ortsys = OrtSystem(wl, torch_sys.module, check_in, args.threads, args.cache)
            systems["ort"] = ortsys
            res["notes"].append(f"ONNX model: {ortsys.exporter}")
        except Exception as e:
            res["status"]["ort"] = f"n/a: {type(e).__name__}: {str(e).splitlines()[0][:120]}"

    # --- numerical check at a small point ------------------------------------------------------
    try:
        ref = interpret(args.dscc, wl, check_in, tmp)
    except (OSError, RuntimeError) as e:
        # Without a reference nothing can be reported for this workload; the others still run.
        for s in systems:
            res["status"][s] = f"not checked: the reference interpreter failed ({e})"
        if model is not None:
            model.close()
        return res
    for s, sysobj in list(systems.items()):
        try:
            out = dscc_abi.aligned_empty(ref.shape)
            fn = make_call(s, sysobj, check_in, out)
            t0 = time.perf_counter()
            r = fn()
            if s == "compile":
                # the first compile of the workload, at the check's shape; later shapes show recompiles
                res["compile_s"] = time.perf_counter() - t0
            got = out if s in ("dscc", "ort") else r.numpy()
            ok, err = max_err(got, ref)
        except Exception as e:
            ok, err = False, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        if not ok:
            res["status"][s] = f"disagrees with the interpreter at {fmt_point(wl.check_point)}: max err {err}"
            del systems[s]
        else:
            res["status"][s] = f"ok (max err {err:.1e} at {fmt_point(wl.check_point)})"
    if torch_sys is not None:
        res["check_compiles"] = torch_sys.compiles

    # --- timing ---------------------------------------------------------------------------------
    for point, weight in points:
        log(f"  {wl.name} {fmt_point(point)}")
        inputs = wl.inputs(point, seed=2)
        row = {"point": point, "weight": weight, "t": {}, "first": None, "recompiles": None, "bad": {}}
        outs: Dict[str, Optional[np.ndarray]] = {}
        fns: Dict[str, Callable[[], object]] = {}
        for s in SYSTEMS:
            if s not in systems:
                continue
            out = dscc_abi.aligned_empty(out_shape(wl, point))
            try:
                fn = make_call(s, systems[s], inputs, out)
                if s == "compile":
                    before = torch_sys.compiles
                    t0 = time.perf_counter()
                    r = fn()
                    row["first"] = time.perf_counter() - t0
                    row["recompiles"] = torch_sys.compiles - before
                r = fn()
                got = out if s in ("dscc", "ort") else r.numpy()
                # keep a copy: the next system may reuse the buffer, and torch may reuse its output
                outs[s] = got.copy() if got.size <= (1 << 26) else None
                fns[s] = fn
            except Exception as e:
                row["bad"][s] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        try:
            row["t"].update(time_interleaved(fns, args.repeats))
        except Exception as e:
            for s in fns:
                row["bad"][s] = f"{type(e).__name__} while timing: {str(e).splitlines()[0][:160]}"
        # Every system against eager at the timed size (eager matched the interpreter above).
        ref_out = outs.get("eager")
        for s, got in outs.items():
            if s == "eager" or got is None or ref_out is None:
                continue
            ok, err = max_err(got, ref_out)
            if not ok:
                row["bad"][s] = f"differs from eager: max err {err:.2e}"
                row["t"].pop(s, None)
        res["rows"].append(row)
    if model is not None:
        model.close()
    return res


def make_call(s: str, sysobj, inputs: List[np.ndarray], out: np.ndarray):
    """A zero-argument callable running system `s` on inputs (dscc and ORT write into `out`)."""
    if s == "dscc":
        return sysobj.bind(inputs, [out])
    if s == "ort":
        return sysobj.bind(inputs, out)
    import torch

    targs = [torch.from_numpy(a) for a in inputs]
    return sysobj.eager(targs) if s == "eager" else sysobj.compiled_fn(targs)


def fmt_point(p) -> str:
    """`B=1 S=128`."""
    return " ".join(f"{k}={v}" for k, v in p.items())


# ---------------------------------------------------------------------------------------------
# Report


def fmt_t(t: Optional[float]) -> str:
    """Seconds as ms or µs with three significant digits."""
    if t is None:
        return "—"
    if t >= 1:
        return f"{t:.3g} s"
    return f"{t * 1e3:.3g} ms" if t >= 1e-3 else f"{t * 1e6:.3g} µs"


def wgeomean(pairs) -> Optional[float]:
    """Weighted geometric mean of (value, weight) pairs; None when empty."""
    pairs = [(v, w) for v, w in pairs if v and v > 0 and w > 0]
    if not pairs:
        return None
    return math.exp(sum(w * math.log(v) for v, w in pairs) / sum(w for _, w in pairs))


def workload_table(res: dict, copy_gbs: float) -> List[str]:
    """The Markdown section of one workload."""
    wl: Workload = res["wl"]
    peers = [s for s in SYSTEMS[1:]]
    L = [f"### {wl.name} (`@{wl.func}`, shapes: {wl.shapes_file})", ""]
    for s in SYSTEMS:
        if s in res["status"]:
            L.append(f"- {TITLES[s]}: {res['status'][s]}")
    if res.get("compile_s") is not None:
        timed = sum(r["recompiles"] or 0 for r in res["rows"])
        L.append(f"- torch.compile: first call {res['compile_s']:.1f} s at the check's shape, compiling "
                 f"{res.get('check_compiles', 0)} graph(s); {timed} more graph(s) compiled at the timed points")
    L += [f"- {n}" for n in res["notes"]]
    L.append("")
    head = ["point", "weight"] + [TITLES[s] for s in SYSTEMS] + ["torch.compile first call (recompiles)"]
    head += [f"dscc vs {TITLES[p]}" for p in peers]
    if wl.memory_bound:
        head += ["dscc GB/s", "% of copy", "data > 4×LLC"]
    else:
        head += ["dscc GFLOP/s", "% of sgemm"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for row in res["rows"]:
        t = row["t"]
        cells = [fmt_point(row["point"]), f"{row['weight']:g}"]
        for s in SYSTEMS:
            cells.append(fmt_t(t.get(s)) if s in t else ("✗ " + row["bad"][s] if s in row["bad"] else "—"))
        cells.append("—" if row["first"] is None else f"{fmt_t(row['first'])} ({row['recompiles']})")
        for p in peers:
            cells.append(f"{t[p] / t['dscc']:.2f}×" if "dscc" in t and p in t else "—")
        big = traffic_bytes(wl, row["point"]) > 4 * LIMITS["llc"]
        if wl.memory_bound:
            if "dscc" in t:
                gbs = traffic_bytes(wl, row["point"]) / t["dscc"] / 1e9
                cells += [f"{gbs:.1f}", f"{100 * gbs / copy_gbs:.0f}%", "yes" if big else ""]
            else:
                cells += ["—", "—", ""]
        else:
            if "dscc" in t:
                gf = bert_flops(row["point"]) / t["dscc"] / 1e9
                cells += [f"{gf:.1f}", f"{100 * gf / LIMITS['sgemm']:.0f}%"]
            else:
                cells += ["—", "—"]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    return L


def summary_table(results: List[dict], copy_gbs: float) -> List[str]:
    """Weighted geomean speedups of dscc per workload, and its achieved bandwidth."""
    peers = SYSTEMS[1:]
    head = ["workload", "points"] + [f"dscc vs {TITLES[p]}" for p in peers]
    head += ["torch.compile recompiles", "dscc GB/s (wgeomean)", "% of copy", "% of copy, data > 4×LLC",
             "dscc GFLOP/s", "% of sgemm (B·S ≥ 512)"]
    L = ["## Summary (weighted geometric means over the timed points)", "",
         "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for res in results:
        wl, rows = res["wl"], res["rows"]
        cells = [wl.name, str(len(rows))]
        for p in peers:
            g = wgeomean([(r["t"][p] / r["t"]["dscc"], r["weight"]) for r in rows if "dscc" in r["t"] and p in r["t"]])
            cells.append("—" if g is None else f"{g:.2f}×")
        rc = [r["recompiles"] for r in rows if r["recompiles"] is not None]
        cells.append(str(sum(rc)) if rc else "—")
        gbs = lambda r: traffic_bytes(wl, r["point"]) / r["t"]["dscc"] / 1e9
        g = wgeomean([(gbs(r), r["weight"]) for r in rows if "dscc" in r["t"]]) if wl.memory_bound else None
        cells += ["—", "—"] if g is None else [f"{g:.1f}", f"{100 * g / copy_gbs:.0f}%"]
        big = [r for r in rows if "dscc" in r["t"] and traffic_bytes(wl, r["point"]) > 4 * LIMITS["llc"]]
        gb = wgeomean([(gbs(r), r["weight"]) for r in big]) if wl.memory_bound else None
        cells.append("—" if gb is None else f"{100 * gb / copy_gbs:.0f}% (worst {100 * min(gbs(r) for r in big) / copy_gbs:.0f}%)")
        if wl.memory_bound:
            cells += ["—", "—"]
        else:
            gf = lambda r: bert_flops(r["point"]) / r["t"]["dscc"] / 1e9
            g = wgeomean([(gf(r), r["weight"]) for r in rows if "dscc" in r["t"]])
            large = [r for r in rows if "dscc" in r["t"] and r["point"]["B"] * r["point"]["S"] >= 512]
            gl = wgeomean([(gf(r), r["weight"]) for r in large])
            cells += ["—" if g is None else f"{g:.1f}",
                      "—" if gl is None else f"{100 * gl / LIMITS['sgemm']:.0f}%"]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    return L


#: The #14 goals: the ratio dscc must reach against each peer (weighted geomean and at every point).
#: (The memory-bound workloads' goal is a share of the copy rate, in the summary table.)
GOALS = {"bert_layer": {"eager": 2.0, "compile": 1.6, "ort": 1.5}, "softmax": {"ort": 1.5}}


def bounds_table(results: List[dict], copy_gbs: float) -> List[str]:
    """How far each workload could go at the machine's limit: a peer's time over the limit's time.

    The limit's time of a point is the longer of its FLOPs at the measured sgemm rate and its
    traffic (inputs, weights included, read once; the output written once) at the measured
    copy rate for bert_layer, and the traffic alone for the memory-bound workloads (in-cache
    points can beat the copy rate, so there it is not a bound). A goal above the bound's ratio cannot be met on this
    machine without beating the limit itself."""
    peers = SYSTEMS[1:]
    head = ["workload", "limit"] + [f"vs {TITLES[p]} at the limit (worst point)" for p in peers] + \
        [f"goal vs {TITLES[p]}" for p in peers]
    L = ["## Bounds (what 100% of the measured limit would give)", "",
         "A peer's time over the time the point would take at 100% of the limit measured in this run "
         "(for bert_layer the longer of its FLOPs at the sgemm rate and its traffic, weights included, "
         "at the copy rate; the copy rate for the others' traffic). Where the goal is "
         "above this ratio, no dscc change short of beating the limit can meet it.", "",
         "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for res in results:
        wl, rows = res["wl"], res["rows"]
        if wl.memory_bound:
            lim = lambda r: traffic_bytes(wl, r["point"]) / (copy_gbs * 1e9)
            what = f"copy {copy_gbs:.1f} GB/s"
        else:
            # A roofline: its FLOPs at the sgemm rate, or reading its inputs (the weights,
            # 28 MB) once at the copy rate, whichever takes longer (the second at few tokens).
            lim = lambda r: max(bert_flops(r["point"]) / (LIMITS["sgemm"] * 1e9),
                                traffic_bytes(wl, r["point"]) / (copy_gbs * 1e9))
            what = f"sgemm {LIMITS['sgemm']:.0f} GFLOP/s or copy {copy_gbs:.1f} GB/s"
        cells = [wl.name, what]
        for p in peers:
            pairs = [(r["t"][p] / lim(r), r["weight"]) for r in rows if p in r["t"]]
            g = wgeomean(pairs)
            cells.append("—" if g is None else f"{g:.2f}× ({min(v for v, _ in pairs):.2f}×)")
        goals = GOALS.get(wl.name, {})
        cells += [f"{goals[p]:.1f}×" if p in goals else "—" for p in peers]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    return L


def header(args, copy_gbs: float, copy_how: str) -> List[str]:
    """Date, commit, CPU, threads, versions and BLAS of every system."""
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    cpu = platform.processor() or "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                cpu = line.split(":", 1)[1].strip()
    except FileNotFoundError:
        pass
    L = [f"# dscc CPU benchmark — {datetime.date.today().isoformat()}", "",
         f"- commit: {rev or '?'}{' (with uncommitted changes)' if dirty else ''}",
         f"- CPU: {cpu}, {os.cpu_count()} logical CPUs; threads per system: {args.threads}; "
         f"1-minute load average at the start {args.load_start:.1f}, at the end {os.getloadavg()[0]:.1f}"
         + (" — **the machine was busy: timings with more threads than idle cores are unreliable**"
            if max(args.load_start, os.getloadavg()[0]) > (os.cpu_count() or 1) else ""),
         f"- copy bandwidth (read + write bytes): {copy_gbs:.1f} GB/s ({copy_how}); last-level cache "
         f"{LIMITS['llc'] / 2**20:.0f} MiB",
         f"- read-only bandwidth (a sum in bench/limits.c, {args.threads} thread(s), 256 MB): {LIMITS['read']:.1f} GB/s "
         "(the limit of a kernel that only reads, as col_reduce)",
         f"- sgemm rate: {LIMITS['sgemm']:.1f} GFLOP/s ({LIMITS['sgemm_how']})",
         f"- points per workload: up to {args.points}; repeats: {args.repeats} (median; each sample loops "
         f"calls for at least 5 ms; the systems are sampled in turns, each sample after 50 ms of that "
         f"system's own untimed calls)",
         "- dscc: `dscc compile " + args.opt + "`, called through the `dscc` Python module (`Model.bind(..., out=)`) on a context of "
         f"{args.threads} thread(s) and caller-allocated outputs; BLAS: oneDNN's sgemm per tile when the runtime was "
         "built with libdnnl-dev, else OpenBLAS (docs/abi.md)",
         "- arrays: every system's inputs and the outputs dscc and ONNX Runtime write in place are 64-byte aligned "
         "(`dscc_abi.aligned_empty`), as PyTorch's and ONNX Runtime's own allocations are"]
    try:
        import torch

        cfg = torch.__config__.show()
        # The short lines name the libraries; the long "Build settings" line carries BLAS_INFO.
        libs = [ln.strip(" -") for ln in cfg.splitlines()
                if any(k in ln for k in ("Math Kernel", "MKL-DNN", "oneDNN", "OpenMP", "CPU capability"))
                and "Build settings" not in ln]
        blas = re.search(r"BLAS_INFO=([^,]+)", cfg)
        L.append(f"- PyTorch {torch.__version__}: BLAS_INFO={blas.group(1) if blas else '?'}; " + "; ".join(libs))
    except ImportError:
        L.append("- PyTorch: not installed")
    try:
        import onnxruntime as ort

        L.append(f"- ONNX Runtime {ort.__version__} (CPUExecutionProvider; GEMM: MLAS), intra-op threads "
                 f"{args.threads}, inter-op 1, outputs bound in place")
    except ImportError:
        L.append("- ONNX Runtime: not installed")
    L.append(f"- NumPy {np.__version__}, Python {platform.python_version()}")
    L.append("")
    return L


def main(argv=None) -> int:
    """Parses the options, runs the workloads and writes the report."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2, help="threads for every system (default 2)")
    ap.add_argument("--workloads", nargs="+", default=[w.name for w in WORKLOAD_LIST],
                    choices=[w.name for w in WORKLOAD_LIST], metavar="W", help="workloads to run (default all)")
    ap.add_argument("--points", type=int, default=8, help="shape points per workload (default 8)")
    ap.add_argument("--bert-points", type=int, default=5, help="shape points for bert_layer (default 5)")
    ap.add_argument("--repeats", type=int, default=7, help="timed samples per system and point (default 7)")
    ap.add_argument("--out", type=Path, help="report file (default bench/results/DATE-cpu.md)")
    ap.add_argument("--systems", nargs="+", default=SYSTEMS, choices=SYSTEMS, help="systems to time")
    ap.add_argument("--dscc", type=Path, default=ROOT / "build" / "tools" / "dscc", help="the dscc binary")
    ap.add_argument("--opt", default="-O3", choices=["-O0", "-O1", "-O2", "-O3"], help="dscc optimisation level")
    ap.add_argument("--dscc-so", action="append", default=[], metavar="W=PATH",
                    help="use this already compiled model for workload W instead of compiling")
    ap.add_argument("--max-mb", type=float, default=DEFAULT_MAX_MB,
                    help=f"skip memory-bound points moving more MB (default {DEFAULT_MAX_MB})")
    ap.add_argument("--bert-max-tokens", type=int, default=DEFAULT_BERT_MAX_TOKENS,
                    help=f"skip bert_layer points with B*S above this (default {DEFAULT_BERT_MAX_TOKENS})")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    # First calls of torch.compile are cold compiles: Inductor's on-disk caches start empty in
    # every run, so its compile times do not depend on what earlier runs left behind. Inductor
    # reads this when torch is imported, which has not happened yet.
    inductor_cache = tempfile.TemporaryDirectory(prefix="dscc-bench-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache.name
    args.cache = BENCH / ".cache"
    args.cache.mkdir(exist_ok=True)
    prebuilt = dict(s.split("=", 1) for s in args.dscc_so)

    args.load_start = os.getloadavg()[0]
    copy_gbs, copy_how = copy_bandwidth(args.threads, args.cache)
    log(f"copy bandwidth {copy_gbs:.1f} GB/s ({copy_how})")
    LIMITS["read"] = read_bandwidth(args.threads, args.cache)
    log(f"read-only bandwidth {LIMITS['read']:.1f} GB/s")
    LIMITS["sgemm"], LIMITS["sgemm_how"] = sgemm_rate(args.threads, args.cache)
    LIMITS["llc"] = last_level_cache_bytes()
    log(f"sgemm {LIMITS['sgemm']:.1f} GFLOP/s ({LIMITS['sgemm_how']}); LLC {LIMITS['llc'] >> 20} MiB")
    have_compiler = dscc_abi.compiler_available(args.dscc)
    results = []
    with tempfile.TemporaryDirectory(prefix="dscc-bench-") as tmpd:
        tmp = Path(tmpd)
        for name in args.workloads:
            wl = WORKLOADS_BY_NAME[name]
            log(f"{wl.name}:")
            so, compile_s = None, None
            if name in prebuilt:
                so = Path(prebuilt[name])
            elif have_compiler and "dscc" in args.systems:
                so = args.cache / f"{wl.name}{args.opt}.so"
                t0 = time.perf_counter()
                try:
                    dscc_abi.compile_model(args.dscc, wl.dsc, so, wl.func, args.opt)
                    compile_s = time.perf_counter() - t0
                    log(f"  dscc compile {compile_s:.2f} s")
                except dscc_abi.DsccError as e:
                    log(f"  {e}")
                    so = None
            k = args.bert_points if not wl.memory_bound else args.points
            res = run_workload(wl, argparse.Namespace(**{**vars(args), "points": k}), so, tmp)
            if compile_s is not None and "ok" in res["status"].get("dscc", ""):
                res["status"]["dscc"] += f"; `dscc compile` took {compile_s:.2f} s"
            if so is None and name not in prebuilt and have_compiler and "dscc" in args.systems:
                res["status"]["dscc"] = "n/a: `dscc compile` failed (see stderr)"
            results.append(res)

    report = header(args, copy_gbs, copy_how)
    report += summary_table(results, copy_gbs)
    report += bounds_table(results, copy_gbs)
    report += ["## Per workload", "",
               "Times are medians per call; `dscc vs X` = X's time / dscc's time (above 1: dscc is faster). "
               "GB/s counts each input read once and the output written once; above 100% of copy "
               "the data fit in cache.", ""]
    for res in results:
        report += workload_table(res, copy_gbs)
    out = write_report("\n".join(report), args.out, "cpu")
    log(f"wrote {out} ({time.perf_counter() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
