"""Paired comparisons of two runs on the same items: run A (the reference) and run B.

Every function takes the two runs' values of the same items, aligned (item i of `a` is item i of
`b`); a difference is always B − A.

- `paired_t`: Student's paired t-test of the per-item differences (a one-sample t-test of B − A
  against 0, `metrics.statistics.summarize_deltas`), its 95% CI and Cohen's d_z = mean / SD
  (ddof 1) of the differences. NaN where undefined (fewer than 2 items, all differences equal).
- `mcnemar`: McNemar's test of two paired 0/1 outcomes (e.g. correct answers) from the discordant
  items: n01 (A wrong, B right) and n10 (A right, B wrong). Below `EXACT_BELOW` discordant items
  the exact two-sided binomial test, p = min(1, 2 · P(X ≤ min(n01, n10))), X ~ Bin(n01 + n10, ½);
  from there on the χ² test with the continuity correction, (|n01 − n10| − 1)² / (n01 + n10), df 1.
  The result says which (`method`).
- `wilcoxon`: the Wilcoxon signed-rank test of B − A (scipy; zero differences dropped, exact
  distribution for small samples without ties, scipy's choice).
- `paired_bootstrap`: percentile CI of stat(B) − stat(A), resampling the items jointly for both
  runs (one draw of item indices serves both), so that what the items share cancels. Resamples are
  `numpy.random.default_rng(seed).integers(0, n, size=(resamples, n))`; a resample whose statistic
  is NaN (e.g. a letter no drawn item has as its answer) is left out and counted (`valid`). Its
  two-sided p is 2 · min(#{d* ≤ 0} + 1, #{d* ≥ 0} + 1) / (valid + 1), capped at 1. With `strata` (one
  label per item, e.g. its MMLU subject), the items are drawn within each stratum: per stratum in order
  of first appearance, `integers(0, n_s, size=(resamples, n_s))` from the same generator, mapped to that
  stratum's items (one stratum: the unstratified draws), so every resample keeps each stratum's size.
  An item alone in its stratum is the same in every resample: it adds no variance (counted, `fixed`).
  CI and p are NaN, with the reason in `undefined`, where the bootstrap says nothing: fewer than 2
  items, every stratum a single item (nothing is redrawn), fewer than `MIN_VALID` (90 %) of the
  resamples valid (the kept ones are no longer a sample of the items: they are those that happen to
  draw, e.g., every gold letter), or no spread (every valid resample gives the same difference, so
  the CI has zero width and p would be its smallest value from nothing but reorderings of the items).
- `adjust`: Holm or Benjamini–Hochberg adjusted p-values (`metrics.multiple_testing`).
- `magnitude_change`: the model-pairs form (Bhatt & Ivanova's Table 1): mean change of |bias| over
  paired units with paired d_z and t-test (`metrics.yesno.instruction_tuning_effect`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from biasmonkey.metrics.multiple_testing import benjamini_hochberg, holm
from biasmonkey.metrics.statistics import no_spread, summarize_deltas
from biasmonkey.metrics.yesno import InstructionTuningEffect, instruction_tuning_effect

EXACT_BELOW = 25  # discordant items under which McNemar's test is the exact binomial test
RESAMPLES = 2000
SEED = 0
LEVEL = 0.95
CORRECTIONS: dict[str, Callable[[Sequence[float]], np.ndarray]] = {"holm": holm, "bh": benjamini_hochberg}
MIN_VALID = 0.9  # the share of valid resamples under which the bootstrap's CI and p are undefined
_CHUNK = 250  # resamples evaluated at once (bounds the memory of a vectorised statistic)

ArrayLike = Sequence[float] | np.ndarray
# A set-level statistic: values of shape (resamples, items, …) → one number per resample, shape (resamples,).
Statistic = Callable[[np.ndarray], np.ndarray]


def _aligned(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim == 0:
        raise ValueError(f"paired values need one shape for both runs, got {x.shape} and {y.shape}")
    return x, y


@dataclass(frozen=True)
class PairedT:
    """Paired t-test of B − A with its 95% CI and Cohen's d_z."""

    n: int
    mean_a: float
    mean_b: float
    difference: float  # mean of B − A
    sd: float  # SD (ddof 1) of the differences
    t: float
    df: int
    p: float
    ci_low: float
    ci_high: float
    d_z: float  # difference / sd

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def paired_t(a: ArrayLike, b: ArrayLike) -> PairedT:
    """Paired t-test of the differences b − a against 0 (values must be finite)."""
    x, y = _aligned(a, b)
    s = summarize_deltas(y - x)
    sd = s.stderr * math.sqrt(s.n) if s.n > 1 else math.nan
    d_z = s.mean / sd if sd > 0 else math.nan
    mean_a, mean_b = (float(v.mean()) if v.size else math.nan for v in (x, y))
    return PairedT(s.n, mean_a, mean_b, s.mean, sd, s.t, s.df, s.p, s.ci_low, s.ci_high, d_z)


