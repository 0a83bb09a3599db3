#!/usr/bin/python3
# Compares two .npy files elementwise (equal shapes, |got - want| <= 1e-4 + 1e-4*|want|): python3 allclose.py GOT WANT.
import sys

import numpy as np

got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
if got.shape != want.shape:
    sys.exit("shape %s, expected %s" % (got.shape, want.shape))
err = np.abs(got.astype(np.float64) - want) - 1e-4 * np.abs(want)
if not np.all(err <= 1e-4):
    sys.exit("%d of %d elements differ (max %.3g)" % (int((err > 1e-4).sum()), err.size, float(err.max())))
print("allclose: ok, %d elements" % got.size)
