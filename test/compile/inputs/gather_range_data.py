"""Writes the inputs of gather-range.test into the folder argv[1]: tables of V rows (non-zero values) and index
arrays in range (negative ones in [-V, -1] included), at the range ends -V-1 and V, and at the i64 extremes."""
import os
import sys

import numpy as np

out = sys.argv[1]


def save(name, a):
    np.save(os.path.join(out, name + ".npy"), a)


rng = np.random.default_rng(36)
for v in (1, 2, 1000):
    save("w%d" % v, rng.uniform(0.5, 1.5, (v, 3)).astype(np.float32))
save("w40", rng.uniform(0.5, 1.5, (2, 40)).astype(np.float32))
save("b", rng.uniform(-1, 1, 3).astype(np.float32))
for t, dt in (("", np.int64), ("_32", np.int32)):
    save("ok2" + t, np.array([0, 1, -1, -2], dt))
    save("hi2" + t, np.array([0, 1, 2, -1], dt))  # exactly D
    save("lo2" + t, np.array([0, -3, 1], dt))  # exactly -D-1
save("ok1", np.array([0, -1, 0], np.int64))
save("hi1", np.array([0, 1], np.int64))
save("lo1", np.array([-2], np.int64))
save("ok1000", np.array([999, -1000, 0, 500, -1], np.int64))
save("hi1000", np.array([999, 1000], np.int64))
save("lo1000", np.array([-1000, -1001], np.int64))
save("many", np.array([5, 3, -7, 0, 9], np.int64))  # the interpreter names the first, compiled code the least
save("max", np.array([0, np.iinfo(np.int64).max], np.int64))
save("min", np.array([np.iinfo(np.int64).min, 1], np.int64))
ids40 = rng.integers(-2, 2, 40).astype(np.int64)
save("ok40", ids40)
ids40[17] = 2
save("hi40", ids40)
save("bagok", np.array([[0, 1, -1], [1, -2, 0]], np.int64))
save("bagbad", np.array([[0, 1, -1], [1, -2, -3]], np.int64))
save("rows", np.array([0, 1, -2], np.int64))
save("colsok", np.array([0, 2, -3], np.int64))
save("colsbad", np.array([0, 3, 1], np.int64))
save("map", np.array([0, 1, 5], np.int64))  # row 5 of a 2-row table
save("viamap", np.array([0, 2, -1, 1], np.int64))
save("viamapok", np.array([0, 1, -2], np.int64))
save("mapbad", np.array([0, 3], np.int64))