@dataclass(frozen=True)
class McNemar:
    """McNemar's test of paired 0/1 outcomes; `method` is "exact" (binomial) or "chi2" (continuity-corrected)."""

    n: int
    n01: int  # A 0, B 1
    n10: int  # A 1, B 0
    method: str
    statistic: float  # exact: min(n01, n10); chi2: the χ² value
    p: float  # NaN without discordant items

    def as_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


def mcnemar(a: ArrayLike, b: ArrayLike, exact_below: int = EXACT_BELOW) -> McNemar:
    """McNemar's test of two runs' 0/1 outcomes on the same items (other values are an error)."""
    x, y = _aligned(a, b)
    if not np.all(np.isin(x, (0, 1)) & np.isin(y, (0, 1))):
        raise ValueError("McNemar's test needs 0/1 outcomes; leave out (and count) the items with other values")
    n01, n10 = int(np.sum((x == 0) & (y == 1))), int(np.sum((x == 1) & (y == 0)))
    discordant = n01 + n10
    if discordant < exact_below:
        low = min(n01, n10)
        p = min(1.0, 2.0 * float(stats.binom.cdf(low, discordant, 0.5))) if discordant else math.nan
        return McNemar(int(x.size), n01, n10, "exact", float(low), p)
    chi2 = (abs(n01 - n10) - 1) ** 2 / discordant
    return McNemar(int(x.size), n01, n10, "chi2", float(chi2), float(stats.chi2.sf(chi2, 1)))


@dataclass(frozen=True)
class Wilcoxon:
    n: int  # items with a non-zero difference
    statistic: float
    p: float  # NaN when every difference is 0


def wilcoxon(a: ArrayLike, b: ArrayLike) -> Wilcoxon:
    """Wilcoxon signed-rank test of b − a (scipy.stats.wilcoxon, zero differences dropped)."""
    x, y = _aligned(a, b)
    d = y - x
    nonzero = int(np.count_nonzero(d))
    if nonzero == 0:
        return Wilcoxon(0, math.nan, math.nan)
    res = stats.wilcoxon(d)
    return Wilcoxon(nonzero, float(res.statistic), float(res.pvalue))


@dataclass(frozen=True)
class BootstrapCI:
    """stat(B) − stat(A) with its paired percentile bootstrap CI and p (NaN where `undefined` says why)."""

    value_a: float
    value_b: float
    difference: float
    ci_low: float
    ci_high: float
    p: float
    resamples: int  # drawn (0: none, too few items)
    valid: int  # with a finite statistic in both runs
    seed: int
    undefined: str = ""  # why CI and p are NaN ("" where they are defined)
    fixed: int = 0  # items alone in their stratum: the same in every resample

    def as_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


