#!/usr/bin/python3
"""The compile cache (docs/compile.md, "The compile cache"): hits and misses, byte-identical artifacts, sharing, corruption, eviction.

Usage: /usr/bin/python3 test/cache/compile_cache_test.py PATH/TO/dscc SOURCE_DIR

Every case uses its own cache folder under a temporary directory:

1. hit/miss counts (--cache-stats) on a first and a second compile of
   bert_layer: the first misses the library and every kernel, the second hits
   the library and compiles nothing; the bytes are equal;
2. byte-identical artifacts with and without the cache, for the .so, -c
   objects and every --emit kind (cold cache, warm cache, --no-cache), for
   every workload, at -O2 and -O0 -g;
3. kernels shared between artifacts: -c after .so reuses every kernel; a
   model that differs in one op reuses the others;
4. four concurrent compiles of the same model sharing one cold cache: all
   succeed with identical outputs, no temporary files are left;
5. corrupt entries (a flipped byte, a truncated file, an empty file) are
   detected, counted, rebuilt, and the artifact is still identical;
6. a size limit: compiling every workload under a small --cache-max-size
   evicts, keeps the folder under the limit, and the outputs stay identical;
7. an unusable cache folder warns and compiles without the cache; a config
   file sets the folder; a bad config file is a located error;
8. the progress line: shown with --progress=always and on a terminal (a
   pty), absent with --progress=never and when stderr is a pipe;
9. weights (a `constant file(...)` .npy changed, the program not) are in
   the library's key: a new library, equal to the uncached one;
10. a --tuning compile (dscc-tune beside dscc) is identical cold, warm and
    without the cache.

Exits 1 on any failure.
"""
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile

DSCC, SRC = sys.argv[1], sys.argv[2]
WORK = os.path.join(SRC, "bench", "workloads")
MODELS = sorted(f for f in os.listdir(WORK) if f.endswith(".dsc"))
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(args, **kw):
    p = subprocess.run([DSCC] + args, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        print("command failed:", " ".join([DSCC] + args), "\n", p.stderr)
    return p


def stats(stderr):
    """{kind: (hits, misses, corrupt, stored)} from --cache-stats lines."""
    out = {}
    for m in re.finditer(r"dscc: cache: (\w+): (\d+) hits, (\d+) misses, (\d+) corrupt, (\d+) stored", stderr):
        out[m.group(1)] = tuple(int(m.group(i)) for i in range(2, 6))
    return out


def read(path):
    with open(path, "rb") as f:
        return f.read()


def entries(cache, prefix=""):
    d = os.path.join(cache, "v1")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith(prefix) and not f.startswith("."))


def folder_bytes(cache):
    return sum(os.path.getsize(p) for p in entries(cache))


