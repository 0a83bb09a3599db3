#!/usr/bin/python3
"""`dscc run --profile / --trace / --profile-out` against `dscc explain`.

Usage: /usr/bin/python3 test/view/profile_test.py PATH/TO/dscc

For every workload of bench/workloads (and the imported BERT of
test/onnx/fixtures) the model is compiled, then run once with the runtime's
profiling on at sizes inside its ranges (37 clamped: odd, so vector guards
fail where they are tested). Checks:

* the trace is JSON in the Chrome trace format: an object with `traceEvents`,
  each complete event having ph "X", numeric ts and dur >= 0, pid and tid,
  and args with the version, the sizes and the thread;
* its kernel events, in order, are exactly what explain says runs: for each
  kernel in explain's order, `SYMBOL.sgemm` for a library kernel's BLAS call,
  then the `runs:` function; operand copies (`SYMBOL.copy_a/b`) appear only
  where explain says an operand is copied;
* the --profile table lists the same functions' kernels, and --profile-out
  (the file `dscc view --profile` reads) has one entry per function with
  calls == 1 and the same order.

Exits 1 on any mismatch.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import view_common as vc  # noqa: E402


def check_model(dscc, model, tmp):
    failures = []
    name = os.path.splitext(os.path.basename(model))[0]
    so = os.path.join(tmp, name + ".so")
    c = subprocess.run([dscc, "compile", model, "-o", so], capture_output=True, text=True)
    if c.returncode != 0:
        return ["%s: compile failed: %s" % (name, c.stderr.strip())]
    dims = vc.sizes_for(vc.program_text(dscc, model))
    kernels, _ = vc.explain(dscc, model, dims)
    trace, prof = os.path.join(tmp, name + ".trace.json"), os.path.join(tmp, name + ".prof.json")
    r = subprocess.run([dscc, "run", so, "--random", "--threads", "2", "--profile", "--trace", trace,
                        "--profile-out", prof] + vc.dim_args(dims), capture_output=True, text=True)
    if r.returncode != 0:
        return ["%s: run failed: %s" % (name, r.stderr.strip())]
    with open(trace) as f:
        t = json.load(f)
    if not isinstance(t, dict) or not isinstance(t.get("traceEvents"), list):
        return ["%s: the trace has no traceEvents list" % name]
    events = [e for e in t["traceEvents"] if e.get("ph") == "X"]
    for e in events:
        for key in ("name", "ts", "dur", "pid", "tid", "args"):
            if key not in e:
                failures.append("%s: trace event without %r: %s" % (name, key, e))
        if not isinstance(e.get("ts"), (int, float)) or not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
            failures.append("%s: trace event with a bad ts/dur: %s" % (name, e))
        a = e.get("args", {})
        if "version" not in a or "thread" not in a or not isinstance(a.get("sizes"), dict):
            failures.append("%s: trace event args lack version/sizes/thread: %s" % (name, e))
    # What explain says runs, in order; a library kernel's sgemm before its epilogue.
    want = []
    copy_ok = set()
    for k in kernels:
        if k["blas"]:
            # The kernel's symbol: from its runs: function, or (no epilogue) matched below by kernel index.
            want.append(("sgemm", k))
            if k["copies"]:
                copy_ok.add(k["index"])
        if k["runs"]:
            want.append(("run", k))
    got = [e for e in events if e["cat"] != "copy"]
    copies = [e for e in events if e["cat"] == "copy"]
    if len(got) != len(want):
        failures.append("%s: %d kernel/gemm events in the trace, explain says %d run:\n  trace:   %s\n  explain: %s"
                        % (name, len(got), len(want), [e["name"] for e in got],
                           [w[1]["runs"] or "sgemm" for w in want]))
    else:
        for e, (what, k) in zip(got, want):
            if what == "run":
                if e["name"] != k["runs"]:
                    failures.append("%s: kernel %d ran %s, explain says %s" % (name, k["index"], e["name"], k["runs"]))
            else:
                if e["cat"] != "gemm" or not e["name"].endswith(".sgemm"):
                    failures.append("%s: kernel %d: expected its BLAS call, the trace has %s" % (name, k["index"], e["name"]))
                if k["runs"] and not k["runs"].startswith(e["args"]["kernel"] + "."):
                    failures.append("%s: kernel %d: the BLAS call is %s's, explain's epilogue %s"
                                    % (name, k["index"], e["args"]["kernel"], k["runs"]))
                if not all(s in e["args"]["sizes"] for s in ("M", "N", "K", "batch")):
                    failures.append("%s: a BLAS event without M, N, K, batch: %s" % (name, e))
    gemm_kernels = {e["args"]["kernel"] for e in got if e["cat"] == "gemm"}
    for e in copies:
        if e["args"]["kernel"] not in gemm_kernels:
            failures.append("%s: a copy for %s, which explain gives no BLAS call" % (name, e["args"]["kernel"]))
    if copies and not copy_ok:
        failures.append("%s: operand copies in the trace, but explain says no operand is copied" % name)
    # The table and --profile-out: one row per function, in the trace's order.
    functions = []
    for e in events:
        if e["name"] not in functions:
            functions.append(e["name"])
    with open(prof) as f:
        p = json.load(f)
    if [k["function"] for k in p["kernels"]] != functions:
        failures.append("%s: --profile-out functions %s differ from the trace's %s"
                        % (name, [k["function"] for k in p["kernels"]], functions))
    if any(k["calls"] != 1 for k in p["kernels"] if k["call"] != "copy"):
        failures.append("%s: a kernel called more than once in one run: %s" % (name, p["kernels"]))
    table = r.stdout[r.stdout.find("profile:"):]
    rows = [line.split()[0] for line in table.splitlines()[2:] if line.strip()]
    if rows != [k["name"] for k in p["kernels"]]:
        failures.append("%s: --profile table rows %s differ from --profile-out's %s"
                        % (name, rows, [k["name"] for k in p["kernels"]]))
    print("%-20s %2d kernels, %2d trace events, %s" % (name, len(kernels), len(events),
                                                       "FAIL" if failures else "ok"))
    return failures


def main():
    dscc = sys.argv[1]
    models = vc.workloads() + [vc.BERT_ONNX]
    failures = []
    with tempfile.TemporaryDirectory(prefix="dscc-profile-") as tmp:
        for m in models:
            failures += check_model(dscc, m, tmp)
    for f in failures:
        print("FAIL: " + f)
    print("%d models, %d failures" % (len(models), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
