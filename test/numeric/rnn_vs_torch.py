#!/usr/bin/python3
"""The recurrent op `rnn` (ONNX LSTM, GRU, RNN) in dscc against PyTorch, an oracle independent of dscc.

Usage: /usr/bin/python3 test/numeric/rnn_vs_torch.py PATH/TO/dscc [--compiled] [-k SUBSTRING] [-v]

Each case is a program with a static input and hidden size and symbolic
sequence length S and batch N (`where S in [1, 64], N in [1, 16]`) returning
y, y_h (and y_c for LSTM), run in the reference interpreter (`dscc run`), or
with --compiled compiled once and run, also checked against the interpreter
(`dscc run --check`), at several (S, N) including S = 1 and N = 1. Weights and
inputs are uniform in [-1, 1) from a seeded generator.

The oracle is torch.nn.LSTM / GRU / RNN (tanh) with the ONNX weights put in
torch's gate order (LSTM: ONNX i, o, f, c is torch i, f, g, o; GRU: ONNX z, r,
h is torch r, z, n); torch's GRU is ONNX's linear_before_reset = 1. Reverse is
torch's forward over the flipped sequence, the outputs flipped back;
bidirectional is torch's bidirectional ([S, N, 2H] as [S, 2, N, H]). GRU with
linear_before_reset = 0, which torch has no module for, is the ONNX equations
written with torch ops here (r applied to h before the recurrence matmul).

Tolerance: |dscc - torch| <= 2e-5 + 2e-5 * |torch| (the interpreter computes in
f64, torch in f32; values are in [-1, 1]). Prints one line per failure, exits 1
on any.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

ATOL = 2e-5
RTOL = 2e-5
GATES = {"lstm": 4, "gru": 3, "rnn": 1}
CASES = []


def case(cell, direction, I, H, bias=True, init=False, lbr=False):
    name = "%s_%s_i%d_h%d%s%s%s" % (cell, direction, I, H, "" if bias else "_nobias", "_init" if init else "",
                                    "_lbr" if lbr else "")
    CASES.append(dict(name=name, cell=cell, direction=direction, I=I, H=H, bias=bias, init=init, lbr=lbr))


for cell in ["lstm", "gru", "rnn"]:
    for direction in ["forward", "reverse", "bidirectional"]:
        case(cell, direction, 3, 4)
        case(cell, direction, 5, 2, init=True)
    case(cell, "forward", 1, 1, bias=False)
    case(cell, "bidirectional", 7, 16, init=True)
for direction in ["forward", "reverse", "bidirectional"]:
    case("gru", direction, 3, 4, lbr=True)
    case("gru", direction, 4, 3, init=True, lbr=True)
case("gru", "bidirectional", 2, 5, bias=False, init=True, lbr=True)
case("lstm", "reverse", 6, 3, bias=False, init=True)

SIZES = [(1, 1), (1, 3), (4, 1), (5, 2), (9, 4)]


def program(c):
    D = 2 if c["direction"] == "bidirectional" else 1
    G, H, I = GATES[c["cell"]], c["H"], c["I"]
    ins = [("x", ["S", "N", I]), ("w", [D, G * H, I]), ("r", [D, G * H, H])]
    if c["bias"] or c["init"]:
        ins.append(("b", [D, 2 * G * H]))
    if c["init"]:
        ins.append(("h0", [D, "N", H]))
        if c["cell"] == "lstm":
            ins.append(("c0", [D, "N", H]))
    args = ", ".join("%%%s: f32[%s]" % (n, ", ".join(str(d) for d in dims)) for n, dims in ins)
    operands = ", ".join("%" + n for n, _ in ins)
    attrs = 'cell = "%s", direction = "%s", hidden_size = %d' % (c["cell"], c["direction"], H)
    if c["lbr"]:
        attrs += ", linear_before_reset = true"
    outs = ["y", "y_h"] + (["y_c"] if c["cell"] == "lstm" else [])
    body = ""
    for o in outs:
        extra = "" if o == "y" else ', output = "%s"' % o
        body += "  %%%s = rnn %s {%s%s}\n" % (o, operands, attrs, extra)
    types = ", ".join("f32[?, ?, ?, ?]" if o == "y" else "f32[?, ?, ?]" for o in outs)
    text = "func @main(%s) -> (%s) where S in [1, 64], N in [1, 16] {\n%s  return %s\n}\n" % (
        args, types, body, ", ".join("%" + o for o in outs))
    # If the bias was only added to give the positional initial states, it is zeros.
    return text, ins, outs


def to_torch_gates(cell, m, H):
    """ONNX gate blocks (rows of H) to torch's order."""
    blocks = [m[k * H:(k + 1) * H] for k in range(GATES[cell])]
    if cell == "lstm":  # i o f c -> i f g o
        blocks = [blocks[0], blocks[2], blocks[3], blocks[1]]
    elif cell == "gru":  # z r h -> r z n
        blocks = [blocks[1], blocks[0], blocks[2]]
    return torch.cat(blocks, 0)