tmp = tempfile.mkdtemp(prefix="dscc-cache-test-")
try:
    bert = os.path.join(WORK, "bert_layer.dsc")
    # Second folders for outputs that must equal one of the same name.
    os.makedirs(os.path.join(tmp, "e1"))
    os.makedirs(os.path.join(tmp, "e2"))
    # 1. First and second compile.
    c1 = os.path.join(tmp, "c1")
    # The same file name in two folders: a library's SONAME is its name, part of its key.
    for d in ("first", "second", "nocache"):
        os.makedirs(os.path.join(tmp, d))
    a_so, b_so = os.path.join(tmp, "first", "m.so"), os.path.join(tmp, "second", "m.so")
    a = run(["compile", bert, "-o", a_so, "--cache-dir", c1, "--cache-stats"])
    s = stats(a.stderr)
    check(a.returncode == 0, "first compile succeeds")
    check(s.get("so") == (0, 1, 0, 1), "first compile: the library misses and is stored (%s)" % (s.get("so"),))
    nk = s.get("kernel", (0, 0, 0, 0))[1]
    check(nk > 0 and s["kernel"] == (0, nk, 0, nk), "first compile: every kernel misses and is stored (%d)" % nk)
    check(s.get("host") == (0, 1, 0, 1), "first compile: the host code misses")
    b = run(["compile", bert, "-o", b_so, "--cache-dir", c1, "--cache-stats"])
    s = stats(b.stderr)
    check(s.get("so") == (1, 0, 0, 0), "second compile: the library hits (%s)" % (s.get("so"),))
    check("kernel" not in s and "host" not in s, "second compile: no kernel compiled or looked up")
    check(read(a_so) == read(b_so), "second compile: identical bytes")
    run(["compile", bert, "-o", os.path.join(tmp, "nocache", "m.so"), "--no-cache"])
    check(read(a_so) == read(os.path.join(tmp, "nocache", "m.so")), "--no-cache: identical bytes")
    r = subprocess.run([DSCC, "run", b_so, "--random", "--dim", "B=2", "--dim", "S=33", "--check"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and "check" in r.stdout, "the cached library runs and agrees with the interpreter")

    # 2. Byte-identical with and without the cache, every workload, every kind.
    kinds = "so,obj,header,ir,fused-ir,llvm,asm"
    for flags in ([], ["-O0", "-g"]):
        for model in MODELS:
            path = os.path.join(WORK, model)
            stem = model[:-4]
            cache = os.path.join(tmp, "c2" + "".join(flags))
            outs = {}
            for mode, extra in (("cold", ["--cache-dir", cache]), ("warm", ["--cache-dir", cache]),
                                ("none", ["--no-cache"])):
                d = os.path.join(tmp, "k", stem + "".join(flags), mode)
                os.makedirs(d)
                p = run(["compile", path, "--emit=" + kinds, "-o", os.path.join(d, stem)] + flags + extra)
                c = run(["compile", path, "-c", "-o", os.path.join(d, "c.o")] + flags + extra)
                outs[mode] = {f: read(os.path.join(d, f)) for f in sorted(os.listdir(d))} if p.returncode == 0 and c.returncode == 0 else None
            same = outs["cold"] is not None and outs["cold"] == outs["warm"] == outs["none"] and len(outs["cold"]) == 8
            check(same, "%s %s: .so, -c, --emit=%s identical cold, warm and without the cache" % (model, " ".join(flags), kinds))

    # 3. Kernels shared between artifacts.
    o = run(["compile", bert, "-c", "-o", os.path.join(tmp, "a.o"), "--cache-dir", c1, "--cache-stats"])
    s = stats(o.stderr)
    check(s.get("obj") == (0, 1, 0, 1) and s.get("kernel") == (nk, 0, 0, 0) and s.get("host") == (1, 0, 0, 0),
          "-c after .so: every kernel and the host code reused (%s)" % (s,))
    text = open(bert).read()
    # (Scalar constants and epsilons are host values passed to kernels, so the
    # change must be to an op: the FFN's activation.)
    changed = text.replace(" = gelu ", " = tanh ", 1)
    check(changed != text, "the changed model differs in one op")
    cpath = os.path.join(tmp, "bert_changed.dsc")
    open(cpath, "w").write(changed)
    p = run(["compile", cpath, "-o", os.path.join(tmp, "changed.so"), "--cache-dir", c1, "--cache-stats"])
    s = stats(p.stderr)
    hits, misses = s.get("kernel", (0, 0, 0, 0))[:2]
    check(p.returncode == 0 and hits > 0 and 0 < misses < nk,
          "a model with one changed op reuses the other kernels (%d hits, %d misses)" % (hits, misses))
    p = run(["compile", cpath, "-o", os.path.join(tmp, "e1", "changed.so"), "--no-cache"])
    check(read(os.path.join(tmp, "changed.so")) == read(os.path.join(tmp, "e1", "changed.so")),
          "the changed model from shared kernels equals its compile without the cache")

    # 4. Concurrent compiles sharing a cold cache.
    c4 = os.path.join(tmp, "c4")
    ref = read(a_so)
    for rnd in range(2):
        for i in range(4):
            os.makedirs(os.path.join(tmp, "p%d_%d" % (rnd, i)))
        procs = [subprocess.Popen([DSCC, "compile", bert, "-o", os.path.join(tmp, "p%d_%d" % (rnd, i), "m.so"),
                                   "--cache-dir", c4, "-j", "1"], stderr=subprocess.PIPE, text=True) for i in range(4)]
        errs = [pr.communicate()[1] for pr in procs]
        ok = all(pr.returncode == 0 for pr in procs)
        check(ok and all(read(os.path.join(tmp, "p%d_%d" % (rnd, i), "m.so")) == ref for i in range(4)),
              "round %d: 4 concurrent compiles sharing a cache all succeed with identical output" % rnd)
        check(not any("warning" in e for e in errs), "round %d: no warnings from concurrent use" % rnd)
    left = [f for f in os.listdir(os.path.join(c4, "v1")) if f.startswith(".")]
    check(not left, "no temporary files left in the cache folder (%s)" % left)

    # 5. Corrupt entries: flipped byte, truncated, empty.
    c5 = os.path.join(tmp, "c5")
    ln = os.path.join(WORK, "layer_norm.dsc")
    run(["compile", ln, "-c", "-o", os.path.join(tmp, "ln_ref.o"), "--cache-dir", c5])
    ref = read(os.path.join(tmp, "ln_ref.o"))
    for how in ("flip", "truncate", "empty"):
        victims = entries(c5)
        for e in victims:
            data = bytearray(read(e))
            if how == "flip":
                data[len(data) // 2] ^= 0x40
            elif how == "truncate":
                data = data[: len(data) - 7]
            else:
                data = b""
            open(e, "wb").write(bytes(data))
        p = run(["compile", ln, "-c", "-o", os.path.join(tmp, "ln_%s.o" % how), "--cache-dir", c5, "--cache-stats"])
        s = stats(p.stderr)
        corrupt = sum(v[2] for v in s.values())
        check(p.returncode == 0 and corrupt >= 2 and s["obj"][2] == 1,
              "%s: corrupt entries detected (%d: %s)" % (how, corrupt, s))
        check("is corrupt" in p.stderr, "%s: a warning names the corrupt entry" % how)
        check(read(os.path.join(tmp, "ln_%s.o" % how)) == ref, "%s: rebuilt, the object is identical" % how)
        p = run(["compile", ln, "-c", "-o", os.path.join(tmp, "ln_again.o"), "--cache-dir", c5, "--cache-stats"])
        check(stats(p.stderr).get("obj") == (1, 0, 0, 0), "%s: the rebuilt entry hits next time" % how)

    # 6. A full cache evicts least recently used entries and stays under the limit.
    c6 = os.path.join(tmp, "c6")
    limit = 160 * 1024
    evicted = 0
    for model in MODELS + MODELS:
        path = os.path.join(WORK, model)
        p = run(["compile", path, "-o", os.path.join(tmp, "e1", "e.so"), "--cache-dir", c6, "--cache-max-size", "160K",
                 "--cache-stats"])
        m = re.search(r"(\d+) evicted", p.stderr)
        evicted += int(m.group(1)) if m else 0
        check(p.returncode == 0 and folder_bytes(c6) <= limit,
              "%s under a 160K limit: folder %d bytes" % (model, folder_bytes(c6)))
        q = run(["compile", path, "-o", os.path.join(tmp, "e2", "e.so"), "--no-cache"])
        check(read(os.path.join(tmp, "e1", "e.so")) == read(os.path.join(tmp, "e2", "e.so")), "%s: identical under eviction" % model)
    check(evicted > 0, "entries were evicted (%d)" % evicted)
    # LRU: the entry used last survives a compile that evicts.
    run(["compile", ln, "-o", os.path.join(tmp, "lru.so"), "--cache-dir", c6, "--cache-max-size", "160K"])
    p = run(["compile", ln, "-o", os.path.join(tmp, "lru.so"), "--cache-dir", c6, "--cache-max-size", "160K", "--cache-stats"])
    check(stats(p.stderr).get("so") == (1, 0, 0, 0), "the most recently used library is still cached")

    # 7. An unusable folder, the config file.
    blocker = os.path.join(tmp, "not_a_dir")
    open(blocker, "w").write("x")
    p = run(["compile", ln, "-o", os.path.join(tmp, "e1", "lru.so"), "--cache-dir", os.path.join(blocker, "c")])
    check(p.returncode == 0 and "warning" in p.stderr and "without the cache" in p.stderr,
          "an unusable cache folder warns and compiles (%s)" % p.stderr.strip())
    check(read(os.path.join(tmp, "e1", "lru.so")) == read(os.path.join(tmp, "lru.so")), "... with the same output")
    cfg = os.path.join(tmp, "config.yaml")
    c7 = os.path.join(tmp, "c7")
    open(cfg, "w").write("# dscc settings\ncache:\n  dir: %s\n  max_size: 64M\nprogress: never\n" % c7)
    p = run(["compile", ln, "-o", os.path.join(tmp, "cfg.so"), "--config", cfg, "--cache-stats"])
    check(p.returncode == 0 and os.path.isdir(os.path.join(c7, "v1")) and "limit 67108864" in p.stderr,
          "the config file sets the folder and the limit")
    open(cfg, "w").write("cache:\n  dir: %s\n  max_sise: 64M\n" % c7)
    p = run(["compile", ln, "-o", os.path.join(tmp, "cfg.so"), "--config", cfg])
    check(p.returncode != 0 and re.search(r"config.yaml:3:\d+: error: unknown key 'cache.max_sise'", p.stderr),
          "a misspelt key is a located error (%s)" % p.stderr.strip())
    open(cfg, "w").write("cache: [1, 2\n")
    p = run(["compile", ln, "-o", os.path.join(tmp, "cfg.so"), "--config", cfg])
    check(p.returncode != 0 and re.search(r"config.yaml:\d+:\d+: error: ", p.stderr), "bad YAML is a located error")
    p = run(["compile", ln, "-o", os.path.join(tmp, "cfg.so"), "--no-cache", "--cache-max-size", "lots"])
    check(p.returncode == 2 and "--cache-max-size 'lots' is not a size" in p.stderr, "a bad --cache-max-size is a usage error")

    # 8. The progress line.
    cold = ["--no-cache"]
    p = run(["compile", bert, "-o", os.path.join(tmp, "pr.so"), "--progress=always"] + cold)
    check(re.search(r"dscc: compiling bert_layer.dsc: (\d+)/\1 \(100%\)", p.stderr) is not None,
          "--progress=always: a line with counts and ETA reaching N/N")
    p = run(["compile", bert, "-o", os.path.join(tmp, "pr.so"), "--progress=never"] + cold)
    check("compiling" not in p.stderr, "--progress=never: no line")
    p = run(["compile", bert, "-o", os.path.join(tmp, "pr.so")] + cold)
    check("compiling" not in p.stderr, "auto, stderr a pipe: no line")
    master, slave = pty.openpty()
    pr = subprocess.Popen([DSCC, "compile", bert, "-o", os.path.join(tmp, "pr.so")] + cold, stderr=slave,
                          stdout=subprocess.DEVNULL)
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
    check(pr.returncode == 0 and b"dscc: compiling bert_layer.dsc:" in got and b"ETA" in got,
          "auto, stderr a terminal: the progress line")

    # 9. Weights are in the artifact's key: a changed .npy (same program text) is a new library, never a stale one.
    import numpy as np
    wdir = os.path.join(tmp, "w")
    os.makedirs(wdir)
    inputs = os.path.join(SRC, "test", "compile", "inputs")
    shutil.copy(os.path.join(inputs, "file_constant.dsc"), wdir)
    np.save(os.path.join(wdir, "bias3.npy"), np.array([1, 2, 3], np.float32))
    prog = os.path.join(wdir, "file_constant.dsc")
    c9 = os.path.join(tmp, "c9")
    outs = {}
    for tag in ("one", "two"):
        if tag == "two":
            np.save(os.path.join(wdir, "bias3.npy"), np.array([4, 5, 6], np.float32))
        for mode in ("cache", "none"):
            d = os.path.join(tmp, "w_" + tag + "_" + mode)
            os.makedirs(d)
            extra = ["--cache-dir", c9, "--cache-stats"] if mode == "cache" else ["--no-cache"]
            p = run(["compile", prog, "-o", os.path.join(d, "m.so")] + extra)
            if mode == "cache" and tag == "two":
                s = stats(p.stderr)
                check(s.get("so", (0, 0))[:2] == (0, 1) and s.get("kernel", (0, 1))[1] == 0,
                      "changed weights: the library misses, the kernels hit (%s)" % s)
            outs[(tag, mode)] = read(os.path.join(d, "m.so"))
        r = subprocess.run([DSCC, "run", os.path.join(tmp, "w_" + tag + "_cache", "m.so"), "--random", "--dim", "N=3",
                            "--check"], capture_output=True, text=True)
        check(r.returncode == 0 and "check: ok" in r.stdout, "%s weights: the cached library agrees with the interpreter" % tag)
    check(outs[("one", "cache")] == outs[("one", "none")] and outs[("two", "cache")] == outs[("two", "none")],
          "with changed weights, cached and uncached libraries are identical")
    check(outs[("one", "cache")] != outs[("two", "cache")], "the libraries of the two weights differ")

    # 10. --tuning: tuned kernels (every configuration's versions) through the cache, identical to uncached.
    tune = os.path.join(os.path.dirname(os.path.abspath(DSCC)), "dscc-tune")
    tyaml = os.path.join(tmp, "t.yaml")
    t = subprocess.run([tune, ln, "--shapes", os.path.join(SRC, "test", "tuner", "inputs", "ln_small.yaml"), "--fake-timer",
                        "--no-cache", "-o", tyaml], capture_output=True, text=True)
    check(t.returncode == 0, "dscc-tune wrote a tuning file")
    c10 = os.path.join(tmp, "c10")
    tuned = {}
    for mode, extra in (("cold", ["--cache-dir", c10]), ("warm", ["--cache-dir", c10]), ("none", ["--no-cache"])):
        d = os.path.join(tmp, "t_" + mode)
        os.makedirs(d)
        p = run(["compile", ln, "--tuning", tyaml, "-o", os.path.join(d, "ln.so")] + extra)
        tuned[mode] = read(os.path.join(d, "ln.so")) if p.returncode == 0 else None
    check(tuned["cold"] is not None and tuned["cold"] == tuned["warm"] == tuned["none"],
          "--tuning: identical cold, warm and without the cache")
    r = subprocess.run([DSCC, "run", os.path.join(tmp, "t_warm", "ln.so"), "--random", "--dim", "N=7", "--dim", "D=256",
                        "--check"], capture_output=True, text=True)
    check(r.returncode == 0 and "check: ok" in r.stdout, "--tuning: the cached library agrees with the interpreter")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
