#!/usr/bin/python3
# ONNX shape rules with symbolic dims against NumPy: Slice bounds of every sign, TorchScript's expand(-1), GatherND/GatherElements.
"""Usage: check_shape_rules.py OUTDIR   (`dscc` on PATH)

1. slices.onnx: x f32[S, 5] sliced on axis 0 with starts and ends of every
   kind: constants >= 0 and < 0, symbolic ones that are >= 0 (S - 1 at
   S >= 1), may be negative (1 - S, S - 3), always <= 0 (-S: T5's `x[-seq:]`),
   beyond the end (S + 3), and the INT64 sentinels; steps 1 and 2. One output
   per (start, end, step); interpreted and compiled once (S in [1, 9]), run
   at S = 1, 2, 3, 4, 9, each output compared with Python's slicing (ONNX's
   rule for positive steps).
2. expand.onnx: TorchScript's `x.expand(-1, T)`:
   Expand(x, Where(Equal(s, -1), ConstantOfShape(Shape(s)), s)).
3. gathers.onnx: GatherND (batch_dims 0 and 1, negative indices) and
   GatherElements (axis 1, negative indices) against NumPy; an index out of
   range is a run-time error in the interpreter, not a read of another row.
Exits 1 on the first difference.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
I64_MAX, I64_MIN = 2**63 - 1, -2**63


def sh(cmd, ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if ok and p.returncode != 0:
        sys.exit("FAIL: %s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def save(name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="dscc-test")
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    return path


def const(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.int64), name)


def compare(tag, got, want):
    if got.shape != want.shape or not np.array_equal(got, want):
        sys.exit("FAIL %s: got %s %s, want %s %s" % (tag, got.shape, got.ravel()[:8], want.shape, want.ravel()[:8]))


def run_both(path, where, feeds, check, sizes):
    """Interprets at each size, compiles once, runs the library at each size; check(k, outdir) compares."""
    lib = path[:-5] + ".so"
    sh(["dscc", "compile", path, "-o", lib, "--no-cache"] + where)
    for k, feed in enumerate(sizes):
        args = []
        for name, arr in feeds(feed).items():
            f = os.path.join(out, "%s_%d.npy" % (name, k))
            np.save(f, arr)
            args += ["-i", "%s=%s" % (name, f)]
        for mode, model in (("interp", path), ("so", lib)):
            d = os.path.join(out, "%s_%s_%d" % (os.path.basename(path), mode, k))
            sh(["dscc", "run", model] + (where if mode == "interp" else []) + args + ["-o", d])
            check(feed, d, mode)


# 1. Slices. Each bound: (label, how to build it from S, its value at S).
bounds = [
    ("c2", lambda: ["c2"], lambda S: 2),
    ("cm2", lambda: ["cm2"], lambda S: -2),
    ("S-1", lambda: ["Sm1"], lambda S: S - 1),
    ("1-S", lambda: ["oneMinusS"], lambda S: 1 - S),
    ("S-3", lambda: ["Sm3"], lambda S: S - 3),
    ("-S", lambda: ["negS"], lambda S: -S),
    ("S+3", lambda: ["Sp3"], lambda S: S + 3),
    ("max", lambda: ["imax"], lambda S: I64_MAX),
    ("min", lambda: ["imin"], lambda S: I64_MIN),
]
nodes = [
    helper.make_node("Shape", ["x"], ["shape"]),
    helper.make_node("Slice", ["shape", "k0", "k1"], ["S"]),  # [S]
    helper.make_node("Sub", ["S", "k1"], ["Sm1"]),
    helper.make_node("Sub", ["k1", "S"], ["oneMinusS"]),
    helper.make_node("Sub", ["S", "k3"], ["Sm3"]),
    helper.make_node("Neg", ["S"], ["negS"]),
    helper.make_node("Add", ["S", "k3"], ["Sp3"]),
]
inits = [const("k0", [0]), const("k1", [1]), const("k3", [3]), const("c2", [2]), const("cm2", [-2]),
         const("imax", [I64_MAX]), const("imin", [I64_MIN]), const("axes0", [0]), const("step1", [1]),
         const("step2", [2])]
outputs, cases = [], []
for si, (sl, smk, sv) in enumerate(bounds):
    for ei, (el, emk, ev) in enumerate(bounds):
        for step in (1, 2):
            name = "y_%d_%d_%d" % (si, ei, step)
            nodes.append(helper.make_node("Slice", ["x", smk()[0], emk()[0], "axes0", "step%d" % step], [name]))
            outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [None, 5]))
            cases.append((name, sl, el, sv, ev, step))
path = save("slices", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S", 5])], outputs, inits)
rng = np.random.default_rng(3)
xs = {S: rng.standard_normal((S, 5)).astype(np.float32) for S in (1, 2, 3, 4, 9)}


def check_slices(S, d, mode):
    for name, sl, el, sv, ev, step in cases:
        want = xs[S][sv(S):ev(S):step]
        compare("slice x[%s:%s:%d] at S=%d (%s)" % (sl, el, step, S, mode), np.load(os.path.join(d, name + ".npy")), want)


run_both(path, ["--where", "S in [1, 9]"], lambda S: {"x": xs[S]}, check_slices, list(xs))
print("ok slices: %d cases x %d sizes, interpreted and compiled" % (len(cases), len(xs)))

# 2. TorchScript's expand(-1): x f32[B, 1] to [B, T], T read from y's shape.
nodes = [
    helper.make_node("Shape", ["y"], ["ys"]),
    helper.make_node("Slice", ["ys", "k1", "k2"], ["T"]),
    helper.make_node("Concat", ["km1", "T"], ["s"], axis=0),
    helper.make_node("Equal", ["s", "km1"], ["eq"]),
    helper.make_node("Shape", ["s"], ["ss"]),
    helper.make_node("ConstantOfShape", ["ss"], ["ones"], value=helper.make_tensor("v", TensorProto.INT64, [1], [1])),
    helper.make_node("Where", ["eq", "ones", "s"], ["w"]),
    helper.make_node("Expand", ["x", "w"], ["z"]),
]
path = save("expand", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 1]),
                              helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "T"])],
            [helper.make_tensor_value_info("z", TensorProto.FLOAT, [None, None])],
            [const("k1", [1]), const("k2", [2]), const("km1", [-1])])
imp = sh(["dscc", "import", path]).stdout
if "-> (z: f32[B, T])" not in imp:
    sys.exit("FAIL expand: the result type is not f32[B, T]:\n" + imp)
exs = {(B, T): (rng.standard_normal((B, 1)).astype(np.float32), rng.standard_normal((B, T)).astype(np.float32))
       for B, T in ((1, 1), (2, 3), (3, 1), (1, 7))}
run_both(path, [], lambda bt: {"x": exs[bt][0], "y": exs[bt][1]},
         lambda bt, d, mode: compare("expand at %s (%s)" % (bt, mode), np.load(os.path.join(d, "z.npy")),
                                     np.broadcast_to(exs[bt][0], exs[bt][1].shape)), list(exs))
print("ok expand(-1): folded to f32[B, T], %d sizes" % len(exs))

# 3. GatherND and GatherElements with indices from data (negative ones wrap once).
nodes = [
    helper.make_node("GatherND", ["data", "idx2"], ["nd0"]),                # data[i, j] rows: [N, 4]
    helper.make_node("GatherND", ["data", "idx1b"], ["nd1"], batch_dims=1),  # per batch: data[b, j]: [B, N, 4]
    helper.make_node("GatherElements", ["data", "ge"], ["el"], axis=1),     # [B, K, 4]
]
path = save("gathers", nodes, [
    helper.make_tensor_value_info("data", TensorProto.FLOAT, ["B", "T", 4]),
    helper.make_tensor_value_info("idx2", TensorProto.INT64, ["N", 2]),
    helper.make_tensor_value_info("idx1b", TensorProto.INT64, ["B", "N", 1]),
    helper.make_tensor_value_info("ge", TensorProto.INT64, ["B", "K", 4]),
], [helper.make_tensor_value_info(n, TensorProto.FLOAT, r) for n, r in (("nd0", [None, 4]), ("nd1", [None, None, 4]), ("el", [None, None, 4]))], [])


def gfeeds(size):
    B, T, N, K = size
    g = np.random.default_rng(B * 100 + T)
    data = g.standard_normal((B, T, 4)).astype(np.float32)
    idx2 = np.stack([g.integers(-B, B, N), g.integers(-T, T, N)], axis=1).astype(np.int64)
    idx1b = g.integers(-T, T, (B, N, 1)).astype(np.int64)
    ge = g.integers(-T, T, (B, K, 4)).astype(np.int64)
    return {"data": data, "idx2": idx2, "idx1b": idx1b, "ge": ge}


def check_gathers(size, d, mode):
    f = gfeeds(size)
    data = f["data"]
    compare("GatherND at %s (%s)" % (size, mode), np.load(os.path.join(d, "nd0.npy")),
            data[f["idx2"][:, 0], f["idx2"][:, 1]])
    want1 = np.stack([data[b][f["idx1b"][b, :, 0]] for b in range(data.shape[0])])
    compare("GatherND batch_dims=1 at %s (%s)" % (size, mode), np.load(os.path.join(d, "nd1.npy")), want1)
    compare("GatherElements at %s (%s)" % (size, mode), np.load(os.path.join(d, "el.npy")),
            np.take_along_axis(data, np.where(f["ge"] < 0, f["ge"] + data.shape[1], f["ge"]), axis=1))


gsizes = [(1, 1, 1, 1), (2, 5, 3, 2), (3, 7, 8, 7), (1, 9, 2, 4)]
run_both(path, [], gfeeds, check_gathers, gsizes)
# An index past the end is refused by the interpreter (a compiled gather clamps
# it into the dim, as docs/compile.md says of every gather).
f = gfeeds((2, 5, 3, 2))
f["idx2"][1, 1] = 5
for name, arr in f.items():
    np.save(os.path.join(out, "bad_%s.npy" % name), arr)
args = sum((["-i", "%s=%s" % (n, os.path.join(out, "bad_%s.npy" % n))] for n in f), [])
for model in (path,):
    p = sh(["dscc", "run", model] + args, ok=False)
    if p.returncode == 0 or "error" not in p.stderr:
        sys.exit("FAIL: GatherND index 5 of a dim of 5 was not refused by %s:\n%s%s" % (model, p.stdout, p.stderr))
print("ok gathers: GatherND (batch_dims 0, 1), GatherElements, %d sizes; out-of-range refused" % len(gsizes))

# 4. If with a condition known at import: a static dim compared with 5, and
# S >= 0 (always: a dim is never negative); the branches see the outer values.
then1 = helper.make_graph([helper.make_node("Neg", ["x"], ["t1"])], "then1", [],
                          [helper.make_tensor_value_info("t1", TensorProto.FLOAT, [None, 5])])
else1 = helper.make_graph([helper.make_node("Abs", ["x"], ["e1"])], "else1", [],
                          [helper.make_tensor_value_info("e1", TensorProto.FLOAT, [None, 5])])
then2 = helper.make_graph([helper.make_node("Add", ["x", "one"], ["t2"])], "then2", [],
                          [helper.make_tensor_value_info("t2", TensorProto.FLOAT, [None, 5])],
                          initializer=[numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one")])
nodes = [
    helper.make_node("Shape", ["x"], ["xs"]),
    helper.make_node("Slice", ["xs", "k1", "k2"], ["W"]),
    helper.make_node("Equal", ["W", "k5"], ["c1v"]),
    helper.make_node("Squeeze", ["c1v"], ["c1"]),
    helper.make_node("If", ["c1"], ["y1"], then_branch=then1, else_branch=else1),
    helper.make_node("Slice", ["xs", "k0", "k1"], ["S"]),
    helper.make_node("GreaterOrEqual", ["S", "k0"], ["c2v"]),
    helper.make_node("Squeeze", ["c2v"], ["c2"]),
    helper.make_node("If", ["c2"], ["y2"], then_branch=then2, else_branch=else1),
]
path = save("ifs", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S", 5])],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, 5]) for n in ("y1", "y2")],
            [const("k0", [0]), const("k1", [1]), const("k2", [2]), const("k5", [5])])
run_both(path, [], lambda S: {"x": xs[S]},
         lambda S, d, mode: (compare("If static (%s)" % mode, np.load(os.path.join(d, "y1.npy")), -xs[S]),
                             compare("If S >= 0 (%s)" % mode, np.load(os.path.join(d, "y2.npy")), xs[S] + 1)),
         [1, 3])
# A condition read from data is refused, naming the node.
nodes = [helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
         helper.make_node("Greater", ["sum", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then1, else_branch=else1, name="data_if")]
path = save("data_if", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S", 5])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 5])],
            [numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero")])
p = sh(["dscc", "import", path], ok=False)
if p.returncode != 1 or "node 'data_if' (If, opset 17" not in p.stderr or "must be known when importing" not in p.stderr:
    sys.exit("FAIL: a data-dependent If is not a located refusal:\n" + p.stderr)
print("ok If: conditions folded at import, a data-dependent one refused")

# 5. CumSum over integers (RoBERTa's position ids): every exclusive/reverse
# combination, i64 and i32, along a symbolic axis (one `cumsum` op each).
nodes, outs = [], []
for dt, name in ((TensorProto.INT64, "a64"), (TensorProto.INT32, "a32")):
    for excl in (0, 1):
        for rev in (0, 1):
            o = "cs_%s_%d_%d" % (name, excl, rev)
            nodes.append(helper.make_node("CumSum", [name, "axis1"], [o], exclusive=excl, reverse=rev))
            outs.append(helper.make_tensor_value_info(o, dt, [None, None]))
path = save("cumsum", nodes, [helper.make_tensor_value_info("a64", TensorProto.INT64, ["B", "S"]),
                              helper.make_tensor_value_info("a32", TensorProto.INT32, ["B", "S"])], outs,
            [const("axis1", 1)])
cfeeds = {}
for B, S in ((1, 1), (2, 2), (3, 5), (2, 17), (1, 40)):
    g = np.random.default_rng(B * 7 + S)
    cfeeds[(B, S)] = {"a64": g.integers(-1000, 1000, (B, S)).astype(np.int64),
                      "a32": g.integers(-1000, 1000, (B, S)).astype(np.int32)}


def cumsum_ref(a, excl, rev):
    v = a[:, ::-1] if rev else a
    c = np.cumsum(v, axis=1, dtype=a.dtype)
    if excl:
        c = np.concatenate([np.zeros_like(c[:, :1]), c[:, :-1]], axis=1)
    return c[:, ::-1] if rev else c


def check_cumsum(bs, d, mode):
    for name in ("a64", "a32"):
        for excl in (0, 1):
            for rev in (0, 1):
                o = "cs_%s_%d_%d" % (name, excl, rev)
                compare("CumSum %s exclusive=%d reverse=%d at %s (%s)" % (name, excl, rev, bs, mode),
                        np.load(os.path.join(d, o + ".npy")), cumsum_ref(cfeeds[bs][name], excl, rev))


run_both(path, ["--where", "S in [1, 40]"], lambda bs: cfeeds[bs], check_cumsum, list(cfeeds))
# A cumsum op of the IR (a running sum, docs/ir.md): an axis without a bound needs none.
p = sh(["dscc", "import", path], ok=False)
if p.returncode != 0 or p.stdout.count("= cumsum ") != 8:
    sys.exit("FAIL: an integer CumSum over an unbounded dim does not import as 8 cumsum ops:\n" + p.stderr + p.stdout)
print("ok CumSum over integers: exclusive x reverse, i64 and i32, %d sizes; unbounded axis ok" % len(cfeeds))

# 6. Opset 23's RMSNormalization and RotaryEmbedding (halves and interleaved,
# partial rotation, position_ids, rank 3 and 4), against NumPy from the spec.
H, D, RD, P = 2, 8, 6, 40
g23 = np.random.default_rng(23)
scale = g23.standard_normal(D * H).astype(np.float32)
cosc = g23.standard_normal((P, RD // 2)).astype(np.float32)
sinc = g23.standard_normal((P, RD // 2)).astype(np.float32)
cosf = g23.standard_normal((P, D // 2)).astype(np.float32)
sinf = g23.standard_normal((P, D // 2)).astype(np.float32)
nodes = [helper.make_node("RMSNormalization", ["h", "scale"], ["rms"], epsilon=1e-3),
         helper.make_node("RotaryEmbedding", ["q4", "cosc", "sinc", "pos"], ["rot4"], rotary_embedding_dim=RD),
         helper.make_node("RotaryEmbedding", ["q4", "cosc", "sinc", "pos"], ["rot4i"], rotary_embedding_dim=RD,
                          interleaved=1),
         helper.make_node("RotaryEmbedding", ["h", "cosf", "sinf", "pos"], ["rot3"], num_heads=H)]
g = helper.make_graph(nodes, "opset23", [
    helper.make_tensor_value_info("h", TensorProto.FLOAT, ["B", "S", H * D]),
    helper.make_tensor_value_info("q4", TensorProto.FLOAT, ["B", H, "S", D]),
    helper.make_tensor_value_info("pos", TensorProto.INT64, ["B", "S"])],
    [helper.make_tensor_value_info("rms", TensorProto.FLOAT, [None, None, H * D]),
     helper.make_tensor_value_info("rot4", TensorProto.FLOAT, [None, H, None, D]),
     helper.make_tensor_value_info("rot4i", TensorProto.FLOAT, [None, H, None, D]),
     helper.make_tensor_value_info("rot3", TensorProto.FLOAT, [None, None, H * D])],
    initializer=[numpy_helper.from_array(a, nm) for a, nm in
                 ((scale, "scale"), (cosc, "cosc"), (sinc, "sinc"), (cosf, "cosf"), (sinf, "sinf"))])
path = os.path.join(out, "opset23.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]), path)


def rope(x4, cos, sin, pos, rd, inter):  # x4 [b, heads, s, d]
    t = x4.transpose(0, 2, 1, 3).astype(np.float64)
    c, s = cos[pos][:, :, None, :], sin[pos][:, :, None, :]
    xr = t[..., :rd]
    x1, x2 = (xr[..., 0::2], xr[..., 1::2]) if inter else (xr[..., :rd // 2], xr[..., rd // 2:])
    re, im = c * x1 - s * x2, s * x1 + c * x2
    rot = np.stack([re, im], axis=-1).reshape(xr.shape) if inter else np.concatenate([re, im], axis=-1)
    return np.concatenate([rot, t[..., rd:]], axis=-1).transpose(0, 2, 1, 3)


ofeeds = {}
for B, S in ((1, 1), (2, 5), (3, 17)):
    gg = np.random.default_rng(B * 31 + S)
    ofeeds[(B, S)] = {"h": gg.standard_normal((B, S, H * D)).astype(np.float32),
                      "q4": gg.standard_normal((B, H, S, D)).astype(np.float32),
                      "pos": gg.integers(0, P, (B, S)).astype(np.int64)}


def close(tag, got, want):
    if got.shape != want.shape or not np.allclose(got, want, atol=1e-5, rtol=1e-5):
        sys.exit("FAIL %s: max error %s" % (tag, np.abs(got - want).max() if got.shape == want.shape else got.shape))


def check_opset23(bs, d, mode):
    f = ofeeds[bs]
    h = f["h"].astype(np.float64)
    close("RMSNormalization %s (%s)" % (bs, mode), np.load(os.path.join(d, "rms.npy")),
          h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-3) * scale)
    close("RotaryEmbedding halves %s (%s)" % (bs, mode), np.load(os.path.join(d, "rot4.npy")),
          rope(f["q4"], cosc, sinc, f["pos"], RD, False))
    close("RotaryEmbedding interleaved %s (%s)" % (bs, mode), np.load(os.path.join(d, "rot4i.npy")),
          rope(f["q4"], cosc, sinc, f["pos"], RD, True))
    B, S = bs
    h4 = f["h"].reshape(B, S, H, D).transpose(0, 2, 1, 3)
    close("RotaryEmbedding rank 3 %s (%s)" % (bs, mode), np.load(os.path.join(d, "rot3.npy")),
          rope(h4, cosf, sinf, f["pos"], D, False).transpose(0, 2, 1, 3).reshape(B, S, H * D))


run_both(path, [], lambda bs: ofeeds[bs], check_opset23, list(ofeeds))
print("ok opset 23: RMSNormalization, RotaryEmbedding (halves, interleaved, partial, rank 3 and 4), %d sizes" % len(ofeeds))

# 7. Opset 23's Attention: 4D with grouped-query heads, a past key/value
# (present outputs) and the causal mask aligned to the end; 3D with a boolean
# mask that masks whole rows (their output is 0), softcap and a scale; 3D with
# an additive [S, S] mask. Against NumPy from the spec, in float64.
nodes = [
    helper.make_node("Attention", ["q4", "k4", "v4", "", "pk", "pv"], ["y4", "presk", "presv"], is_causal=1),
    helper.make_node("Attention", ["q3", "k3", "v3", "bmask"], ["y3"], q_num_heads=2, kv_num_heads=2,
                     softcap=2.0, scale=0.3),
    helper.make_node("Attention", ["q3", "k3", "v3", "fmask"], ["y3f"], q_num_heads=2, kv_num_heads=2),
]
F = TensorProto.FLOAT
g = helper.make_graph(nodes, "attention", [
    helper.make_tensor_value_info("q4", F, ["B", 4, "S", 8]), helper.make_tensor_value_info("k4", F, ["B", 2, "S", 8]),
    helper.make_tensor_value_info("v4", F, ["B", 2, "S", 8]), helper.make_tensor_value_info("pk", F, ["B", 2, "P", 8]),
    helper.make_tensor_value_info("pv", F, ["B", 2, "P", 8]), helper.make_tensor_value_info("q3", F, ["B", "S", 16]),
    helper.make_tensor_value_info("k3", F, ["B", "S", 16]), helper.make_tensor_value_info("v3", F, ["B", "S", 16]),
    helper.make_tensor_value_info("bmask", TensorProto.BOOL, ["B", 1, "S", "S"]),
    helper.make_tensor_value_info("fmask", F, ["S", "S"])],
    [helper.make_tensor_value_info("y4", F, [None, 4, None, 8]),
     helper.make_tensor_value_info("presk", F, [None, 2, None, 8]),
     helper.make_tensor_value_info("presv", F, [None, 2, None, 8]),
     helper.make_tensor_value_info("y3", F, [None, None, 16]), helper.make_tensor_value_info("y3f", F, [None, None, 16])])
path = os.path.join(out, "attention.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]), path)


def attention_ref(Q, K, V, mask=None, pk=None, pv=None, causal=False, heads=None, scale=None, cap=0.0):
    rank = Q.ndim
    if rank == 3:
        Q, K, V = (x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(0, 2, 1, 3) for x in (Q, K, V))
    Q, K, V = (x.astype(np.float64) for x in (Q, K, V))
    if pk is not None:
        K, V = np.concatenate([pk, K], 2), np.concatenate([pv, V], 2)
    rep = Q.shape[1] // K.shape[1]
    s = (Q * (1 / np.sqrt(Q.shape[3]) if scale is None else scale)) @ np.repeat(K, rep, 1).transpose(0, 1, 3, 2)
    if cap:
        s = np.tanh(s / cap) * cap
    sq, kv = s.shape[-2:]
    bias = None
    if mask is not None:
        bias = np.where(mask, 0.0, -np.inf) if mask.dtype == np.bool_ else mask.astype(np.float64)
    if causal:
        off = pk.shape[2] if pk is not None else 0
        cm = np.where(np.arange(kv)[None, :] <= np.arange(sq)[:, None] + off, 0.0, -np.inf)
        bias = cm if bias is None else bias + cm
    logits = s if bias is None else s + bias
    top = logits.max(-1, keepdims=True)
    e = np.exp(logits - np.where(np.isneginf(top), 0, top))
    tot = e.sum(-1, keepdims=True)
    p = e / np.where(tot == 0, 1, tot)
    if bias is not None:
        p = np.where(np.isneginf(np.broadcast_to(bias, logits.shape).max(-1, keepdims=True)), 0, p)
    y = p @ np.repeat(V, rep, 1)
    if rank == 3:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    return y, K, V


afeeds = {}
for B, S, P in ((1, 1, 1), (2, 5, 3), (3, 7, 6)):
    ga = np.random.default_rng(B * 100 + S * 10 + P)
    f = {n: ga.standard_normal(sh).astype(np.float32) for n, sh in
         (("q4", (B, 4, S, 8)), ("k4", (B, 2, S, 8)), ("v4", (B, 2, S, 8)), ("pk", (B, 2, P, 8)), ("pv", (B, 2, P, 8)),
          ("q3", (B, S, 16)), ("k3", (B, S, 16)), ("v3", (B, S, 16)), ("fmask", (S, S)))}
    bm = ga.random((B, 1, S, S)) < 0.6
    bm[0, 0, 0, :] = False  # a row masked whole: its output is 0
    f["bmask"] = bm
    afeeds[(B, S, P)] = f


def check_attention(size, d, mode):
    f = afeeds[size]
    y4, pk4, pv4 = attention_ref(f["q4"], f["k4"], f["v4"], pk=f["pk"], pv=f["pv"], causal=True)
    close("Attention GQA causal past %s (%s)" % (size, mode), np.load(os.path.join(d, "y4.npy")), y4)
    close("Attention present_key %s (%s)" % (size, mode), np.load(os.path.join(d, "presk.npy")), pk4)
    close("Attention present_value %s (%s)" % (size, mode), np.load(os.path.join(d, "presv.npy")), pv4)
    close("Attention bool mask softcap %s (%s)" % (size, mode), np.load(os.path.join(d, "y3.npy")),
          attention_ref(f["q3"], f["k3"], f["v3"], mask=f["bmask"], heads=2, scale=0.3, cap=2.0)[0])
    close("Attention additive mask %s (%s)" % (size, mode), np.load(os.path.join(d, "y3f.npy")),
          attention_ref(f["q3"], f["k3"], f["v3"], mask=f["fmask"], heads=2)[0])


run_both(path, [], lambda size: afeeds[size], check_attention, list(afeeds))
print("ok opset 23: Attention (GQA, causal with past, bool and additive masks, masked rows, softcap), %d sizes"
      % len(afeeds))

# 7. torch.export's view(b, c, -1) as a computed shape: [B, C, (B*C*H*W) // (B*C)] (numel over the kept dims' product;
# SegFormer's dynamo export). The divisor is a size product: folded when the facts prove it positive (B >= 1), refused
# at the Reshape without them (at B = 0 the model divides by zero).
nodes = [helper.make_node("Shape", ["x"], ["xs"])]
for i, d in enumerate("BCHW"):
    nodes.append(helper.make_node("Slice", ["xs", "d%d" % i, "d%d" % (i + 1)], [d]))
nodes += [
    helper.make_node("Mul", ["B", "C"], ["BC"]), helper.make_node("Mul", ["BC", "H"], ["BCH"]),
    helper.make_node("Mul", ["BCH", "W"], ["BCHW"]), helper.make_node("Div", ["BCHW", "BC"], ["rest"]),
    helper.make_node("Concat", ["B", "C", "rest"], ["vshape"], axis=0),
    helper.make_node("Reshape", ["x", "vshape"], ["v"], name="view_numel"),
]
path = save("view_numel", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 3, "H", "W"])],
            [helper.make_tensor_value_info("v", TensorProto.FLOAT, [None, None, None])],
            [const("d%d" % i, [i]) for i in range(5)])
where = ["--where", "B in [1, 4]", "--where", "H in [1, 9]", "--where", "W in [1, 9]"]
imp = sh(["dscc", "import", path] + where).stdout
if "-> (v: f32[B, 3, H*W])" not in imp:
    sys.exit("FAIL view_numel: the result type is not f32[B, 3, H*W]:\n" + imp)
p = sh(["dscc", "import", path], ok=False)
if p.returncode == 0 or "view_numel" not in p.stderr or "--where 'B >= 1'" not in p.stderr:
    sys.exit("FAIL view_numel: without B >= 1 the import must refuse at the Reshape, saying which fact decides it: "
             "exit %d\n%s" % (p.returncode, p.stderr))
vxs = {s: rng.standard_normal((s[0], 3, s[1], s[2])).astype(np.float32) for s in ((1, 1, 1), (2, 5, 3), (4, 9, 7))}
run_both(path, where, lambda s: {"x": vxs[s]},
         lambda s, d, mode: compare("view_numel at %s (%s)" % (s, mode), np.load(os.path.join(d, "v.npy")),
                                    vxs[s].reshape(s[0], 3, -1)), list(vxs))
print("ok view(b, c, -1) as numel // (b * c): folded under B >= 1, refused at the node without it (naming the fact), "
      "%d sizes" % len(vxs))

# 8. TorchScript's F.pad(x, (1, 2, 3, 0)): the pads reversed pairwise as shape data of rank 2 (Concat with zeros,
# Reshape to [-1, 2], Slice with step -1, Transpose, Reshape to [-1], Cast), folded when importing: Pad needs them.
nodes = [
    helper.make_node("ConstantOfShape", ["k2"], ["zeros"], value=helper.make_tensor("v", TensorProto.INT64, [1], [0])),
    helper.make_node("Concat", ["tpads", "zeros"], ["flat"], axis=0),
    helper.make_node("Reshape", ["flat", "pairs"], ["m"]),
    helper.make_node("Slice", ["m", "km1", "kmin", "k0", "km1"], ["rev"]),
    helper.make_node("Transpose", ["rev"], ["tr"], perm=[1, 0]),
    helper.make_node("Reshape", ["tr", "km1"], ["pads64"]),
    helper.make_node("Cast", ["pads64"], ["pads"], to=TensorProto.INT64),
    helper.make_node("Pad", ["x", "pads", "zero"], ["p"], name="pad"),
]
path = save("torch_pad", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", 4])],
            [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, None, None])],
            [const("k2", [2]), const("tpads", [1, 2, 3, 0]), const("pairs", [-1, 2]), const("km1", [-1]),
             const("kmin", [-2**63 + 1]), const("k0", [0]), numpy_helper.from_array(np.array(0, np.float32), "zero")])
imp = sh(["dscc", "import", path]).stdout
if "-> (p: f32[B, S+3, 7])" not in imp:
    sys.exit("FAIL torch_pad: the result type is not f32[B, S+3, 7]:\n" + imp)
pxs = {s: rng.standard_normal((s[0], s[1], 4)).astype(np.float32) for s in ((1, 1), (2, 5), (3, 2))}
run_both(path, ["--where", "B in [1, 3]", "--where", "S in [1, 5]"], lambda s: {"x": pxs[s]},
         lambda s, d, mode: compare("torch_pad at %s (%s)" % (s, mode), np.load(os.path.join(d, "p.npy")),
                                    np.pad(pxs[s], ((0, 0), (3, 0), (1, 2)))), list(pxs))
print("ok F.pad's pads reversed as a [-1, 2] matrix (Reshape, Slice step -1, Transpose) folded, %d sizes" % len(pxs))
