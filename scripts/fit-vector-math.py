#!/usr/bin/env python3
"""Refits the f32 polynomials of codegen/cpu/VectorMath.cpp (exp's P, tanh's P/Q) and prints them.

Lawson's algorithm (iteratively reweighted least squares, which converges to
the minimax fit) on the relative error; the rational tanh is fitted through
its linearisation x P(z) - tanh(x) Q(z), weighted by the last Q. Needs NumPy.
The accuracy that counts is the compiled code's, checked by
test/unit/VectorMathTest.cpp; the errors printed here are the fits' alone.
"""
import numpy as np


def lawson(A, b, scale, iters):
    """min over c of max |(A c - b) * scale| by reweighted least squares."""
    w = np.ones(len(b))
    best = None
    for _ in range(iters):
        W = w * scale
        c, *_ = np.linalg.lstsq(A * W[:, None], b * W, rcond=None)
        err = np.abs((A @ c - b) * scale)
        if best is None or err.max() < best[0]:
            best = (err.max(), c)
        w = w * err
        w /= w.sum()
    return best


def fit_exp():
    # e^r = 1 + r + r^2 P(r) on [-ln2/2, ln2/2]; relative error r^2 (P - t) / e^r.
    h = np.log(2) / 2
    r = np.cos(np.linspace(0, np.pi, 4001)) * h
    r = r[np.abs(r) > 1e-6]
    t = (np.expm1(r) - r) / r**2
    err, c = lawson(np.vander(r, 5), t, r**2 / np.exp(r), 200)
    c32 = c.astype(np.float32).astype(np.float64)
    err32 = np.abs((np.vander(r, 5) @ c32 - t) * r**2 / np.exp(r)).max()
    print(f"exp P (highest degree first): {', '.join('%.17g' % v for v in c)}")
    print(f"  max relative error {err:.3g}, {err32:.3g} with f32 coefficients ({err32 / 2**-23:.3f} ULP)")


def fit_tanh(xmax=9.0):
    # tanh(x) = x P(z) / Q(z), z = x^2, P and Q of degree 4, Q(0) = 1, on [0, xmax].
    x = np.concatenate([np.geomspace(1e-5, 0.5, 6000), np.linspace(0, xmax, 60001)[1:]])
    t, z = np.tanh(x), x * x
    A = np.hstack([x[:, None] * np.vander(z, 5, increasing=True),
                   -(t[:, None] * np.vander(z, 5, increasing=True)[:, 1:])])
    q = np.ones_like(x)
    w = np.ones_like(x)
    best = None
    for _ in range(600):
        W = w / (t * q)
        sol, *_ = np.linalg.lstsq(A * W[:, None], t * W, rcond=None)
        p, qc = sol[:5], np.concatenate([[1.0], sol[5:]])
        q = np.vander(z, 5, increasing=True) @ qc
        rel = np.abs(x * (np.vander(z, 5, increasing=True) @ p) / q - t) / t
        if best is None or rel.max() < best[0]:
            best = (rel.max(), p, qc)
        w = w * rel
        w /= w.sum()
    err, p, qc = best
    print(f"tanh P (highest degree first): {', '.join('%.10g' % v for v in p[::-1])}")
    print(f"tanh Q (highest degree first): {', '.join('%.10g' % v for v in qc[::-1])}")
    print(f"  max relative error {err:.3g} on [0, {xmax}]")


if __name__ == "__main__":
    fit_exp()
    fit_tanh()
