"""Test helpers shared by the twins' tests: one float comparison with per-dtype
tolerances and a readable report (max-abs, RMS, cosine, first bad index).

    assert_close(actual, expected, dtype="bfloat16")    # rel. L2 < 1e-2
"""
from __future__ import annotations

import numpy as np

__all__ = ["REL_L2_TOL", "assert_close", "compare", "host"]

# relative L2 error bounds vs the reference / a float64 oracle (issue contract)
REL_L2_TOL = {"bfloat16": 1e-2, "float16": 5e-3, "float32": 1e-5}


def host(a) -> np.ndarray:
    """Any array (NumPy, CuPy, CUDA array interface) -> NumPy."""
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "get"):
        return a.get()
    return np.asarray(a)


def compare(actual, expected) -> dict:
    a = np.asarray(host(actual), np.float64).ravel()
    e = np.asarray(host(expected), np.float64).ravel()
    if a.shape != e.shape:
        raise AssertionError(f"shape mismatch: actual {a.shape} vs expected {e.shape}")
    both_nan = np.isnan(a) & np.isnan(e)
    a_, e_ = np.where(both_nan, 0, a), np.where(both_nan, 0, e)
    diff = np.abs(a_ - e_)
    en = np.linalg.norm(e_)
    rel = np.linalg.norm(a_ - e_) / en if en > 0 else float(np.linalg.norm(a_ - e_))
    na, ne = np.linalg.norm(a_), en
    cos = float(a_ @ e_ / (na * ne)) if na > 0 and ne > 0 else float(na == ne)
    bad = np.flatnonzero(~np.isfinite(diff) | (diff > 1e-2 * (np.abs(e_) + 1e-3 * (np.abs(e_).max() if e_.size else 0))))
    return dict(rel_l2=float(rel) if np.isfinite(rel) else float("inf"),
                max_abs=float(diff.max()) if diff.size else 0.0,
                rms=float(np.sqrt(np.mean(diff ** 2))) if diff.size else 0.0,
                cosine=cos, first_bad=int(bad[0]) if bad.size else -1, n=a.size)


def assert_close(actual, expected, *, dtype: str = "bfloat16", rel_l2: float | None = None,
                 what: str = "") -> dict:
    """rel. L2 of actual vs expected below the dtype's bound; NaN must match NaN."""
    tol = REL_L2_TOL[dtype] if rel_l2 is None else rel_l2
    a = np.asarray(host(actual), np.float64).ravel()
    e = np.asarray(host(expected), np.float64).ravel()
    if a.shape == e.shape and (np.isnan(a) != np.isnan(e)).any():
        i = int(np.flatnonzero(np.isnan(a) != np.isnan(e))[0])
        raise AssertionError(f"{what}: NaN mismatch at flat index {i}: actual {a[i]} "
                             f"expected {e[i]}")
    r = compare(a, e)
    if not r["rel_l2"] < tol:
        raise AssertionError(
            f"{what}: rel_l2={r['rel_l2']:.3e} >= {tol:.1e} (max_abs={r['max_abs']:.3e} "
            f"rms={r['rms']:.3e} cosine={r['cosine']:.6f} first_bad={r['first_bad']} "
            f"n={r['n']})")
    return r
