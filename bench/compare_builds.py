#!/usr/bin/python3
"""Before/after benchmark of two dscc builds on the shared workloads: a table of medians and ratios from one run.

Usage: /usr/bin/python3 bench/compare_builds.py --before OLD/tools/dscc --after NEW/tools/dscc
       [--before-flags "FLAGS"] [--after-flags "FLAGS"]
       [--threads 2] [--calls 30] [--rounds 3] [--programs] [--only NAME ...] [--out bench/results/FILE.md]

Each workload is compiled by both builds (`dscc compile -O3`); both artifacts
are checked against the interpreter at a small size (`dscc run --check`) and
their LLVM IR is compared (kernel code identical or not, ignoring the module
name and the source folder string). Then, at each point (the sizes below,
from the workloads' shape distributions: a serving size and a large one),
`dscc run W.so --random --bench CALLS` runs for the two builds in alternation,
ROUNDS times each, and the table gives the median of the rounds' medians and
after/before (< 1: the new build is faster). Each build runs on its own runtime
(BUILD/runtime, put first on LD_LIBRARY_PATH for its processes), so runtime
changes are in the comparison too. --programs adds the programs of
bench/programs/ (kernel forms the workloads do not have: gathers, slices,
transposes, refused stitches), each at the points of its `// points:` line. --before-flags and --after-flags
add `dscc compile` flags to one side (the same build twice with and without an option).
It prints the table (markdown)
and writes it to --out when given.
"""

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W = os.path.join(ROOT, "bench", "workloads")
P = os.path.join(ROOT, "bench", "programs")

POINTS = {
    "bert_layer": [{"B": 1, "S": 32}, {"B": 4, "S": 128}],
    "softmax": [{"B": 1, "S": 128}, {"B": 4, "S": 384}],
    "layer_norm": [{"N": 64, "D": 768}, {"N": 16384, "D": 1024}],
    "rms_norm": [{"T": 64}, {"T": 16384}],
    "gelu_bias": [{"T": 256}, {"T": 16384}],
    "elementwise_chain": [{"N": 64, "D": 768}, {"N": 16384, "D": 1024}],
    "col_reduce": [{"N": 512, "D": 768}, {"N": 16384, "D": 1024}],
}


def program_points(path):
    """The points of a bench/programs file: its `// points: A=1,B=2; A=3,B=4` line."""
    for line in open(path):
        if line.startswith("// points:"):
            return [{k: int(v) for k, v in (kv.split("=") for kv in p.strip().split(","))}
                    for p in line.split(":", 1)[1].split(";")]
    raise SystemExit("%s: no '// points:' line" % path)


def symbols(path):
    text = open(path).read()
    return set(re.findall(r"(\w+)\s+in\s+\[", text))


def build_env(dscc):
    """The environment to run a build's tools in: its own runtime first. A dscc binary and the models it
    compiles load libdscc_runtime.so.0 through RUNPATHs into their build folder, but one process gets one
    runtime (the first loaded), so without this a copied build would run on another build's runtime."""
    rt = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(dscc))), "runtime")
    env = dict(os.environ)
    if os.path.isdir(rt):
        env["LD_LIBRARY_PATH"] = rt + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def bench(dscc, so, dims, calls, threads):
    cmd = [dscc, "run", so, "--random", "--seed", "1", "--bench", str(calls), "--threads", str(threads)]
    for k, v in dims.items():
        cmd += ["--dim", "%s=%d" % (k, v)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=build_env(dscc)).stdout
    m = re.search(r"median ([0-9.e+-]+) ms", out)
    return float(m.group(1))


def llvm_of(dscc, src, path, flags=()):
    subprocess.run([dscc, "compile", src, "-O3", "--emit=llvm", "-o", path, *flags], check=True, capture_output=True)
    lines = open(path).read().splitlines()
    return [l for l in lines if "dscc_model_source_dir" not in l and not l.startswith("; ModuleID")
            and not l.startswith("source_filename")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--before-flags", default="", help="more `dscc compile` flags for the before side")
    ap.add_argument("--after-flags", default="", help="more `dscc compile` flags for the after side")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--programs", action="store_true", help="also the programs of bench/programs/")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these workloads and programs")
    ap.add_argument("--out")
    a = ap.parse_args()
    flags = {"before": shlex.split(a.before_flags), "after": shlex.split(a.after_flags)}
    rows = []
    targets = [(name, os.path.join(W, name + ".dsc"), points) for name, points in POINTS.items()]
    if a.programs:
        for fn in sorted(os.listdir(P)):
            if fn.endswith(".dsc"):
                targets.append((fn[:-4], os.path.join(P, fn), program_points(os.path.join(P, fn))))
    if a.only:
        targets = [t for t in targets if t[0] in a.only]
    with tempfile.TemporaryDirectory() as tmp:
        for name, src, points in targets:
            sos = {}
            for tag, dscc in (("before", a.before), ("after", a.after)):
                so = os.path.join(tmp, "%s.%s.so" % (name, tag))
                subprocess.run([dscc, "compile", src, "-O3", "-o", so, *flags[tag]], check=True, capture_output=True,
                               env=build_env(dscc))
                small = {k: min(v, 8) for k, v in points[0].items()}
                cmd = [dscc, "run", so, "--random", "--check"] + sum((["--dim", "%s=%d" % kv] for kv in small.items()), [])
                c = subprocess.run(cmd, capture_output=True, text=True, env=build_env(dscc))
                if c.returncode != 0 or "check: ok" not in c.stdout:
                    print("%s (%s): check failed\n%s%s" % (name, tag, c.stdout, c.stderr), file=sys.stderr)
                    return 1
                sos[tag] = (dscc, so)
            same = (llvm_of(a.before, src, os.path.join(tmp, "b.ll"), flags["before"]) ==
                    llvm_of(a.after, src, os.path.join(tmp, "a.ll"), flags["after"]))
            for dims in points:
                t = {"before": [], "after": []}
                for _ in range(a.rounds):
                    for tag in ("before", "after"):
                        dscc, so = sos[tag]
                        t[tag].append(bench(dscc, so, dims, a.calls, a.threads))
                b, f = statistics.median(t["before"]), statistics.median(t["after"])
                rows.append((name, " ".join("%s=%d" % kv for kv in dims.items()), b, f, f / b, same))
    lines = ["| workload | point | before (ms) | after (ms) | after/before | kernel IR |", "|---|---|---|---|---|---|"]
    for name, point, b, f, r, same in rows:
        lines.append("| %s | %s | %.4f | %.4f | %.3f | %s |" % (name, point, b, f, r, "identical" if same else "differs"))
    table = "\n".join(lines)
    print(table)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
