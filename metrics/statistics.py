"""Set-level statistics over per-pair Δ values and answer distributions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

SIGNIFICANCE = 0.05
# A spread of Δ at most ZERO_SPREAD_RTOL · max(1, |mean|) counts as none (the t-test is then undefined).
# Float64 rounding leaves a spread of a few ulp (~1e-16 relative; the mean of [0.1] * 3 alone is off by
# one), and Δ that differ only in their last bits would otherwise give t ~ 1e16 and p ~ 1e-112. Any
# spread the model itself makes is far larger: one float32 ulp of a log-probability is ~1e-7 relative.
# 1e-12 sits between, 4 orders above the rounding noise and 5 below float32 precision; the floor of 1
# (absolute 1e-12, in the Δ's unit: points) keeps Δ near 0 from counting their rounding as a spread.
ZERO_SPREAD_RTOL = 1e-12


def no_spread(spread: float, centre: float) -> bool:
    """Whether a spread (an SD, a range) of values around `centre` is rounding alone: at most
    ZERO_SPREAD_RTOL · max(1, |centre|). The one rule of every test here that is then undefined."""
    return spread <= ZERO_SPREAD_RTOL * max(1.0, abs(centre))


@dataclass(frozen=True)
class DeltaSummary:
    """Mean Δ with its two-sided one-sample t-test against 0 and a 95% CI (t, p and CI NaN where the
    test is undefined: fewer than 2 values, or no spread; `undefined_reason` says which)."""

    n: int
    mean: float
    stderr: float
    t: float
    p: float
    df: int
    ci_low: float
    ci_high: float

    @property
    def significant(self) -> bool | None:
        """p < 0.05; None where the test is undefined (p NaN): neither significant nor not."""
        return None if math.isnan(self.p) else bool(self.p < SIGNIFICANCE)

    @property
    def undefined_reason(self) -> str | None:
        """Why the t-test is undefined (None where it is defined)."""
        if not math.isnan(self.p):
            return None
        if self.n == 0:
            return "no pair with a Δ"
        if self.n == 1:
            return "1 pair: no t-test"
        if self.stderr == 0:
            return f"no spread: all {self.n} Δ equal to 12 digits"
        return "t-test undefined"

    def as_dict(self) -> dict[str, float | int | bool | None]:
        return {**asdict(self), "significant": self.significant}


def summarize_deltas(deltas: Iterable[float]) -> DeltaSummary:
    """Mean, stderr (ddof=1), Student t-test (scipy.stats.ttest_1samp) and 95% CI.

    Non-finite values are rejected: a pair without a defined Δ must be excluded (and
    counted) by the caller, never averaged in silently. With no spread (SD at most
    ZERO_SPREAD_RTOL · max(1, |mean|)) the stderr is 0 and t, p and the CI are NaN.
    """
    x = np.asarray(list(deltas), dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("Δ values must be finite; drop and report undefined pairs first")
    n = int(x.size)
    nan = float("nan")
    if n == 0:
        return DeltaSummary(0, nan, nan, nan, nan, 0, nan, nan)
    # Identical values: take the value itself, since the float mean can miss it by an ulp
    # (mean of [0.1, 0.1, 0.1] is 0.10000000000000002).
    mean = float(x[0]) if np.ptp(x) == 0 else float(x.mean())
    if n == 1:
        return DeltaSummary(1, mean, nan, nan, nan, 0, nan, nan)
    df = n - 1
    sd = float(x.std(ddof=1))
    if no_spread(sd, mean):  # no spread: undefined, not "infinitely significant"
        return DeltaSummary(n, mean, 0.0, nan, nan, df, nan, nan)
    stderr = sd / math.sqrt(n)
    t = mean / stderr
    p = float(2 * stats.t.sf(abs(t), df))
    half = float(stats.t.ppf(0.975, df) * stderr)
    return DeltaSummary(n, mean, stderr, t, p, df, mean - half, mean + half)


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


def human_likeness(summaries: Mapping[str, DeltaSummary]) -> dict[str, int | None]:
    """Per-bias score (TACL Table 3): +1 significant Δ>0 (human-like), −1 significant Δ<0, 0 not
    significant; None where the test is undefined (untestable: neither human-like nor not)."""
    scores: dict[str, int | None] = {}
    for bias, s in summaries.items():
        significant = s.significant
        scores[bias] = None if significant is None else int(np.sign(s.mean)) if significant else 0
    return scores


def human_likeness_score(scores: Mapping[str, int | None]) -> float:
    """The sum of `human_likeness` over the testable biases; NaN where none is testable."""
    tested = [v for v in scores.values() if v is not None]
    return float(sum(tested)) if tested else math.nan


def untestable(scores: Mapping[str, int | None]) -> list[str]:
    """The biases of `human_likeness` whose test is undefined."""
    return [bias for bias, v in scores.items() if v is None]