def gru_no_lbr(x, w, r, b, h0):
    """ONNX GRU, linear_before_reset = 0, one direction forward: torch ops over time steps."""
    H = r.shape[1]
    wb, rb = b[:3 * H], b[3 * H:]
    h, ys = h0, []
    for t in range(x.shape[0]):
        gx = x[t] @ w.T + wb
        z = torch.sigmoid(gx[:, :H] + h @ r[:H].T + rb[:H])
        rr = torch.sigmoid(gx[:, H:2 * H] + h @ r[H:2 * H].T + rb[H:2 * H])
        hh = torch.tanh(gx[:, 2 * H:] + (rr * h) @ r[2 * H:].T + rb[2 * H:])
        h = (1 - z) * hh + z * h
        ys.append(h)
    return torch.stack(ys), h


def oracle(c, vals):
    """y [S, D, N, H], y_h, y_c from torch."""
    cell, H = c["cell"], c["H"]
    x, w, r = vals["x"], vals["w"], vals["r"]
    D, N = w.shape[0], x.shape[1]
    G = GATES[cell]
    b = vals.get("b", torch.zeros(D, 2 * G * H))
    h0 = vals.get("h0", torch.zeros(D, N, H))
    c0 = vals.get("c0", torch.zeros(D, N, H))
    ys, hs, cs = [], [], []
    for d in range(D):
        rev = c["direction"] == "reverse" or d == 1
        xd = torch.flip(x, [0]) if rev else x
        if cell == "gru" and not c["lbr"]:
            y, hn = gru_no_lbr(xd, w[d], r[d], b[d], h0[d])
            cn = None
        else:
            mod = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[cell](x.shape[2], H)
            mod.weight_ih_l0.data = to_torch_gates(cell, w[d], H)
            mod.weight_hh_l0.data = to_torch_gates(cell, r[d], H)
            mod.bias_ih_l0.data = to_torch_gates(cell, b[d][:G * H], H)
            mod.bias_hh_l0.data = to_torch_gates(cell, b[d][G * H:], H)
            if cell == "lstm":
                y, (hn, cn) = mod(xd, (h0[d:d + 1], c0[d:d + 1]))
                cn = cn[0]
            else:
                y, hn = mod(xd, h0[d:d + 1])
                cn = None
            hn = hn[0]
        ys.append(torch.flip(y, [0]) if rev else y)
        hs.append(hn)
        cs.append(cn)
    out = {"y": torch.stack(ys, 1), "y_h": torch.stack(hs, 0)}
    if cell == "lstm":
        out["y_c"] = torch.stack(cs, 0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dscc")
    ap.add_argument("--compiled", action="store_true", help="compile each case and run the shared object")
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("-v", action="store_true")
    opts = ap.parse_args()
    bad = runs = ncases = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ci, c in enumerate(CASES):
            name = c["name"]
            if opts.k not in name:
                continue
            ncases += 1
            text, ins, outs = program(c)
            src = os.path.join(tmp, name + ".dsc")
            open(src, "w").write(text)
            prog = src
            if opts.compiled:
                prog = os.path.join(tmp, name + ".so")
                p = subprocess.run([opts.dscc, "compile", src, "-o", prog], capture_output=True, text=True)
                if p.returncode != 0:
                    print("FAIL %s: compile: %s" % (name, p.stderr.strip()[-600:]))
                    bad += 1
                    continue
            for si, (S, N) in enumerate(SIZES):
                rng = np.random.default_rng(1000 * ci + si)
                vals, cmd = {}, [opts.dscc, "run", prog]
                for iname, dims in ins:
                    shape = [{"S": S, "N": N}.get(d, d) for d in dims]
                    a = rng.uniform(-1, 1, size=shape).astype(np.float32)
                    if iname == "b" and not c["bias"]:
                        a[:] = 0
                    path = os.path.join(tmp, "%s.npy" % iname)
                    np.save(path, a)
                    vals[iname] = torch.from_numpy(a)
                    cmd += ["-i", "%s=%s" % (iname, path)]
                out = os.path.join(tmp, "out")
                for f in os.listdir(out) if os.path.isdir(out) else []:
                    os.remove(os.path.join(out, f))
                p = subprocess.run(cmd + ["-o", out] + (["--check"] if opts.compiled else []), capture_output=True,
                                   text=True)
                runs += 1
                if p.returncode != 0 or (opts.compiled and "check: ok" not in p.stdout):
                    print("FAIL %s at S=%d N=%d: run: %s" % (name, S, N, (p.stderr + p.stdout).strip()[-600:]))
                    bad += 1
                    continue
                with torch.no_grad():
                    want = oracle(c, vals)
                for oi, o in enumerate(outs):
                    got = np.load(os.path.join(out, "out%d.npy" % oi)).astype(np.float64)
                    wo = want[o].numpy().astype(np.float64)
                    if got.shape != wo.shape:
                        print("FAIL %s at S=%d N=%d: %s shape %s, torch %s" % (name, S, N, o, got.shape, wo.shape))
                        bad += 1
                        break
                    diff = np.abs(got - wo)
                    if not np.all(diff <= ATOL + RTOL * np.abs(wo)):
                        print("FAIL %s at S=%d N=%d: %s max abs err %.3g" % (name, S, N, o, diff.max()))
                        bad += 1
                        break
                else:
                    if opts.v:
                        print("ok   %s at S=%d N=%d" % (name, S, N))
    mode = "compiled" if opts.compiled else "interpreted"
    print("rnn vs torch (%s): %d cases at %d sizes; %d failures" % (mode, ncases, runs, bad))
    return 1 if bad or runs == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
