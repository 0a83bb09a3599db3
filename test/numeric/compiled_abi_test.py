#!/usr/bin/python3
"""Compiled models through their C ABI: a generated header used from C99 and a model called from 4 threads at once.

Usage: /usr/bin/python3 test/numeric/compiled_abi_test.py PATH/TO/dscc [RUNTIME_LIB_DIR [RUNTIME_INCLUDE_DIR]]

RUNTIME_LIB_DIR holds libdscc_runtime.so (default: DSCC's ../runtime);
RUNTIME_INCLUDE_DIR holds dscc_runtime.h (default: the source tree's runtime/).

For layer_norm and bert_layer (bench/workloads) the script writes the header
(`dscc compile W.dsc --emit=header -o W.h`) and the library (`-o W.so`), then
compiles with the system `cc`/`c++`:

(a) test/runtime/compiled_abi_c.c, as C99 with -pedantic-errors -Wall -Wextra
    -Werror, including the generated header and calling layer_norm_run: once
    with a caller-allocated output, once with a runtime-allocated one (the
    dims and dtype it writes are checked), then wrong rank, dtype and dims of
    inputs and outputs (DSCC_SHAPE_MISMATCH), sizes breaking `N in [1, 65536]`
    and `D in [1, 16384]` (DSCC_FACT_VIOLATED) and wrong counts
    (DSCC_INVALID_ARGUMENT), each with a non-empty message. Both outputs are
    compared with the reference interpreter (`dscc run layer_norm.dsc -i ...
    -o DIR` on the same NumPy-written inputs) at sizes including 1, vector
    edges and odd widths: |c - interp| <= 1e-4 + 1e-4 * |interp|.
(b) test/runtime/compiled_abi_threads.cpp, as C++17 against each model's
    header: 4 threads call the model on one 3-thread context, 50 calls each at
    sizes drawn per call, and every result must equal, bit for bit, the same
    call made sequentially beforehand on that context.

Exits 1 on any failure.
"""

import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOADS = os.path.join(ROOT, "bench", "workloads")
ATOL = 1e-4
RTOL = 1e-4
LN_SIZES = [(1, 1), (1, 7), (3, 8), (2, 9), (5, 15), (4, 16), (3, 17), (7, 63), (2, 64), (9, 65),
            (33, 100), (1, 768), (17, 1024), (2, 3072)]
# Sizes drawn by the concurrent test: kept small so 2 x 200 calls stay quick.
THREAD_SYMS = {"layer_norm": "N=1:300,D=1:700", "bert_layer": "B=1:3,S=1:24"}

failures = []


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return p.returncode, p.stdout, p.stderr


