#!/usr/bin/env python3
# Memory-bound workloads at data beyond 4x the last-level cache, against a STREAM copy of the same size.
"""Times each memory-bound workload at points whose inputs plus output exceed
4x the last-level cache (lscpu's L3), where no level of cache can hold them,
and the STREAM-style C copy (bench/limits.c) over the same number of bytes in
the same run. The report gives dscc's GB/s (each input read once, the output
written once: bench_cpu.py's count) and its share of the copy rate.

Usage: bench/.venv/bin/python bench/bench_stream.py [--threads T] [--out FILE.md]
       [--workloads W ...] [--repeats R] [--compare-so W=PATH ...]

A workload whose `where` ranges cannot reach 4x the LLC (rms_norm, gelu_bias)
is timed at its largest admitted point, marked as below the line. Before the
timing, every output is checked: the row-wise workloads on their first rows
against PyTorch eager over those rows, col_reduce against NumPy in float64;
|x - ref| <= 1e-3 + 1e-3 |ref|. `--compare-so W=PATH` also times another
build of W (a before/after column). Needs the memory for the inputs and one
output (about 5 GB at the default points).
"""
from __future__ import annotations

import argparse
import datetime
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cpu  # noqa: E402
import machine_limits  # noqa: E402
import dscc_abi  # noqa: E402
from peers import BENCH, WORKLOADS_BY_NAME  # noqa: E402

