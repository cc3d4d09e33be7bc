"""Adjusted p-values for a family of tests: Holm (family-wise error) and Benjamini–Hochberg (FDR).

Both take the raw p-values of every test in the family and return adjusted p-values in the
same order; a test is rejected at level α when its adjusted p < α. NaN entries (tests that
could not be run, e.g. all Δ identical) are not part of the family: they stay NaN and do not
count towards m.

- Holm: sort the m p-values ascending, p_(1) ≤ … ≤ p_(m); adjusted p_(i) =
  max over j ≤ i of min(1, (m − j + 1) · p_(j)).
- Benjamini–Hochberg: adjusted p_(i) = min over j ≥ i of min(1, m · p_(j) / j).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def _adjust(pvalues: Sequence[float] | np.ndarray, step: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Apply `step` (sorted p-values → their adjusted values) to the non-NaN p-values, in input order."""
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"expected a 1-d list of p-values, got shape {p.shape}")
    present = ~np.isnan(p)
    outside = p[present & ((p < 0) | (p > 1))]
    if outside.size:
        raise ValueError(f"p-values must lie in [0, 1], got {sorted(outside)[:5]}")
    out = np.full(p.shape, np.nan)
    values = p[present]
    if values.size:
        order = np.argsort(values, kind="stable")
        adjusted = np.empty(values.size)
        adjusted[order] = step(values[order])
        out[present] = adjusted
    return out


def _holm_step(sorted_p: np.ndarray) -> np.ndarray:
    m = sorted_p.size
    return np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * sorted_p))


def _bh_step(sorted_p: np.ndarray) -> np.ndarray:
    m = sorted_p.size
    scaled = sorted_p * m / np.arange(1, m + 1)
    return np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (NaN stays NaN and is not counted in m)."""
    return _adjust(pvalues, _holm_step)


def benjamini_hochberg(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg step-up adjusted p-values (q-values); NaN stays NaN, not counted in m."""
    return _adjust(pvalues, _bh_step)
