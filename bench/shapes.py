# Reads a shape-distribution YAML (spec/shapes.md) and picks K weighted points that represent it.
"""Shape distributions for the benchmark.

The YAML lists `points` with weights and/or describes `dims` to draw `draws`
points from with `seed`. We draw with NumPy's PCG64 seeded by the file's
seed, so a run is reproducible (the draws need not match dscc-tune's, only
follow the same distribution). Each drawn point weighs 1; listed points weigh
what they say.

To time K points instead of all of them, `representative_points` keeps the
listed points (the deployment said they matter) and, for the drawn ones,
sorts by total size and splits them into equal-count strata, timing the
median point of each stratum with the stratum's total weight. Weighted means
over the K points then estimate the means over the whole distribution, with
both ends of the size range present.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import yaml

Point = Dict[str, int]


def load(path: Path) -> dict:
    """Parses a shapes YAML file."""
    with open(path) as f:
        return yaml.safe_load(f) or {}


def _draw_dim(rng: np.random.Generator, spec: dict, sym: str) -> int:
    if "values" in spec:
        values = list(spec["values"])
        w = np.asarray(spec.get("weights", [1] * len(values)), dtype=np.float64)
        return int(values[rng.choice(len(values), p=w / w.sum())])
    if "range" in spec:
        lo, hi = (int(v) for v in spec["range"])
        dist = spec.get("dist", "uniform")
        if dist == "uniform":
            return int(rng.integers(lo, hi + 1))
        if dist == "log-uniform":
            # draw in log space over [lo, hi + 1) and floor, so every integer in range is reachable
            v = math.exp(rng.uniform(math.log(lo), math.log(hi + 1)))
            return int(min(hi, max(lo, math.floor(v))))
        raise ValueError(f"dim {sym}: unknown dist {dist!r}")
    raise ValueError(f"dim {sym}: needs `values` or `range`")


def all_points(doc: dict) -> List[Tuple[Point, float, bool]]:
    """Every point of the distribution as (point, weight, listed), drawn ones first, duplicates merged."""
    rng = np.random.default_rng(int(doc.get("seed", 0)))
    dims = doc.get("dims") or {}
    merged: Dict[Tuple, List] = {}
    order: List[Tuple] = []

    def add(p: Point, w: float, listed: bool):
        key = tuple(sorted(p.items()))
        if key not in merged:
            merged[key] = [dict(p), 0.0, False]
            order.append(key)
        merged[key][1] += w
        merged[key][2] |= listed

    for _ in range(int(doc.get("draws", 0)) if dims else 0):
        add({s: _draw_dim(rng, spec, s) for s, spec in dims.items()}, 1.0, False)
    for p in doc.get("points") or []:
        p = dict(p)
        w = float(p.pop("weight", 1))
        add({k: int(v) for k, v in p.items()}, w, True)
    return [tuple(merged[k]) for k in order]


def representative_points(
    points: List[Tuple[Point, float, bool]],
    k: int,
    size: Callable[[Point], float],
    keep: Optional[Callable[[Point], bool]] = None,
) -> Tuple[List[Tuple[Point, float]], float]:
    """Picks at most k weighted points; returns them (smallest first) and the share of weight left out by `keep`."""
    total = sum(w for _, w, _ in points)
    kept = [(p, w, l) for p, w, l in points if keep is None or keep(p)]
    dropped = 1.0 - (sum(w for _, w, _ in kept) / total if total else 0.0)
    listed = [(p, w) for p, w, l in kept if l]
    drawn = sorted([(p, w) for p, w, l in kept if not l], key=lambda pw: (size(pw[0]), sorted(pw[0].items())))
    # Listed points go first when k is tight; the rest of the budget covers the drawn ones.
    listed.sort(key=lambda pw: -pw[1])
    listed = listed[:k]
    n_strata = min(len(drawn), max(0, k - len(listed)))
    chosen = list(listed)
    if n_strata:
        bounds = [round(i * len(drawn) / n_strata) for i in range(n_strata + 1)]
        for i in range(n_strata):
            stratum = drawn[bounds[i]:bounds[i + 1]]
            if not stratum:
                continue
            rep = stratum[len(stratum) // 2] if i not in (0, n_strata - 1) else stratum[0 if i == 0 else -1]
            chosen.append((rep[0], sum(w for _, w in stratum)))
    # The same point chosen twice (listed and a stratum representative) is timed once.
    merged: Dict[Tuple, List] = {}
    for p, w in chosen:
        key = tuple(sorted(p.items()))
        merged.setdefault(key, [p, 0.0])[1] += w
    out = sorted(((p, w) for p, w in merged.values()), key=lambda pw: (size(pw[0]), sorted(pw[0].items())))
    return out, dropped