ROOT = BENCH.parent
#: Per workload: the points timed (the largest first), chosen so inputs + output exceed 4 x 480 MiB
#: where the program's `where` facts allow it.
POINTS = {
    "elementwise_chain": [{"N": 262144, "D": 1024}, {"N": 131072, "D": 4096}],
    "col_reduce": [{"N": 262144, "D": 2048}, {"N": 1000000, "D": 768}],
    "layer_norm": [{"N": 65536, "D": 4096}, {"N": 262144 // 8, "D": 16384}],
    "softmax": [{"B": 8, "S": 2048}, {"B": 32, "S": 1024}],
    "rms_norm": [{"T": 16384}],
    "gelu_bias": [{"T": 32768}],
}
#: How many leading rows (axis 0 of every input that has the symbol) the correctness check recomputes.
CHECK_ROWS = 64


def check(wl, point, inputs, out) -> str:
    """Compares dscc's output with an independent computation; returns 'ok (max err E)' or raises."""
    if wl.name == "col_reduce":
        ref = inputs[0].astype(np.float64).mean(axis=0)
        got = out.astype(np.float64)
    else:
        import torch

        lead = wl.args[0][1][0]  # the symbol of the first input's first dim
        sl = [x[:CHECK_ROWS] if dims and dims[0] == lead else x for x, (_, dims) in zip(inputs, wl.args)]
        with torch.no_grad():
            ref = wl.make_module()(*[torch.from_numpy(np.ascontiguousarray(x)) for x in sl]).numpy()
        got = out[:CHECK_ROWS]
    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    if not np.allclose(got, ref, rtol=1e-3, atol=1e-3):
        raise SystemExit(f"bench_stream: {wl.name} at {point}: output differs from the reference (max err {err:.2e})")
    return f"ok (max err {err:.1e})"


def main(argv=None) -> int:
    """Times the points, measures the copy at each point's size and writes the report."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2, help="threads for dscc and the copy (default 2)")
    ap.add_argument("--workloads", nargs="+", default=list(POINTS), choices=list(POINTS), metavar="W")
    ap.add_argument("--repeats", type=int, default=5, help="timed samples per point (default 5, median)")
    ap.add_argument("--dscc", type=Path, default=ROOT / "build" / "tools" / "dscc", help="the dscc binary")
    ap.add_argument("--compare-so", action="append", default=[], metavar="W=PATH",
                    help="also time this build of workload W (e.g. an older commit's) in the same run")
    ap.add_argument("--out", type=Path, help="report file (default bench/results/DATE-stream.md)")
    args = ap.parse_args(argv)
    cache = BENCH / ".cache"
    cache.mkdir(exist_ok=True)
    llc = machine_limits.last_level_cache_bytes()
    other = dict(s.split("=", 1) for s in args.compare_so)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    rows = []
    for name in args.workloads:
        wl = WORKLOADS_BY_NAME[name]
        so = cache / f"{name}-O3.so"
        dscc_abi.compile_model(args.dscc, wl.dsc, so, wl.func, "-O3")
        models = {"dscc": bench_cpu.ModuleModel(so, args.threads, args.dscc)}
        if name in other:
            models["compare"] = bench_cpu.ModuleModel(Path(other[name]), args.threads, args.dscc)
        for point in POINTS[name]:
            if wl.admits(point):
                raise SystemExit(f"bench_stream: {name} point {point} breaks {wl.admits(point)}")
            data = bench_cpu.traffic_bytes(wl, point)
            bench_cpu.log(f"{name} {point}: {data / 2**30:.2f} GiB")
            inputs = wl.inputs(point, seed=1)
            # 64-byte aligned, as the runtime's and PyTorch's allocations are (NumPy's are 16).
            out = dscc_abi.aligned_empty(bench_cpu.out_shape(wl, point), np.float32)
            out.fill(1.0)  # touched once: the timed calls see mapped pages, as a server's reused buffers are
            times, status = {}, ""
            for key, m in models.items():
                call = m.bind(inputs, [out])
                call()
                status = check(wl, point, inputs, out) if key == "dscc" else status
                times[key] = bench_cpu.time_fn(call, args.repeats, budget_s=30.0)
            # The copy over the same bytes: half of them read, half written.
            mb = max(1, math.ceil(data / 2 / 2**20))
            copy_gbs, _ = machine_limits.copy_bandwidth(args.threads, cache, mb)
            rows.append((name, point, data, times, copy_gbs, status))
            del inputs, out
        for m in models.values():
            m.close()

    def fmt_point(p):
        return " ".join(f"{k}={v}" for k, v in p.items())

    head = ["point", "data (GiB)", "data / LLC", "dscc", "dscc GB/s", "copy GB/s (same bytes)", "% of copy"]
    if other:
        head += ["compared build", "its % of copy"]
    lines = [f"# Memory-bound workloads beyond the last-level cache — {datetime.date.today().isoformat()}", "",
             f"- commit: {commit}{' (with uncommitted changes)' if dirty else ''}; threads: {args.threads}",
             f"- last-level cache (lscpu L3): {llc / 2**20:.0f} MiB; 4×LLC = {4 * llc / 2**30:.2f} GiB",
             "- dscc: `dscc compile -O3`, called through the `dscc` Python module into a caller-allocated (64-byte aligned), "
             "already touched output; the copy: bench/limits.c over half the point's bytes, so both move the same "
             "bytes (read + write), best of 10; dscc: median of the samples",
             "- GB/s counts each input read once and the output written once (bench_cpu.py's count)", "",
             "| workload | " + " | ".join(head) + " |", "|" + "---|" * (len(head) + 1)]
    for name, point, data, times, copy_gbs, status in rows:
        gbs = data / times["dscc"] / 1e9
        over = data / llc
        cells = [name, fmt_point(point), f"{data / 2**30:.2f}", f"{over:.1f}{'' if over > 4 else ' (below 4×)'}",
                 bench_cpu.fmt_t(times["dscc"]), f"{gbs:.1f}", f"{copy_gbs:.1f}", f"{100 * gbs / copy_gbs:.0f}%"]
        if other:
            t = times.get("compare")
            cells += [bench_cpu.fmt_t(t) if t else "—", f"{100 * data / t / 1e9 / copy_gbs:.0f}%" if t else "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Checks: " + "; ".join(f"{n} {fmt_point(p)} {s}" for n, p, _, _, _, s in rows)]
    bench_cpu.write_report("\n".join(lines) + "\n", args.out, "stream")
    return 0


if __name__ == "__main__":
    sys.exit(main())
