"""ops_vs_numpy.py's cases of the data-dependent write `scatter` and the scan `cumsum`: random data (never zeros),
every dtype and reduction, sizes with 0- and 1-length axes, repeated and negative indices, out-of-range errors.
The references apply the updates one at a time in index order (floats combined in f64 and rounded to the dtype
after each, integers wrapped), as docs/ir.md defines the ops."""

import numpy as np

from ops_cases import CARRIER, FLOATS, INTS, add, rand, rng, shape_name, to_dtype

REDUCTIONS = ("none", "add", "mul", "max", "min")


def scatter_ref(dt, data, idx, upd, red):
    out = np.array(data, dtype=CARRIER[dt], copy=True)
    n = data.shape[0]
    flat_idx = np.asarray(idx).reshape(-1)
    upd = np.asarray(upd).reshape((flat_idx.size,) + data.shape[1:])
    for m, v in enumerate(flat_idx):
        w = int(v) + n if v < 0 else int(v)
        if red == "none":
            out[w] = upd[m]
            continue
        if dt in FLOATS:
            a, b = out[w].astype(np.float64), upd[m].astype(np.float64)
        else:
            a, b = out[w].astype(np.int64), upd[m].astype(np.int64)
        r = {"add": a + b, "mul": a * b, "max": np.maximum(a, b), "min": np.minimum(a, b)}[red]
        out[w] = to_dtype(dt, r)
    return out


def indices(n, shape, dt="i64"):
    """Random indices in [-n, n) (negative ones count from the end), with repeats when there are more than n."""
    return rng.integers(-n, n, shape).astype(CARRIER[dt]) if n > 0 else np.zeros(shape, CARRIER[dt])


def scatter_case(dt, dshape, ishape, red, idt="i64", kind="any"):
    data = rand(dt, dshape, kind)
    idx = indices(dshape[0], ishape, idt)
    upd = rand(dt, tuple(ishape) + tuple(dshape[1:]), kind)
    attrs = "" if red == "none" else f' {{reduction = "{red}"}}'
    add(f"scatter {dt}{shape_name(dshape)} {idt}{shape_name(ishape)} {red}", [f"%r = scatter %d, %i, %u{attrs}"],
        [("d", dt, data), ("i", idt, idx), ("u", dt, upd)], [("r", dt, scatter_ref(dt, data, idx, upd, red))])


def gen_scatter():
    # Every reduction at several sizes: one row, many updates to few rows (repeats), no updates, 2-D indices.
    for red in REDUCTIONS:
        for dshape, ishape in [((1, 3), (1,)), ((5, 3), (7,)), ((5, 3), (0,)), ((4, 2, 3), (2, 3)), ((6,), (4,)),
                               ((3, 1), (5,))]:
            scatter_case("f32", dshape, ishape, red, kind="unit" if red == "mul" else "any")
    # Every dtype (mul near 1 for floats, small integers so products stay readable), i32 indices.
    for dt in ("f16", "bf16", "f64", "i64", "i32", "i8"):
        for red in REDUCTIONS:
            kind = "unit" if red == "mul" and dt in FLOATS else "small" if red == "mul" else "any"
            scatter_case(dt, (4, 3), (6,), red, idt="i32" if dt == "i32" else "i64", kind=kind)
    scatter_case("i1", (5, 2), (4,), "none")
    # Data with no rows takes no indices; rows of no elements take any in range.
    scatter_case("f32", (0, 3), (0,), "add")
    scatter_case("f32", (4, 0), (3,), "none")
    # Out of range, either side, is a located error naming the index and the update.
    d = rand("f32", (5, 3))
    for bad, m in ((5, 1), (-6, 0)):
        idx = np.array([0, bad] if m == 1 else [bad, 1], np.int64)
        add(f"scatter out of range {bad} error", ["%r = scatter %d, %i, %u"],
            [("d", "f32", d), ("i", "i64", idx), ("u", "f32", rand("f32", (2, 3)))], [("r", "f32", d)],
            error=f"scatter index {bad} (update {m}) is out of range for dim 0 of size 5")


def cumsum_ref(dt, x, axis, exclusive, reverse):
    v = x.astype(np.float64 if dt in FLOATS else np.int64)
    if reverse:
        v = np.flip(v, axis)
    c = np.cumsum(v, axis=axis)
    if exclusive:  # the sum before each element: the running sum shifted by one, 0 first (no subtraction)
        c = np.concatenate([np.zeros_like(np.take(c, [0], axis=axis)) if c.shape[axis] else c, c], axis=axis)
        c = np.take(c, range(v.shape[axis]), axis=axis)
    if reverse:
        c = np.flip(c, axis)
    return to_dtype(dt, c)


def gen_cumsum():
    shapes = [(0,), (1,), (7,), (3, 0), (1, 5), (4, 6), (2, 3, 4), (5, 1, 3)]
    for shape in shapes:
        for axis in range(-len(shape), len(shape)):
            if axis >= 0 and len(shape) > 1 and axis != 1:  # the other axes once, negatively
                continue
            for excl in (False, True):
                for rev in (False, True):
                    x = rand("f32", shape)
                    attrs = [f"axis = {axis}"] + (["exclusive = true"] if excl else []) + (["reverse = true"] if rev else [])
                    add(f"cumsum f32{shape_name(shape)} axis={axis} exclusive={excl} reverse={rev}",
                        [f"%r = cumsum %x {{{', '.join(attrs)}}}"], [("x", "f32", x)],
                        [("r", "f32", cumsum_ref("f32", x, axis, excl, rev))])
    for dt in ("f16", "bf16", "f64", "i64", "i32", "i8"):
        for shape, axis in (((4, 9), 1), ((6, 3), 0), ((0, 2), 0), ((1,), 0)):
            for excl, rev in ((False, False), (True, True)):
                x = rand(dt, shape)
                attrs = [f"axis = {axis}"] + (["exclusive = true", "reverse = true"] if excl else [])
                add(f"cumsum {dt}{shape_name(shape)} axis={axis} exclusive={excl} reverse={rev}",
                    [f"%r = cumsum %x {{{', '.join(attrs)}}}"], [("x", dt, x)],
                    [("r", dt, cumsum_ref(dt, x, axis, excl, rev))])
    # A long f32 axis: the f64 running sum rounds once per output (np.cumsum in f64, then to f32).
    x = rand("f32", (3, 1000))
    add("cumsum f32[3,1000] axis=1 long", ["%r = cumsum %x {axis = 1}"], [("x", "f32", x)],
        [("r", "f32", cumsum_ref("f32", x, 1, False, False))], tol="exact")
