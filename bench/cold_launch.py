#!/usr/bin/env python3
# A small kernel call back to back and after an idle gap, on 1 and 2 threads: what waking a sleeping pool worker costs.
"""Times one small col_reduce call (N=789 D=32: 32 units, two chunks on two
threads) through the `dscc` Python module, 400 calls per row, median, either
back to back or with a busy-wait gap between calls (longer than the pool's
50 µs spin, so its worker is asleep when the next call comes).

Usage: bench/.venv/bin/python bench/cold_launch.py [--dscc build/tools/dscc]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cpu  # noqa: E402
import dscc_abi  # noqa: E402
from peers import BENCH, WORKLOADS_BY_NAME  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dscc", type=Path, default=BENCH.parent / "build" / "tools" / "dscc")
    ap.add_argument("--calls", type=int, default=400)
    args = ap.parse_args(argv)
    wl = WORKLOADS_BY_NAME["col_reduce"]
    point = {"N": 789, "D": 32}
    with tempfile.TemporaryDirectory() as tmp:
        so = Path(tmp) / "col.so"
        dscc_abi.compile_model(args.dscc, wl.dsc, so, wl.func, "-O3")
        inputs = wl.inputs(point, seed=1)
        out = np.empty(bench_cpu.out_shape(wl, point), np.float32)
        print("| threads | gap between calls | median per call |")
        print("|---|---|---|")
        for threads in (1, 2):
            m = bench_cpu.ModuleModel(so, threads, args.dscc)
            call = m.bind(inputs, [out])
            for gap in (0.0, 200e-6):
                ts = []
                for _ in range(args.calls):
                    until = time.perf_counter() + gap
                    while gap and time.perf_counter() < until:
                        pass
                    t0 = time.perf_counter()
                    call()
                    ts.append(time.perf_counter() - t0)
                print(f"| {threads} | {gap * 1e6:.0f} µs | {np.median(ts) * 1e6:.1f} µs |")
            m.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
