#!/usr/bin/python3
"""Compile times with and without the compile cache: the workloads and the imported BERT.

Usage: /usr/bin/python3 bench/compile_cache.py PATH/TO/dscc [--repeat R] [--models a.dsc,b.onnx] [--baseline OLD_DSCC]

Per model (bench/workloads/*.dsc, test/onnx/fixtures/bert_dynamo.onnx, and
bert_stack12.dsc: 12 BERT layers from bench/make_bert_stack.py) and each of
R repeats (the table shows the median, in seconds of wall time):

- `baseline` (with --baseline): `OLD_DSCC compile`, e.g. a build from before
  the per-kernel split (one LLVM module for the whole model);
- `no cache -j1`: `--no-cache -j 1`, everything compiled on one thread;
- `no cache`: `--no-cache`, kernels on one thread per hardware thread;
- `cold`: an empty cache folder (everything compiled and stored);
- `warm`: the same folder again (the library is a hit: nothing compiled);
- `kernels warm`: `-c` into the warm folder (a new artifact kind: every
  kernel and the host object are hits, only `ld -r` runs);
- `1 op changed`: the model with its first `add` made a `sub` (else its
  first `mul` a `div`) in the warm folder: only the kernels it touches are
  compiled, where it has one.

Also prints the number of distinct kernel objects (--cache-stats).
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DSCC = sys.argv[1]
args = sys.argv[2:]
repeat = int(args[args.index("--repeat") + 1]) if "--repeat" in args else 3
baseline = args[args.index("--baseline") + 1] if "--baseline" in args else None
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "bench", "workloads")
models = [os.path.join(WORK, f) for f in sorted(os.listdir(WORK)) if f.endswith(".dsc")]
models.append(os.path.join(ROOT, "test", "onnx", "fixtures", "bert_dynamo.onnx"))
stack_dir = tempfile.mkdtemp(prefix="dscc-bench-stack-")
subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_bert_stack.py"), "12",
                os.path.join(stack_dir, "bert_stack12.dsc")], check=True)
models.append(os.path.join(stack_dir, "bert_stack12.dsc"))
if "--models" in args:
    names = args[args.index("--models") + 1].split(",")
    models = [m for m in models if os.path.basename(m) in names]


def timed(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return dt, p.stderr


def changed_copy(model, tmp):
    """The model with one elementwise op changed (add -> sub, else mul -> div), or None.

    Scalar constants and epsilons are host values passed to the kernels, so
    changing one changes no kernel; changing an op does."""
    if not model.endswith(".dsc"):
        return None
    text = open(model).read()
    new = text.replace(" = add ", " = sub ", 1)
    if new == text:
        new = text.replace(" = mul ", " = div ", 1)
    if new == text:
        return None
    path = os.path.join(tmp, "changed_" + os.path.basename(model))
    open(path, "w").write(new)
    return path


print("| model | kernel objects |%s no cache -j1 | no cache | cold | warm | kernels warm (-c) | 1 op changed | speed-up (no cache / warm) |"
      % (" baseline |" if baseline else ""))
print("|---|---|---|---|---|---|---|---|---|" + ("---|" if baseline else ""))
for model in models:
    times = {k: [] for k in ("base", "j1", "nocache", "cold", "warm", "kwarm", "changed")}
    kernels = 0
    for r in range(repeat):
        tmp = tempfile.mkdtemp(prefix="dscc-bench-cache-")
        try:
            out = os.path.join(tmp, "m.so")
            cache = os.path.join(tmp, "cache")
            if baseline:
                times["base"].append(timed([baseline, "compile", model, "-o", out])[0])
            times["j1"].append(timed([DSCC, "compile", model, "-o", out, "--no-cache", "-j", "1"])[0])
            times["nocache"].append(timed([DSCC, "compile", model, "-o", out, "--no-cache"])[0])
            dt, err = timed([DSCC, "compile", model, "-o", out, "--cache-dir", cache, "--cache-stats"])
            times["cold"].append(dt)
            m = re.search(r"cache: kernel: \d+ hits, (\d+) misses", err)
            kernels = int(m.group(1)) if m else 0
            times["warm"].append(timed([DSCC, "compile", model, "-o", out, "--cache-dir", cache])[0])
            times["kwarm"].append(timed([DSCC, "compile", model, "-c", "-o", os.path.join(tmp, "m.o"), "--cache-dir", cache])[0])
            ch = changed_copy(model, tmp)
            if ch:
                times["changed"].append(timed([DSCC, "compile", ch, "-o", os.path.join(tmp, "c.so"), "--cache-dir", cache])[0])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) if v else None for k, v in times.items()}
    fmt = lambda v: "%.2f s" % v if v is not None else "-"
    print("| %s | %d |%s %s | %s | %s | %s | %s | %s | %.1fx |" % (
        os.path.basename(model), kernels, (" %s |" % fmt(med["base"])) if baseline else "", fmt(med["j1"]), fmt(med["nocache"]), fmt(med["cold"]), fmt(med["warm"]),
        fmt(med["kwarm"]), fmt(med["changed"]), med["nocache"] / med["warm"]), flush=True)
shutil.rmtree(stack_dir, ignore_errors=True)
