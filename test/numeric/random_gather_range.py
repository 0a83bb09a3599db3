# random_programs.py's out-of-range gather check: one index set to D or -D-1, compiled code must refuse it as the interpreter does.
"""A program with gather indices runs once more at its last sizes with one
index element set to D or -D-1: where the interpreter refuses it (`gather
index V is out of range ...`), the compiled call must fail with those words,
and pass where the interpreter does (an element nothing reads). Indices that
only a gather whose result nothing uses reads are skipped: the compiled
program drops that gather (the interpreter runs every op)."""
import os
import re
import subprocess

import numpy as np


def check_gather_range(dscc, src, so, tmp, idx, last, k, dim_of):
    """Runs `src` (interpreted) and `so` (compiled) with one of the index inputs `idx` ([(name, kind)], their
    .npy files in `tmp`, `last` the (sizes, run arguments) of the last checked run) made out of range; `dim_of(kind,
    sizes)` is the size D its indices address. Returns "" or why the two disagree."""
    sizes, ins = last
    name, kind = idx[k % len(idx)]
    p = os.path.join(tmp, name + ".npy")
    a = np.load(p)
    if not a.size:
        return ""
    D = dim_of(kind, sizes)
    bad = D if k % 2 else -D - 1
    a.flat[(k * 7) % a.size] = bad
    np.save(p, a)
    want = "gather index %d is out of range" % bad
    ci = subprocess.run([dscc, "run", src] + ins, capture_output=True, text=True, timeout=300)
    cc = subprocess.run([dscc, "run", so] + ins, capture_output=True, text=True, timeout=300)
    # A gather whose result nothing uses is not compiled (the interpreter runs it): its indices are read by
    # nothing in the fused program.
    fused = subprocess.run([dscc, "compile", src, "--emit=fused-ir", "-o", "-"], capture_output=True, text=True,
                           timeout=300).stdout
    used = re.search(r"%%%s\b" % name, fused.split("{", 1)[-1]) is not None
    if used and (want in ci.stderr) != (cc.returncode != 0 and want in cc.stderr):
        return "index %s = %d at %s: interpreter %s, compiled %s" % (
            name, bad, sizes, (ci.stderr.strip() or "ok")[-600:], (cc.stderr.strip() or "ok")[-600:])
    return ""
