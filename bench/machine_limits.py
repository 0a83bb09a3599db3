# The machine's limits for the benchmarks' "% of limit" columns, measured by bench/limits.c.
"""A STREAM-style copy, a read-only sum and the faster BLAS sgemm (bench/limits.c, compiled into the bench
cache on first use), and the last-level cache size. Used by bench_cpu.py, bench_stream.py and bench_onnx.py."""
from __future__ import annotations

import subprocess
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def limits_binary(cache: Path) -> Path:
    """bench/limits.c (STREAM copy, read-only sum; OpenBLAS's and, where libdnnl-dev is installed, oneDNN's
    sgemm), compiled into the cache when it is older than its source."""
    src, exe = BENCH / "limits.c", cache / "limits"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        inc = "/usr/include/x86_64-linux-gnu/openblas-pthread"
        lib = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
        dnnl = ["-DHAVE_DNNL", "-ldnnl"] if Path("/usr/include/oneapi/dnnl/dnnl.h").exists() else []
        subprocess.run(["cc", "-O3", "-march=native", "-fopenmp", f"-I{inc}", str(src), "-o", str(exe),
                        f"-L{lib}", f"-Wl,-rpath,{lib}", "-lopenblas"] + dnnl, check=True)
    return exe


def _limits(cache: Path, *args) -> list:
    """The words `limits ARGS...` prints."""
    return subprocess.run([str(limits_binary(cache))] + [str(a) for a in args], check=True,
                          capture_output=True, text=True).stdout.split()


def copy_bandwidth(threads: int, cache: Path, mb: int = 256) -> tuple:
    """STREAM "Copy" in C: GB/s of (read + write) bytes for a `mb` MB array, best of 10, and how it was measured."""
    return float(_limits(cache, "copy", threads, mb)[0]), \
        f"STREAM-style C copy (bench/limits.c, OpenMP), {threads} thread(s), {mb} MB"


def read_bandwidth(threads: int, cache: Path, mb: int = 256) -> float:
    """A sum in C: GB/s of bytes read for a `mb` MB array, best of 10 — the limit of a kernel that only reads
    (col_reduce), which the copy's rate does not bound."""
    return float(_limits(cache, "read", threads, mb)[0])


def sgemm_rate(threads: int, cache: Path, m: int = 2048, n: int = 768, k: int = 768) -> tuple:
    """GFLOP/s of the faster of OpenBLAS's and oneDNN's sgemm (the BLASes dscc's runtime links) at a
    BERT-sized shape, best of 5, and which it was."""
    out = _limits(cache, "sgemm", threads, m, n, k)
    lib = {"openblas": "OpenBLAS cblas_sgemm", "onednn": "oneDNN dnnl_sgemm"}.get(out[1], out[1])
    return float(out[0]), f"{lib} {m}x{n}x{k} (the faster of OpenBLAS and oneDNN), {threads} thread(s)"


def last_level_cache_bytes() -> int:
    """The L3 size lscpu reports (all instances), or 32 MiB when it cannot tell."""
    try:
        for line in subprocess.run(["lscpu", "-B"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("L3 cache:"):
                return int(line.split(":", 1)[1].split()[0])
    except (FileNotFoundError, ValueError):
        pass
    return 32 << 20