def report(ok, what, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(what)


def signature(path):
    """([dims of each argument], dims of the result) from the function's signature."""
    text = "\n".join(line.split("//")[0] for line in open(path).read().splitlines())
    m = re.search(r"func\s+@(\w+)\s*\((.*?)\)\s*->\s*\w+\[([^\]]*)\]", text, re.S)
    args = [[d.strip() for d in dims.split(",")] for _, _, dims in re.findall(r"%(\w+)\s*:\s*(\w+)\[([^\]]*)\]", m.group(2))]
    return m.group(1), args, [d.strip() for d in m.group(3).split(",")]


def compile_model(dscc, name, tmp):
    src = os.path.join(WORKLOADS, name + ".dsc")
    so, header = os.path.join(tmp, name + ".so"), os.path.join(tmp, name, "model.h")
    os.makedirs(os.path.dirname(header), exist_ok=True)
    rc1, _, err1 = run([dscc, "compile", src, "-o", so])
    rc2, _, err2 = run([dscc, "compile", src, "--emit=header", "-o", header])
    ok = rc1 == 0 and rc2 == 0 and os.path.exists(so) and os.path.exists(header)
    report(ok, f"compile {name} to .so and header", (err1 + err2).strip()[-400:])
    if ok:
        func = signature(src)[0]
        has_decl = re.search(r"\b%s_run\s*\(" % func, open(header).read()) is not None
        report(has_decl, f"{name} header declares {func}_run")
        ok = has_decl
    return (so, os.path.dirname(header)) if ok else (None, None)


def link_flags(so, libdir):
    return [so, "-L" + libdir, "-ldscc_runtime", "-Wl,-rpath," + libdir, "-Wl,-rpath," + os.path.dirname(so)]


def test_c99(dscc, so, hdir, libdir, incdir, tmp):
    exe = os.path.join(tmp, "compiled_abi_c")
    rc, out, err = run(["cc", "-std=c99", "-pedantic-errors", "-Wall", "-Wextra", "-Werror", "-DMODEL_RUN=layer_norm_run",
                        "-I" + hdir, "-I" + incdir, os.path.join(ROOT, "test", "runtime", "compiled_abi_c.c"), "-o", exe]
                       + link_flags(so, libdir))
    report(rc == 0, "C99 program with the generated header compiles (-std=c99 -pedantic-errors)", err.strip()[-800:])
    if rc != 0:
        return
    src = os.path.join(WORKLOADS, "layer_norm.dsc")
    rng = np.random.default_rng(5)
    for n, d in LN_SIZES:
        folder = tempfile.mkdtemp(dir=tmp)
        x = rng.uniform(-1, 1, size=(n, d)).astype(np.float32)
        g = rng.uniform(-1, 1, size=d).astype(np.float32)
        b = rng.uniform(-1, 1, size=d).astype(np.float32)
        paths = {}
        for k, v in (("x", x), ("g", g), ("b", b)):
            paths[k] = os.path.join(folder, k)
            np.save(paths[k] + ".npy", v)
            v.tofile(paths[k] + ".bin")
        outc, outr = os.path.join(folder, "caller.bin"), os.path.join(folder, "runtime.bin")
        rc, out, err = run([exe, str(n), str(d), paths["x"] + ".bin", paths["g"] + ".bin", paths["b"] + ".bin", outc, outr])
        report(rc == 0, f"C99 layer_norm_run statuses and messages at N={n} D={d}", "" if rc == 0 else (err or out).strip()[-800:])
        if rc != 0:
            continue
        rc, out, err = run([dscc, "run", src, "-o", os.path.join(folder, "ref")]
                           + [a for k in ("x", "g", "b") for a in ("-i", f"{k}={paths[k]}.npy")])
        if rc != 0:
            report(False, f"interpreter at N={n} D={d}", err.strip()[-400:])
            continue
        want = np.load(os.path.join(folder, "ref", "out0.npy")).astype(np.float64)
        for label, path in (("caller-allocated", outc), ("runtime-allocated", outr)):
            got = np.fromfile(path, dtype=np.float32).astype(np.float64).reshape(n, d)
            diff = np.abs(got - want)
            ok = bool(np.all(diff <= ATOL + RTOL * np.abs(want))) and np.array_equal(np.isnan(got), np.isnan(want))
            report(ok, f"C99 {label} output vs interpreter at N={n} D={d}", f"max_abs_err={diff.max():.3g}")


def test_threads(name, so, hdir, libdir, incdir, tmp):
    func, args, result = signature(os.path.join(WORKLOADS, name + ".dsc"))
    exe = os.path.join(tmp, "compiled_abi_threads_" + name)
    rc, out, err = run(["c++", "-std=c++17", "-O1", "-Wall", "-Werror", f"-DMODEL_RUN={func}_run", "-I" + hdir, "-I" + incdir,
                        os.path.join(ROOT, "test", "runtime", "compiled_abi_threads.cpp"), "-o", exe, "-pthread"]
                       + link_flags(so, libdir))
    report(rc == 0, f"C++ threads program for {name} compiles", err.strip()[-800:])
    if rc != 0:
        return
    rc, out, err = run([exe, THREAD_SYMS[name], ";".join(",".join(a) for a in args), ",".join(result)], timeout=600)
    report(rc == 0, f"{name}: 4 threads x 50 concurrent calls on one context, bit-identical to sequential",
           (err.strip() or out.strip())[-800:])


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    dscc = os.path.abspath(sys.argv[1])
    libdir = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.dirname(dscc)), "runtime")
    incdir = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else os.path.join(ROOT, "runtime")
    with tempfile.TemporaryDirectory(prefix="dscc-abi-") as tmp:
        for name in ("layer_norm", "bert_layer"):
            so, hdir = compile_model(dscc, name, tmp)
            if so is None:
                continue
            if name == "layer_norm":
                test_c99(dscc, so, hdir, libdir, incdir, tmp)
            test_threads(name, so, hdir, libdir, incdir, tmp)
    if failures:
        print(f"\n{len(failures)} failure(s):\n  " + "\n  ".join(failures))
        return 1
    print("\nall ABI checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
