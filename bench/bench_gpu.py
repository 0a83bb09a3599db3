#!/usr/bin/env python3
# GPU benchmark: dscc models compiled for cuda:sm_90 against PyTorch eager and torch.compile(dynamic=True), on device pointers.
"""GPU benchmark of the shared workloads (run by scripts/gpu-check.sh on the GPU machine).

The models are `gpu-pack/W.so` from scripts/gpu-prepare.sh (`dscc compile
--target=cuda:sm_90 -O3`); they link libdscc_runtime.so by soname, so the
runtime built on the GPU machine (`--runtime`) is loaded first, globally, and
every model then binds to it.

- Memory-bound workloads (all but bert_layer): the `--points` largest points
  of each distribution by bytes moved, under `--max-gb` of inputs + output. dscc's GB/s = (inputs read once + output
  written once) / time, and its % of a device-to-device copy (torch
  `dst.copy_(src)` of 2 GiB, bytes read + written) measured in the same run.
- bert_layer: `--bert-points` points of bert_serving.yaml, all B*S.
- f16: `--half` workloads (default bert_layer, layer_norm, softmax) again in
  half precision: `gpu-pack/W_f16.so` is the workload with every f32 made f16
  (scripts/gpu-prepare.sh), against the torch module in .half(); dscc's
  matmuls are tensor-op cuBLAS with fp32 accumulation, as torch's. Checked
  against f16 eager with tol 1e-2 (bert_layer 3e-2).
- Systems: dscc (ctypes `dscc_model_run` with torch tensors' data_ptr() as
  device pointers, outputs allocated by the caller), PyTorch eager, and
  torch.compile(dynamic=True) with Inductor; its graphs are counted by a
  backend wrapping compile_fx and by Dynamo's counters, and the first call at
  each new shape (compile included) is reported apart from the steady time.
- Timing: synchronous latency. dscc's call waits for its own stream before it
  returns; each torch call is followed by torch.cuda.synchronize(), so all
  three are measured alike. Per point and system: a warm-up call, then R
  samples (median), each looping calls for at least 20 ms.
- Correctness: at every point dscc's output, poisoned with NaN before the
  call, is compared with PyTorch eager's: |x - ref| <= tol + tol * |ref|,
  tol = 1e-3 (bert_layer 2e-3), NaN never passes. Matmuls are exact fp32 on
  both sides (dscc never uses TF32; torch's allow_tf32 is turned off).
- Inputs: seeded random non-zero data as bench/peers.py defines it. Tensors
  above 4M elements repeat a peers-filled block of a prime number of elements
  (so no two rows of a tensor see the same data), made on the device: NumPy
  would spend most of the time budget drawing gigabytes.

Without a usable GPU (no torch, no CUDA device) it prints why and exits 0.
Exit status 1 when a dscc output mismatches or a dscc call fails.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dscc_abi  # noqa: E402
import shapes  # noqa: E402
from peers import SHAPES, WORKLOAD_LIST, Workload  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOL = {"bert_layer": 2e-3, "bert_layer_f16": 3e-2}
HALF_TOL = 1e-2
DEFAULT_TOL = 1e-3
#: tensors above this many elements are filled by repeating a block of CHUNK elements (a prime)
EXACT_FILL_MAX = 1 << 22
CHUNK = 1_000_003
#: where tensors live; a test may set "cpu" to run the harness with a CPU model on host pointers
DEVICE = "cuda"


def log(*a):
    """Progress goes to stderr; stdout carries the report."""
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# dscc on device pointers


class GpuModel:
    """A GPU model (.so) bound to a runtime already loaded with RTLD_GLOBAL."""

    def __init__(self, so: Path):
        # dscc_abi.Model loads the model RTLD_LOCAL; its libdscc_runtime.so dependency is
        # satisfied by the runtime loaded globally before (same soname), not by the rpath.
        self.m = dscc_abi.Model(so, threads=1)
        if self.m.target.startswith("cpu") != (DEVICE == "cpu"):
            raise dscc_abi.DsccError(f"{so} is a {self.m.target} model; tensors are on {DEVICE}")

    def bind(self, inputs, outputs) -> Callable[[], None]:
        """A call on these torch CUDA tensors (outputs written in place), tensor structs built once."""
        keep: list = list(inputs) + list(outputs)

        torch = _torch()
        codes = {torch.float32: dscc_abi.DSCC_F32, torch.float16: 1, torch.bfloat16: 2}  # dscc_dtype

        def tensor(t):
            assert t.device.type == DEVICE and t.is_contiguous() and t.dtype in codes
            dims = (ctypes.c_int64 * max(1, t.dim()))(*t.shape)
            keep.append(dims)
            return dscc_abi.DsccTensor(ctypes.c_void_p(t.data_ptr()), ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64)),
                                       t.dim(), codes[t.dtype])

        ins = (dscc_abi.DsccTensor * max(1, len(inputs)))(*[tensor(t) for t in inputs])
        outs = (dscc_abi.DsccTensor * max(1, len(outputs)))(*[tensor(t) for t in outputs])
        args = (self.m.ctx, ins, len(inputs), outs, len(outputs))
        m = self.m

        def call():
            _ = keep  # the structs point into these
            st = m.run_fn(*args)
            if st != 0:
                raise dscc_abi.DsccError(f"{m.entry}: {m.lib.dscc_status_name(st).decode()}: "
                                         f"{m.lib.dscc_status_message(m.ctx).decode()}")

        return call


def _torch():
    import torch

    return torch


def gpu_unavailable_reason(runtime: Path) -> Optional[str]:
    """None when torch sees a CUDA device and dscc's runtime can use it; else why not."""
    try:
        import torch
    except ImportError as e:
        return f"PyTorch is not importable here ({e})"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device"
    return None