def mean_statistic(values: np.ndarray) -> np.ndarray:
    """The mean over the items (axis 1) of scalar item values, NaN values left out (all NaN: NaN)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice": NaN, and counted
        return np.nanmean(values, axis=1)


def paired_bootstrap(
    a: ArrayLike,
    b: ArrayLike,
    statistic: Statistic = mean_statistic,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    strata: Sequence[Any] | None = None,
) -> BootstrapCI:
    """Percentile bootstrap CI of statistic(b) − statistic(a), items (axis 0) resampled jointly
    (within each stratum where `strata` labels the items); CI and p NaN where undefined (module doc)."""
    x, y = _aligned(a, b)
    n = x.shape[0]
    if resamples < 1 or not 0 < level < 1:
        raise ValueError(f"need resamples ≥ 1 and 0 < level < 1, got {resamples} and {level}")
    if strata is not None and len(strata) != n:
        raise ValueError(f"strata: one label per item needed, got {len(strata)} for {n} items")
    value_a, value_b = (float(statistic(v[None])[0]) if n else math.nan for v in (x, y))
    groups = _groups(n, strata)
    fixed = sum(len(g) for g in groups if len(g) == 1) if strata is not None else 0

    def undefined(why: str, drawn: int = 0, valid: int = 0) -> BootstrapCI:
        nan = math.nan
        return BootstrapCI(value_a, value_b, value_b - value_a, nan, nan, nan, drawn, valid, seed, why, fixed)

    if n < 2:
        return undefined(f"{n} item{'s' * (n != 1)}: nothing to resample")
    if fixed == n:
        return undefined(f"every stratum has a single item ({n} strata): each resample is the same items")
    draws = _draws(np.random.default_rng(seed), groups, resamples)
    diffs = np.concatenate(
        [statistic(y[idx]) - statistic(x[idx]) for idx in np.array_split(draws, math.ceil(resamples / _CHUNK))]
    )
    diffs = diffs[np.isfinite(diffs)]
    valid = int(diffs.size)
    if valid < MIN_VALID * resamples:
        why = f"only {valid} of {resamples} resamples have the statistic in both runs (under {MIN_VALID:.0%})"
        return undefined(why, resamples, valid)
    if no_spread(float(np.ptp(diffs)), float(np.median(diffs))):  # (reordered items: rounding alone)
        return undefined(f"no spread (every resample gives the same difference, {diffs[0]:.3g})", resamples, valid)
    tail = (1 - level) / 2
    low, high = np.quantile(diffs, [tail, 1 - tail])
    below, above = np.count_nonzero(diffs <= 0), np.count_nonzero(diffs >= 0)
    p = float(min(1.0, 2 * (min(below, above) + 1) / (valid + 1)))
    return BootstrapCI(
        value_a, value_b, value_b - value_a, float(low), float(high), p, resamples, valid, seed, "", fixed
    )


def _groups(n: int, strata: Sequence[Any] | None) -> list[list[int]]:
    """The item indices of each stratum, in order of first appearance (no strata: one group of all)."""
    if strata is None:
        return [list(range(n))]
    groups: dict[Any, list[int]] = {}
    for i, label in enumerate(strata):
        groups.setdefault(label, []).append(i)
    return list(groups.values())


def _draws(rng: np.random.Generator, groups: Sequence[Sequence[int]], resamples: int) -> np.ndarray:
    """Item indices, shape (resamples, n): drawn within each group (one group: `integers(0, n, …)`)."""
    parts = [np.asarray(idx)[rng.integers(0, len(idx), size=(resamples, len(idx)))] for idx in groups]
    return np.concatenate(parts, axis=1)


def adjust(pvalues: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjusted p-values, "holm" (family-wise error) or "bh" (false discovery rate); NaN stays NaN."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; use one of {', '.join(CORRECTIONS)}")
    return CORRECTIONS[method](pvalues)


def magnitude_change(a: ArrayLike, b: ArrayLike) -> InstructionTuningEffect:
    """Change of |bias| from A to B over paired units (model pairs × tasks or domains): mean of
    |b| − |a|, d_z positive when B is less biased, paired t-test (Bhatt & Ivanova's Table 1)."""
    return instruction_tuning_effect(a, b)
