#!/usr/bin/python3
"""dscc-tune's measurement cache: re-tuning reuses kernel measurements by fingerprint and machine.

Usage: /usr/bin/python3 test/cache/tune_cache_test.py PATH/TO/dscc-tune SOURCE_DIR

With real timing (no --fake-timer) of test/cache/inputs/two_kernels.dsc (a
layer norm and a softmax) over two_small.yaml, in a fresh cache folder:

1. the first run measures every size of both kernels and reuses none;
2. the second run measures 0 and reuses them all, and its YAML is
   byte-identical to the first (timings are noisy, so only reuse gives that);
3. after a change to the softmax alone (an exp before it, fused into its
   kernel), a run measures only that kernel's sizes and reuses the layer
   norm's: the layer norm's entry in the YAML is identical to the first run's;
4. --no-cache measures everything again; a different thread count (another
   machine configuration) reuses nothing;
5. the progress bar shows on a terminal (a pty) and not on a pipe.

Exits 1 on any failure.
"""
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

TUNE, SRC = sys.argv[1], sys.argv[2]
INPUTS = os.path.join(SRC, "test", "cache", "inputs")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def tune(model, out, *extra):
    p = subprocess.run([TUNE, model, "--shapes", os.path.join(INPUTS, "two_small.yaml"), "--budget", "120s",
                        "--threads", "1", "-o", out] + list(extra), capture_output=True, text=True)
    if p.returncode != 0:
        print("dscc-tune failed:", p.stderr)
        return None
    m = re.search(r"dscc-tune: (\d+) sizes measured, (\d+) reused from the cache", p.stderr)
    return (int(m.group(1)), int(m.group(2))) if m else None


def kernels(path):
    with open(path) as f:
        return yaml.safe_load(f)["kernels"]


tmp = tempfile.mkdtemp(prefix="dscc-tune-cache-")
try:
    cache = os.path.join(tmp, "cache")
    model = os.path.join(INPUTS, "two_kernels.dsc")
    first = tune(model, os.path.join(tmp, "a.yaml"), "--cache-dir", cache)
    ks = kernels(os.path.join(tmp, "a.yaml")) if first else []
    sizes = [len(k.get("measurements", [])) for k in ks]
    check(first is not None and len(ks) == 2 and all(sizes), "first run tunes both kernels (%s sizes)" % sizes)
    total = sum(sizes)
    check(first == (total, 0), "first run: %d sizes measured, none reused (%s)" % (total, first))

    second = tune(model, os.path.join(tmp, "b.yaml"), "--cache-dir", cache)
    check(second == (0, total), "second run: 0 measured, %d reused (%s)" % (total, second))
    check(open(os.path.join(tmp, "a.yaml"), "rb").read() == open(os.path.join(tmp, "b.yaml"), "rb").read(),
          "second run: the YAML is byte-identical")

    changed = os.path.join(tmp, "two_changed.dsc")
    text = open(model).read()
    # (An epsilon is a host value passed to the kernel: changing it changes no kernel.)
    open(changed, "w").write(text.replace("%z = softmax %x {axis = -1}", "%e = exp %x\n  %z = softmax %e {axis = -1}"))
    third = tune(changed, os.path.join(tmp, "c.yaml"), "--cache-dir", cache)
    kc = kernels(os.path.join(tmp, "c.yaml")) if third else []
    ln = [i for i, k in enumerate(ks) if k["fingerprint"] != (kc[i]["fingerprint"] if i < len(kc) else None)]
    check(len(ln) == 1, "the change alters exactly one kernel's fingerprint (%s)" % ln)
    if len(ln) == 1 and third:
        other = 1 - ln[0]
        check(third == (sizes[ln[0]], sizes[other]),
              "after changing one kernel: only its %d sizes measured, %d reused (%s)" % (sizes[ln[0]], sizes[other], third))
        check(kc[other] == ks[other], "the unchanged kernel's table and measurements are identical")

    fourth = tune(model, os.path.join(tmp, "d.yaml"), "--no-cache")
    check(fourth == (total, 0), "--no-cache measures everything (%s)" % (fourth,))
    p = subprocess.run([TUNE, model, "--shapes", os.path.join(INPUTS, "two_small.yaml"), "--budget", "120s",
                        "--threads", "2", "-o", os.path.join(tmp, "e.yaml"), "--cache-dir", cache],
                       capture_output=True, text=True)
    check(re.search(r"dscc-tune: %d sizes measured, 0 reused" % total, p.stderr) is not None,
          "another thread count is another machine: nothing reused")

    # 5. The progress bar: on a terminal (a pty) by default, never on a pipe.
    cmd = [TUNE, model, "--shapes", os.path.join(INPUTS, "two_small.yaml"), "--fake-timer", "--no-cache",
           "-o", os.path.join(tmp, "f.yaml")]
    master, slave = pty.openpty()
    pr = subprocess.Popen(cmd, stderr=slave, stdout=subprocess.DEVNULL)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    pr.wait()
    os.close(master)
    check(pr.returncode == 0 and re.search(rb"\[#+ *\] 6/6 .*ETA", got) is not None,
          "on a terminal: the progress bar with counts and ETA")
    p = subprocess.run(cmd, capture_output=True, text=True)
    check(p.returncode == 0 and "ETA" not in p.stderr, "stderr a pipe: no progress bar")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
