# The run-and-compare loop of the Pad lit tests (make_sym_pad.py, make_pad_matrix.py): one model at several sizes.
import os
import subprocess

import numpy as np


def check_pads(dscc, out, name, mode, sizes, pads, rng, more=None):
    """Compiles OUT/NAME.onnx for H, W in [1, 16], then runs it interpreted and compiled on random x [2, H, W, 3] at
    each (H, W) of `sizes` against numpy.pad with `pads(h, w)` in `mode` ("constant": value 0.5, or "edge"); `more`
    (optional): more checks of the run's folder, given (folder, pads). Prints `ok|WRONG NAME HxW HOW`."""
    subprocess.run([dscc, "compile", os.path.join(out, name + ".onnx"), "-o", os.path.join(out, name + ".so"),
                    "--where", "H in [1, 16]", "--where", "W in [1, 16]"], check=True)
    for h, w in sizes:
        x = rng.standard_normal((2, h, w, 3)).astype(np.float32)
        xf = os.path.join(out, "%s.%dx%d.x.npy" % (name, h, w))
        np.save(xf, x)
        pw = pads(h, w)
        want = np.pad(x, pw, mode="constant", constant_values=0.5) if mode == "constant" else np.pad(x, pw, mode="edge")
        for how, m in (("interpreted", name + ".onnx"), ("compiled", name + ".so")):
            d = os.path.join(out, "%s.%dx%d.%s" % (name, h, w, how))
            subprocess.run([dscc, "run", os.path.join(out, m), "-i", "x=" + xf, "-o", d], check=True,
                           stdout=subprocess.DEVNULL)
            got = np.load(os.path.join(d, "y.npy"))
            ok = got.shape == want.shape and np.array_equal(got, want) and (more is None or more(d, pw))
            print("%s %s %dx%d %s" % ("ok" if ok else "WRONG", name, h, w, how))