def load_runtime(runtime: Path):
    """Loads libdscc_runtime.so globally (before any model) and checks it can use the GPU."""
    lib = ctypes.CDLL(str(runtime.resolve()), mode=ctypes.RTLD_GLOBAL)
    lib.dscc_cuda_available.restype = ctypes.c_int
    lib.dscc_status_message.restype = ctypes.c_char_p
    lib.dscc_status_message.argtypes = [ctypes.c_void_p]
    lib.dscc_context_create.restype = ctypes.c_void_p
    lib.dscc_context_create.argtypes = [ctypes.c_int]
    lib.dscc_context_release.argtypes = [ctypes.c_void_p]
    lib.dscc_cuda_device_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    if not lib.dscc_cuda_available():
        raise dscc_abi.DsccError("dscc's runtime cannot use the GPU that torch sees: "
                                 + (lib.dscc_status_message(None) or b"?").decode())
    ctx = lib.dscc_context_create(1)
    buf = ctypes.create_string_buffer(256)
    name = buf.value.decode() if lib.dscc_cuda_device_name(ctx, buf, 256) == 0 else "?"
    lib.dscc_context_release(ctx)
    return lib, name


# ---------------------------------------------------------------------------------------------
# Inputs, points, timing


def device_inputs(wl: Workload, point, seed: int):
    """Inputs as float32 CUDA tensors (module docstring: exact peers fill, or a repeated prime block)."""
    torch = _torch()
    rng = np.random.default_rng(seed)
    out = []
    for name, dims in wl.args:
        shape = wl.shape_of(dims, point)
        n = math.prod(shape)
        fill = wl.fill.get(name)
        fill = fill if fill is not None else (lambda r, s: _normal(r, s))
        if n <= EXACT_FILL_MAX:
            a = np.ascontiguousarray(fill(rng, shape), dtype=np.float32)
            out.append(torch.from_numpy(a).to(DEVICE))
        else:
            block = torch.from_numpy(np.ascontiguousarray(fill(rng, (CHUNK,)), dtype=np.float32)).to(DEVICE)
            t = block.repeat(-(-n // CHUNK))[:n].reshape(shape).contiguous()
            out.append(t)
    return out


def _normal(rng, shape):
    x = rng.standard_normal(shape, dtype=np.float32)
    x[x == 0] = 0.5
    return x


def out_shape(wl: Workload, point) -> tuple:
    """The single output's shape (col_reduce reduces the rows; the others keep the first input's shape)."""
    return (point["D"],) if wl.name == "col_reduce" else wl.shape_of(wl.args[0][1], point)


def traffic_bytes(wl: Workload, point, elem: int = 4) -> int:
    """Bytes a perfect kernel moves: every input read once, the output written once."""
    return elem * (sum(math.prod(wl.shape_of(d, point)) for _, d in wl.args) + math.prod(out_shape(wl, point)))


def _points(wl: Workload):
    doc = shapes.load(SHAPES / wl.shapes_file)
    pts = [({s: p[y] for s, y in wl.symbol_map.items()}, w, l) for p, w, l in shapes.all_points(doc)]
    return [x for x in pts if not wl.admits(x[0])]


def pick_large(wl: Workload, take: int, max_gb: float):
    """The `take` largest points of the distribution (by bytes moved) that fit max_gb, smallest first.

    Large points are where a GPU kernel's bandwidth shows; the distributions are log-uniform, so
    most of their points are a few MB, inside the 60 MB L2, and measure launch latency instead.
    """
    pts = sorted({tuple(sorted(p.items())): p for p, _, _ in _points(wl)
                  if traffic_bytes(wl, p) <= max_gb * 1e9}.values(),
                 key=lambda p: (traffic_bytes(wl, p), sorted(p.items())))
    return [(p, 1.0) for p in pts[-take:]] if take > 0 else []


def pick_representative(wl: Workload, k: int, max_gb: float):
    """k weighted points representing the whole distribution (bench/shapes.py), smallest first."""
    chosen, _ = shapes.representative_points(_points(wl), k, lambda p: traffic_bytes(wl, p),
                                             lambda p: traffic_bytes(wl, p) <= max_gb * 1e9)
    return chosen


def time_sync(fn: Callable[[], object], sync: Callable[[], None], repeats: int, min_sample_s: float = 0.02) -> float:
    """Median seconds per synchronous call: fn() then sync(), looped to >= min_sample_s per sample."""
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t0, 1e-6)
    inner = max(1, min(2000, int(min_sample_s / one)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
            sync()
        samples.append((time.perf_counter() - t0) / inner)
    samples.sort()
    return samples[len(samples) // 2]


def copy_bandwidth() -> float:
    """GB/s (bytes read + written) of a 2 GiB device-to-device torch copy_, median of 10 event-timed copies."""
    torch = _torch()
    n = (2 << 30) // 4
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(10):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        dst.copy_(src)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n * 4 / sorted(times)[len(times) // 2] / 1e9


class Compiled:
    """torch.compile(dynamic=True) of a module, counting Inductor graphs two ways."""

    def __init__(self, module):
        torch = _torch()
        from torch._dynamo.utils import counters

        self.counters = counters
        for knob in ("recompile_limit", "cache_size_limit"):  # the default 8 would fall back to eager silently
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, 64)
        self.graphs = 0

        def counting_inductor(gm, example_inputs):
            from torch._inductor.compile_fx import compile_fx

            self.graphs += 1
            return compile_fx(gm, example_inputs)

        self.fn = torch.compile(module, dynamic=True, backend=counting_inductor)

    def dynamo_graphs(self) -> int:
        """Dynamo's own count of distinct graphs (a cross-check of self.graphs)."""
        return int(self.counters["stats"]["unique_graphs"])


def mismatches(got, ref, tol: float) -> int:
    """Elements failing |got - ref| <= tol + tol*|ref| (NaN fails)."""
    if got.shape != ref.shape:
        return max(1, got.numel())
    ok = (got - ref).abs() <= tol + tol * ref.abs()
    return int((~ok).sum().item())


# ---------------------------------------------------------------------------------------------
# One workload


def run_workload(wl: Workload, so: Path, points, args, deadline: float, half: bool = False) -> dict:
    """Times dscc, eager and torch.compile at each point (in f16 with `half`); returns rows and notes."""
    torch = _torch()
    name = wl.name + ("_f16" if half else "")
    dtype = torch.float16 if half else torch.float32
    res = {"name": name, "rows": [], "notes": [], "failed": False}
    try:
        model = GpuModel(so)
    except (OSError, dscc_abi.DsccError) as e:
        res["notes"].append(f"dscc model not loaded: {e}")
        res["failed"] = True
        return res
    module = wl.make_module().eval().to(DEVICE)
    if half:
        module = module.half()
    comp = Compiled(module)
    tol = TOL.get(name, HALF_TOL if half else DEFAULT_TOL)
    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    for i, (point, weight) in enumerate(points):
        if time.perf_counter() > deadline:
            res["notes"].append(f"{len(points) - i} point(s) skipped: time budget spent")
            break
        row = {"point": point, "weight": weight, "mb": traffic_bytes(wl, point, 2 if half else 4) / 1e6}
        res["rows"].append(row)
        try:
            ins = [t.to(dtype) for t in device_inputs(wl, point, seed=1000 + i)]
            out = torch.full(out_shape(wl, point), float("nan"), device=DEVICE, dtype=dtype)
            call = model.bind(ins, [out])
            sync()
            t0 = time.perf_counter()
            call()
            row["dscc_first"] = time.perf_counter() - t0
            with torch.inference_mode():
                ref = module(*ins)
            sync()
            row["bad"] = mismatches(out.float(), ref.float(), tol)
            row["max_abs"] = float((out.float() - ref.float()).abs().max().item()) if out.numel() else 0.0
            del ref
            row["dscc"] = time_sync(call, lambda: None, args.repeats)
        except dscc_abi.DsccError as e:
            row["error"] = str(e)
            res["failed"] = True
            log(f"  {wl.name} {point}: {e}")
            continue
        if row["bad"]:
            res["failed"] = True
        with torch.inference_mode():
            row["eager"] = time_sync(lambda: module(*ins), sync, args.repeats)
            if time.perf_counter() < deadline:
                g0, d0 = comp.graphs, comp.dynamo_graphs()
                t0 = time.perf_counter()
                comp.fn(*ins)
                sync()
                row["compile_first"] = time.perf_counter() - t0
                row["recompiles"] = comp.graphs - g0
                row["dynamo_graphs"] = comp.dynamo_graphs() - d0
                row["compile"] = time_sync(lambda: comp.fn(*ins), sync, args.repeats)
            else:
                res["notes"].append(f"torch.compile skipped at {fmt_point(point)}: time budget spent")
        del ins, out, call
        torch.cuda.empty_cache()
        log(f"  {name} {fmt_point(point)}: dscc {fmt_ms(row.get('dscc'))}, eager {fmt_ms(row.get('eager'))}, "
            f"compile {fmt_ms(row.get('compile'))}, mismatches {row['bad']}")
    model.m.close()
    return res


# ---------------------------------------------------------------------------------------------
# Report


def fmt_point(p) -> str:
    """B=8 S=384."""
    return " ".join(f"{k}={v}" for k, v in p.items())


def fmt_ms(t: Optional[float]) -> str:
    """Seconds as ms with 3 significant digits; n/a for None."""
    if t is None:
        return "n/a"
    ms = t * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def ratio(a: Optional[float], b: Optional[float]) -> str:
    """a / b as '×1.23' (above 1: dscc, the denominator, is faster)."""
    return "n/a" if a is None or b is None or b <= 0 else f"×{a / b:.2f}"


def report(results: List[dict], copy_gbs: float, device: str, args, elapsed: float) -> str:
    """The Markdown table (one row per point) and its notes."""
    torch = _torch()
    L = [f"## dscc on {device}: GPU benchmark",
         "",
         f"- device-to-device copy (torch copy_, 2 GiB, read + write): **{copy_gbs:.0f} GB/s**; "
         f"torch {torch.__version__}, CUDA {torch.version.cuda}; run took {elapsed:.0f} s",
         "- times: median synchronous latency per call in ms; ×: torch time / dscc time (above 1: dscc faster); "
         "GB/s: inputs read once + output written once; compile 1st: first call at a new shape in s "
         "(Inductor graphs compiled, Dynamo's unique_graphs)",
         "",
         "| workload | point | MB moved | dscc ms | GB/s | % copy | eager ms | compile ms | vs eager | vs compile "
         "| compile 1st s (graphs) | check vs eager |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in results:
        for row in r["rows"]:
            d = row.get("dscc")
            gbs = (row["mb"] * 1e6 / d / 1e9) if d else None
            if "error" in row:
                check = "✗ " + row["error"][:80]
            else:
                check = "ok" if row["bad"] == 0 else f"✗ {row['bad']} bad (max abs {row['max_abs']:.2g})"
            first = "n/a" if "compile_first" not in row else \
                f"{row['compile_first']:.1f} ({row['recompiles']}, {row['dynamo_graphs']})"
            L.append(f"| {r['name']} | {fmt_point(row['point'])} | {row['mb']:.0f} | {fmt_ms(d)} | "
                     f"{'n/a' if gbs is None else f'{gbs:.0f}'} | "
                     f"{'n/a' if gbs is None else f'{100 * gbs / copy_gbs:.0f}%'} | {fmt_ms(row.get('eager'))} | "
                     f"{fmt_ms(row.get('compile'))} | {ratio(row.get('eager'), d)} | "
                     f"{ratio(row.get('compile'), d)} | {first} | {check} |")
        for n in r["notes"]:
            L.append(f"| {r['name']} | — | | | | | | | | | | {n} |")
    L += ["", "bert_layer is compute-bound: its GB/s column only says how far it is from the copy, not a target."]
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    """Parses options, checks for a GPU, runs the workloads, prints the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", type=Path, default=ROOT / "build-gpu" / "runtime" / "libdscc_runtime.so",
                    help="libdscc_runtime.so built on this machine (default build-gpu/runtime/)")
    ap.add_argument("--pack", type=Path, default=ROOT / "gpu-pack", help="folder of W.so (scripts/gpu-prepare.sh)")
    ap.add_argument("--points", type=int, default=3, help="largest points per memory-bound workload (default 3)")
    ap.add_argument("--bert-points", type=int, default=6, help="bert_serving points for bert_layer (default 6)")
    ap.add_argument("--repeats", type=int, default=7, help="timed samples per system and point (default 7)")
    ap.add_argument("--max-gb", type=float, default=4.0, help="skip points moving more GB (default 4)")
    ap.add_argument("--budget-s", type=float, default=300.0,
                    help="stop starting new work after this many seconds (default 300)")
    ap.add_argument("--workloads", nargs="+", default=[w.name for w in WORKLOAD_LIST],
                    choices=[w.name for w in WORKLOAD_LIST], metavar="W")
    ap.add_argument("--half", nargs="*", default=["bert_layer", "layer_norm", "softmax"],
                    choices=[w.name for w in WORKLOAD_LIST], metavar="W",
                    help="workloads also run in f16 from gpu-pack/W_f16.so (default bert_layer layer_norm softmax)")
    ap.add_argument("--out", type=Path, help="also write the table here")
    ap.add_argument("--json", type=Path, help="also write the raw numbers here (scripts/gpu-check.sh reads them)")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    deadline = t_start + args.budget_s

    def emit(text: str, data: dict):
        print(text, end="")
        if args.out:
            args.out.write_text(text)
        if args.json:
            args.json.write_text(json.dumps(data, indent=1, default=str))

    why = gpu_unavailable_reason(args.runtime)
    if why:
        emit(f"bench_gpu: skipped: no GPU ({why}); nothing was timed.\n", {"skipped": why})
        return 0
    if not args.runtime.exists():
        emit(f"bench_gpu: error: {args.runtime} not found (build it: scripts/gpu-check.sh)\n",
             {"error": "no runtime"})
        return 1
    # Inductor's caches start empty in every run, so first-call times are cold compiles.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="dscc-bench-gpu-inductor-")
    torch = _torch()
    torch.backends.cuda.matmul.allow_tf32 = False  # exact fp32 matmuls, as dscc's cuBLAS calls
    torch.backends.cudnn.allow_tf32 = False
    torch.cuda.init()
    try:
        _, device = load_runtime(args.runtime)
    except (OSError, dscc_abi.DsccError) as e:
        emit(f"bench_gpu: error: {e}\n", {"error": str(e)})
        return 1
    copy_gbs = copy_bandwidth()
    log(f"bench_gpu: {device}; copy {copy_gbs:.0f} GB/s")
    # Memory-bound first (cheap), bert_layer last: its Inductor compile is the largest cost.
    order = sorted((w for w in WORKLOAD_LIST if w.name in args.workloads), key=lambda w: not w.memory_bound)
    results = []
    for wl in order:
        so = args.pack / f"{wl.name}.so"
        if not so.exists():
            results.append({"name": wl.name, "rows": [], "notes": [f"{so} missing"], "failed": True})
            continue
        if wl.memory_bound:
            pts = pick_large(wl, args.points, args.max_gb)
        else:
            pts = pick_representative(wl, args.bert_points, args.max_gb)
        log(f"bench_gpu: {wl.name}: {len(pts)} point(s)")
        try:
            results.append(run_workload(wl, so, pts, args, deadline))
        except Exception as e:  # one workload's crash (a torch error, a poisoned context) must not hide the rest
            log(f"bench_gpu: {wl.name}: {type(e).__name__}: {e}")
            results.append({"name": wl.name, "rows": [], "failed": True,
                            "notes": [f"crashed: {type(e).__name__}: {str(e)[:200]}"]})
    # f16 last: the same points, half the bytes, tensor-op matmuls.
    for wl in order:
        if wl.name not in args.half:
            continue
        so = args.pack / f"{wl.name}_f16.so"
        if not so.exists():
            results.append({"name": wl.name + "_f16", "rows": [], "notes": [f"{so} missing"], "failed": True})
            continue
        pts = pick_large(wl, args.points, args.max_gb) if wl.memory_bound else \
            pick_representative(wl, args.bert_points, args.max_gb)
        log(f"bench_gpu: {wl.name} f16: {len(pts)} point(s)")
        try:
            results.append(run_workload(wl, so, pts, args, deadline, half=True))
        except Exception as e:  # as above
            log(f"bench_gpu: {wl.name} f16: {type(e).__name__}: {e}")
            results.append({"name": wl.name + "_f16", "rows": [], "failed": True,
                            "notes": [f"crashed: {type(e).__name__}: {str(e)[:200]}"]})
    text = report(results, copy_gbs, device, args, time.perf_counter() - t_start)
    emit(text, {"device": device, "copy_gbs": copy_gbs, "results": results})
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
