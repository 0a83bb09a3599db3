#!/usr/bin/python3
# The committed conv_bn_torchscript fixture (convs with unfused BatchNormalization, test/onnx/fixtures/make_conv_bn.py)
# run by dscc, interpreted and compiled, against PyTorch's stored outputs: python3 conv_bn_vs_torch.py FIXTURE OUTDIR
# (FIXTURE without .onnx/.npz; dscc on PATH). Tolerance 1e-4 + 1e-4 * |torch|, as the zoo's.
import os
import subprocess
import sys

import numpy as np

fixture, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
model, so = fixture + ".onnx", os.path.join(out, "conv_bn.so")
subprocess.run(["dscc", "compile", model, "-o", so], check=True)
ref = np.load(fixture + ".npz")
bad = 0
for key in sorted(k for k in ref.files if k.endswith("_in_x")):
    size = key[:-len("_in_x")]
    xp = os.path.join(out, size + "_x.npy")
    np.save(xp, ref[key])
    want = ref[size + "_out_y"].astype(np.float64)
    for how, prog in (("interpreted", model), ("compiled", so)):
        d = os.path.join(out, how + "_" + size)
        subprocess.run(["dscc", "run", prog, "-i", "x=" + xp, "-o", d], check=True, capture_output=True)
        got = np.load(os.path.join(d, "y.npy")).astype(np.float64)
        ok = got.shape == want.shape and bool(np.all(np.abs(got - want) <= 1e-4 + 1e-4 * np.abs(want)))
        bad += not ok
        err = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
        print("%s %s %s (max abs err %.2g)" % ("ok" if ok else "FAIL", how, size, err))
sys.exit(1 if bad else 0)
