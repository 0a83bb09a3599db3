#!/usr/bin/python3
"""Streaming versions on and off, in one build: which kernels non-temporal stores pay for beyond the cache.

Usage: /usr/bin/python3 bench/stream_policy.py [--dscc build/tools/dscc] [--threads 2] [--rounds 2] [--out FILE.md]

Each program below is one loop kernel over N x 1024 f32 elements (3.3 GB
read and written at N = 400000, beyond the last-level cache of the machines
in bench/results/) with a different amount of vector math per element.
It is compiled twice, `--streaming-min=1` (the streaming version runs:
non-temporal stores) and `--streaming-min=0` (no streaming version; both
with `-O3`); `dscc run --bench 5` times both, in alternation, ROUNDS times,
and the table gives the median of the medians and streaming / ordinary
(< 1: streaming is faster). codegen/cpu/Streaming.h (streamingPays) gives a
streaming version only to kernels with at most one exponential's worth of
vector math per element; this shows why.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BODIES = {
    "add": "%c = add %a, %b\n  return %c",
    "div": "%c = div %a, %b\n  return %c",
    "exp": "%c = mul %a, %b\n  %d = exp %c\n  return %d",
    "three exps": "%c = mul %a, %b\n  %d = exp %c\n  %e = exp %d\n  %f = exp %a\n  %g = add %e, %f\n  return %g",
    "tanh, sigmoid": "%c = mul %a, %b\n  %d = tanh %c\n  %e = sigmoid %a\n  %f = mul %d, %e\n  return %f",
    "gelu (erf)": "%c = add %a, %b\n  %d = gelu %c\n  return %d",
}


def program(body):
    return ("func @k(%a: f32[N, 1024], %b: f32[1024]) -> f32[N, 1024] where N in [1, 1000000] {\n  " + body +
            "\n}\n")


def bench(dscc, so, n, threads):
    out = subprocess.run([dscc, "run", so, "--random", "--dim", "N=%d" % n, "--threads", str(threads), "--bench", "5"],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dscc", default=os.path.join(ROOT, "build", "tools", "dscc"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--n", type=int, default=400000)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    rows = ["| kernel | streaming (ms) | ordinary (ms) | streaming / ordinary | streamingPays |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name, body in BODIES.items():
            src = os.path.join(tmp, "k.dsc")
            open(src, "w").write(program(body))
            sos = {}
            for mode, flag in (("on", "1"), ("off", "0")):
                sos[mode] = os.path.join(tmp, "k-%s-%d.so" % (mode, len(rows)))
                subprocess.run([args.dscc, "compile", src, "-O3", "--streaming-min=" + flag, "-o", sos[mode]],
                               check=True)
            plan = subprocess.run([args.dscc, "explain", src, "--dim", "N=%d" % args.n], capture_output=True,
                                  text=True, check=True).stdout
            times = {"on": [], "off": []}
            for _ in range(args.rounds):
                for mode in ("on", "off"):
                    times[mode].append(bench(args.dscc, sos[mode], args.n, args.threads))
            on, off = statistics.median(times["on"]), statistics.median(times["off"])
            rows.append("| %s | %.1f | %.1f | %.2f | %s |" % (name, on, off, on / off,
                                                           "yes" if "guard stream" in plan else "no"))
    text = "\n".join(rows) + "\n"
    print(text, end="")
    if args.out:
        open(args.out, "w").write(text)


if __name__ == "__main__":
    main()
