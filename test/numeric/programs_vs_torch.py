#!/usr/bin/python3
"""Hand-written programs of the forms users write, compiled and compared with PyTorch (an oracle independent of dscc).

Usage: /usr/bin/python3 test/numeric/programs_vs_torch.py PATH/TO/dscc [-v]

The random batch (random_programs.py) checks compiled code against the
reference interpreter; this checks both against PyTorch (Debian's
python3-torch) on the kernel forms issue 12 named: data movement inside
kernels (slices with steps, reversed axes, concat, gather with negative
indices, iota masks), reductions off the last axis and over axis sets,
softmax / log_softmax / layer_norm on any axis, argmax (first index on
ties), transposes before reductions, batch-broadcast matmuls, and
reductions broadcast back as rows or columns. Each program is compiled once
(`dscc compile`) and run (`dscc run -i ... -o DIR`) at sizes around the
guards: 0 where the range allows, 1, 7/8/9 around the vector width, 31/32/33
around the transpose tiles, and the range ends. Inputs are uniform in
[-1, 1) (never all zeros), gather indices uniform in [-D, D), and ties are
planted for argmax. Tolerance: |dscc - torch| <= 2e-5 + 2e-5 * |torch| for
f32 (torch computes in f32 with its own summation order; the interpreter's
f64 sums sit between the two), 1e-4 relative for the matmuls; exact for
integer results. Prints one line per failing (program, size) and exits 1 on
any failure.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

# (name, program, inputs {name: (dtype, dims)}, torch function of the inputs
# (tensors in argument order) giving the outputs, sizes to run, rtol)
CASES = []


def case(name, text, inputs, fn, sizes, rtol=2e-5):
    CASES.append((name, text, inputs, fn, sizes, rtol))


def around(lo, hi, extra=()):
    vals = {lo, max(lo, 1), hi, hi - 1} | {v for v in (7, 8, 9) + tuple(extra) if lo <= v <= hi}
    return sorted(vals)


# Softmax over the first axis: a column plan (no transposes).
case("softmax_axis0", """
func @main(%x: f32[N, D]) -> f32[N, D] where N in [1, 300], D in [1, 70] {
  %y = softmax %x {axis = 0}
  return %y
}""", {"x": ("f32", "N D")}, lambda x: [torch.softmax(x, 0)],
     [dict(N=n, D=d) for n in around(1, 300) for d in (1, 9, 70)])

# log_softmax over the middle axis of a rank-3 value.
case("log_softmax_axis1", """
func @main(%x: f32[B, N, D]) -> f32[B, N, D] where B in [1, 4], N in [1, 40], D in [1, 33] {
  %y = log_softmax %x {axis = 1}
  return %y
}""", {"x": ("f32", "B N D")}, lambda x: [torch.log_softmax(x, 1)],
     [dict(B=b, N=n, D=d) for b in (1, 4) for n in around(1, 40) for d in (1, 8, 33)])

# Layer norm over the last two axes (axis = 1 of a rank-3 value).
case("layer_norm_2axes", """
func @main(%x: f32[B, N, D], %g: f32[N, D], %b: f32[N, D]) -> f32[B, N, D]
    where B in [1, 3], N in [1, 20], D in [1, 40] {
  %y = layer_norm %x, %g, %b {axis = 1, epsilon = 0.00001}
  return %y
}""", {"x": ("f32", "B N D"), "g": ("f32", "N D"), "b": ("f32", "N D")},
     lambda x, g, b: [torch.nn.functional.layer_norm(x, x.shape[1:], g, b, 1e-5)],
     [dict(B=b, N=n, D=d) for b in (1, 3) for n in (1, 7, 20) for d in around(1, 40)], rtol=5e-5)

# Hand-written centring over axes {0, 2} with keepdims, then a max over axis 1.
case("centre_axes_0_2", """
func @main(%x: f32[A, B, C]) -> (f32[A, B, C], f32[A, C]) where A in [0, 9], B in [1, 17], C in [1, 12] {
  %m = reduce_mean %x {axes = [0, 2], keepdims = true} : f32[1, B, 1]
  %c = sub %x, %m
  %s = mul %c, %c
  %mx = reduce_max %s {axes = [1]}
  return %c, %mx
}""", {"x": ("f32", "A B C")},
     lambda x: [x - x.mean(dim=(0, 2), keepdim=True), ((x - x.mean(dim=(0, 2), keepdim=True)) ** 2).amax(1)],
     [dict(A=a, B=b, C=c) for a in (0, 1, 9) for b in around(1, 17) for c in (1, 12)])

# A transpose before a reduction, and a sum over the first two axes.
case("transpose_reduce", """
func @main(%x: f32[A, B, C]) -> (f32[C, A], f32[C]) where A in [1, 40], B in [1, 6], C in [1, 40] {
  %t = transpose %x {perm = [2, 0, 1]} : f32[C, A, B]
  %s = reduce_sum %t {axes = [2]} : f32[C, A]
  %u = tanh %s
  %v = reduce_sum %t {axes = [1, 2]} : f32[C]
  return %u, %v
}""", {"x": ("f32", "A B C")},
     lambda x: [torch.tanh(x.permute(2, 0, 1).sum(2)), x.permute(2, 0, 1).sum((1, 2))],
     [dict(A=a, B=b, C=c) for a in around(1, 40, (31, 32, 33)) for b in (1, 6) for c in (1, 32, 33, 40)])

# Argmax over a non-last axis and the last one, with planted ties.
case("argmax_axes", """
func @main(%x: f32[N, D]) -> (i64[D], i64[N]) where N in [1, 50], D in [1, 50] {
  %a = argmax %x {axis = 0}
  %b = argmax %x {axis = 1}
  return %a, %b
}""", {"x": ("f32-ties", "N D")}, lambda x: [torch.argmax(x, 0), torch.argmax(x, 1)],
     [dict(N=n, D=d) for n in around(1, 50) for d in (1, 8, 50)])

# A causal mask from iotas, then a masked softmax (an attention score block).
case("causal_softmax", """
func @main(%s: f32[H, S, S]) -> f32[H, S, S] where H in [1, 4], S in [1, 70] {
  %i = iota {axis = 0} : i64[S, S]
  %j = iota {axis = 1} : i64[S, S]
  %keep = ge %i, %j
  %ninf = constant -1000000000.0 : f32[]
  %m = select %keep, %s, %ninf
  %p = softmax %m {axis = -1}
  return %p
}""", {"s": ("f32", "H S S")},
     lambda s: [torch.softmax(s.masked_fill(~torch.ones(s.shape[1], s.shape[1], dtype=torch.bool).tril(), -1e9), -1)],
     [dict(H=h, S=n) for h in (1, 4) for n in around(1, 70, (31, 32, 33))])

# An embedding lookup with negative ids, plus a position table sliced to S.
case("embedding_positions", """
func @main(%w: f32[V, E], %ids: i64[B, S], %pos: f32[64, E]) -> f32[B, S, E]
    where V in [1, 100], E in [1, 40], B in [1, 3], S in [1, 64] {
  %e = gather %w, %ids {axis = 0}
  %p = slice %pos {axes = [0], starts = [0], ends = [S]} : f32[S, E]
  %y = add %e, %p
  return %y
}""", {"w": ("f32", "V E"), "ids": ("index:V", "B S"), "pos": ("f32", "64 E")},
     lambda w, ids, pos: [w[ids] + pos[: ids.shape[1]]],
     [dict(V=v, E=e, B=b, S=s) for v in (1, 100) for e in (1, 8, 40) for b in (1, 3) for s in (1, 9, 63, 64)])

# Reversed and strided slices, and a roll by concat.
case("slices_concat", """
func @main(%x: f32[N, D]) -> (f32[N, D], f32[N, ?], f32[N, D]) where N in [1, 30], D in [2, 50] {
  %r = slice %x {axes = [1], starts = [-1], ends = [-1000000], steps = [-1]}
  %s = slice %x {axes = [1], starts = [0], ends = [1000000], steps = [2]}
  %a = slice %x {axes = [1], starts = [1], ends = [1000000]}
  %b = slice %x {axes = [1], starts = [0], ends = [1]}
  %c = concat %a, %b {axis = 1}
  return %r, %s, %c
}""", {"x": ("f32", "N D")},
     lambda x: [torch.flip(x, [1]), x[:, ::2], torch.roll(x, -1, 1)],
     [dict(N=n, D=d) for n in (1, 30) for d in around(2, 50, (31, 32, 33))])

# A row sum of a square matrix broadcast back as a column (numpy rules).
case("column_broadcast", """
func @main(%x: f32[N, N]) -> f32[N, N] where N in [0, 100] {
  %r = reduce_sum %x {axes = [1]} : f32[N]
  %e = tanh %r
  %y = add %x, %e
  return %y
}""", {"x": ("f32", "N N")}, lambda x: [x + torch.tanh(x.sum(1))],
     [dict(N=n) for n in around(0, 100)])

# Batch-broadcast matmul with a transposed operand, then a gelu epilogue.
case("batched_matmul", """
func @main(%a: f32[B, 1, M, K], %b: f32[H, N, K]) -> f32[B, H, M, N]
    where B in [1, 3], H in [1, 4], M in [1, 33], N in [1, 20], K in [1, 40] {
  %c = matmul %a, %b {transpose_b = true}
  %g = gelu %c
  return %g
}""", {"a": ("f32", "B 1 M K"), "b": ("f32", "H N K")},
     lambda a, b: [torch.nn.functional.gelu(torch.matmul(a, b.transpose(-1, -2)))],
     [dict(B=b, H=h, M=m, N=n, K=k) for b, h in ((1, 1), (3, 4)) for m in (1, 8, 33) for n in (1, 20)
      for k in (1, 9, 40)], rtol=1e-4)

# Reshapes that split and merge around a reduction over the split axis.
case("reshape_split_reduce", """
func @main(%x: f32[N, 64]) -> f32[N, 8] where N in [0, 50] {
  %r = reshape %x : f32[N, 8, 8]
  %t = transpose %r {perm = [0, 2, 1]}
  %s = reduce_max %t {axes = [2]} : f32[N, 8]
  %e = exp %s
  return %e
}""", {"x": ("f32", "N 64")}, lambda x: [torch.exp(x.reshape(-1, 8, 8).permute(0, 2, 1).amax(2))],
     [dict(N=n) for n in around(0, 50)])


def make_input(rng, kind, shape, sizes):
    if kind == "f32":
        return rng.uniform(-1, 1, size=shape).astype(np.float32)
    if kind == "f32-ties":
        # Few distinct values, so ties are common: argmax takes the first.
        return rng.integers(-2, 3, size=shape).astype(np.float32) / 2
    if kind.startswith("index:"):
        d = sizes[kind.split(":")[1]]
        return rng.integers(-d, d, size=shape).astype(np.int64)
    raise ValueError(kind)


def main():
    dscc = sys.argv[1]
    verbose = "-v" in sys.argv
    bad = runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ci, (name, text, inputs, fn, sizes, rtol) in enumerate(CASES):
            src = os.path.join(tmp, name + ".dsc")
            so = os.path.join(tmp, name + ".so")
            open(src, "w").write(text.strip() + "\n")
            c = subprocess.run([dscc, "compile", src, "-o", so], capture_output=True, text=True)
            if c.returncode != 0:
                print("FAIL %s: compile: %s" % (name, c.stderr.strip()))
                bad += 1
                continue
            for si, sz in enumerate(sizes):
                rng = np.random.default_rng(1000 * ci + si)
                args, cmd = [], [dscc, "run", so]
                for iname, (kind, dims) in inputs.items():
                    shape = [int(d) if d.isdigit() else sz[d] for d in dims.split()]
                    a = make_input(rng, kind, shape, sz)
                    path = os.path.join(tmp, "%s.npy" % iname)
                    np.save(path, a)
                    args.append(torch.from_numpy(a))
                    cmd += ["-i", "%s=%s" % (iname, path)]
                out = os.path.join(tmp, "out")
                for f in os.listdir(out) if os.path.isdir(out) else []:
                    os.remove(os.path.join(out, f))
                c = subprocess.run(cmd + ["-o", out], capture_output=True, text=True)
                runs += 1
                if c.returncode != 0:
                    print("FAIL %s at %s: run: %s" % (name, sz, c.stderr.strip()))
                    bad += 1
                    continue
                with torch.no_grad():
                    want = [w.numpy() for w in fn(*args)]
                for k, w in enumerate(want):
                    got = np.load(os.path.join(out, "out%d.npy" % k))
                    if got.shape != w.shape:
                        print("FAIL %s at %s: out%d shape %s, torch %s" % (name, sz, k, got.shape, w.shape))
                        bad += 1
                        continue
                    if w.dtype.kind in "iu":
                        ok = np.array_equal(got, w)
                        err = "%d elements differ" % int(np.sum(got != w))
                    else:
                        diff = np.abs(got.astype(np.float64) - w.astype(np.float64))
                        lim = 2e-5 + rtol * np.abs(w.astype(np.float64))
                        ok = bool(np.all(diff <= lim))
                        err = "max abs err %.3g" % (diff.max() if diff.size else 0)
                    if not ok:
                        print("FAIL %s at %s: out%d: %s" % (name, sz, k, err))
                        bad += 1
                if verbose:
                    print("ok   %s at %s" % (name, sz))
    print("programs vs torch: %d programs at %d sizes; %d failures" % (len(CASES), runs, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
