"""Set-level statistics over per-pair Δ values and answer distributions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

SIGNIFICANCE = 0.05


@dataclass(frozen=True)
class DeltaSummary:
    """Mean Δ with its two-sided one-sample t-test against 0 and a 95% CI."""

    n: int
    mean: float
    stderr: float
    t: float
    p: float
    df: int
    ci_low: float
    ci_high: float

    @property
    def significant(self) -> bool:
        return self.p < SIGNIFICANCE

    def as_dict(self) -> dict[str, float | int | bool]:
        return {**asdict(self), "significant": self.significant}


def summarize_deltas(deltas: Iterable[float]) -> DeltaSummary:
    """Mean, stderr (ddof=1), Student t-test (scipy.stats.ttest_1samp) and 95% CI.

    Non-finite values are rejected: a pair without a defined Δ must be excluded (and
    counted) by the caller, never averaged in silently.
    """
    x = np.asarray(list(deltas), dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("Δ values must be finite; drop and report undefined pairs first")
    n = int(x.size)
    nan = float("nan")
    if n == 0:
        return DeltaSummary(0, nan, nan, nan, nan, 0, nan, nan)
    # Identical values: take the value itself, since the float mean can miss it by an ulp
    # (mean of [0.1, 0.1, 0.1] is 0.10000000000000002) and fake a non-zero spread.
    identical = bool(np.ptp(x) == 0)
    mean = float(x[0]) if identical else float(x.mean())
    if n == 1:
        return DeltaSummary(1, mean, nan, nan, nan, 0, nan, nan)
    stderr = 0.0 if identical else float(x.std(ddof=1) / math.sqrt(n))
    df = n - 1
    if stderr == 0.0:  # all Δ identical: the t-test is undefined, not "infinitely significant"
        t = p = nan
    else:
        t = mean / stderr
        p = float(2 * stats.t.sf(abs(t), df))
    half = float(stats.t.ppf(0.975, df) * stderr)
    return DeltaSummary(n, mean, stderr, float(t), p, df, mean - half, mean + half)


def normalized_entropy(dist: Sequence[float]) -> float:
    """H(p) / log(n) for a distribution over n options: 0 = certain, 1 = uniform."""
    p = np.asarray(dist, dtype=float)
    if p.size < 2:
        raise ValueError("normalised entropy needs at least two options")
    if np.any(p < 0) or not math.isclose(p.sum(), 1.0, rel_tol=0, abs_tol=1e-6):
        raise ValueError(f"not a probability distribution: {list(p)}")
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum() / math.log(p.size))


@dataclass(frozen=True)
class Correlation:
    n: int
    r: float
    p: float


def pearson(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Pearson r with its two-sided p (e.g. |Δ| against the question's uncertainty)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"pearson needs equal lengths, got {a.size} and {b.size}")
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return Correlation(int(a.size), float("nan"), float("nan"))
    res = stats.pearsonr(a, b)
    return Correlation(int(a.size), float(res.statistic), float(res.pvalue))


def human_likeness(summaries: Mapping[str, DeltaSummary]) -> dict[str, int]:
    """Per-bias score (TACL Table 3): +1 significant Δ>0 (human-like), −1 significant Δ<0, else 0."""
    scores = {}
    for bias, s in summaries.items():
        scores[bias] = int(np.sign(s.mean)) if s.significant else 0
    return scores
