"""Paired statistics of `biasmonkey compare` (metrics/paired.py), against numbers worked out by hand here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biasmonkey.metrics.paired import (
    adjust,
    magnitude_change,
    mcnemar,
    mean_statistic,
    paired_bootstrap,
    paired_t,
    wilcoxon,
)


def test_paired_t_hand_computed() -> None:
    a, b = [1, 2, 3, 4], [2, 4, 3, 7]
    r = paired_t(a, b)
    # differences b − a = [1, 2, 0, 3]: mean 1.5; deviations −.5, .5, −1.5, 1.5 → SS = 5, SD = √(5/3) = 1.290994
    assert (r.n, r.df) == (4, 3)
    assert (r.mean_a, r.mean_b, r.difference) == (2.5, 4.0, 1.5)
    assert r.sd == pytest.approx(math.sqrt(5 / 3))
    # SE = SD / √4 = .645497; t = 1.5 / .645497 = √5.4 = 2.323790
    assert r.t == pytest.approx(math.sqrt(5.4))
    # df 3: two-sided p = 1 − (2/π)(u / (1 + u²) + atan u), u = t / √3 = √1.8 (Student's t CDF for 3 df)
    u = math.sqrt(1.8)
    assert r.p == pytest.approx(1 - 2 / math.pi * (u / (1 + u * u) + math.atan(u)))  # = .10273
    assert r.p == pytest.approx(0.10273, abs=1e-5)
    # 95% CI: 1.5 ± t(.975, 3) · SE = 1.5 ± 3.182446 · .6454972 = 1.5 ± 2.054260
    assert (r.ci_low, r.ci_high) == (pytest.approx(-0.554260, abs=1e-6), pytest.approx(3.554260, abs=1e-6))
    # Cohen's d_z = mean / SD = 1.5 / 1.290994 = 1.161895
    assert r.d_z == pytest.approx(1.161895, abs=1e-6)


def test_paired_t_undefined_cases() -> None:
    same = paired_t([1, 2, 3], [2, 3, 4])  # every difference 1: no spread
    assert same.difference == 1 and same.sd == 0
    assert math.isnan(same.p) and math.isnan(same.d_z)  # undefined, not infinitely significant
    one = paired_t([1], [3])
    assert one.difference == 2 and math.isnan(one.t) and math.isnan(one.d_z)
    with pytest.raises(ValueError, match="one shape"):
        paired_t([1, 2], [1])


def _outcomes(n01: int, n10: int, n11: int = 0, n00: int = 0) -> tuple[list[int], list[int]]:
    """0/1 outcomes of runs A and B with the given cell counts (n01: A 0 and B 1, …)."""
    a = [0] * n01 + [1] * n10 + [1] * n11 + [0] * n00
    b = [1] * n01 + [0] * n10 + [1] * n11 + [0] * n00
    return a, b


def test_mcnemar_exact_below_25_discordant() -> None:
    r = mcnemar(*_outcomes(6, 1, n11=2, n00=1))
    # 7 discordant: p = 2 · P(X ≤ 1), X ~ Bin(7, ½) = 2 · (C(7,0) + C(7,1)) / 2⁷ = 2 · 8 / 128 = .125
    assert (r.n, r.n01, r.n10, r.method, r.statistic) == (10, 6, 1, "exact", 1)
    assert r.p == pytest.approx(0.125)
    r = mcnemar(*_outcomes(17, 7))
    # 24 discordant (still exact): Σ_{k≤7} C(24,k) = 1 + 24 + 276 + 2024 + 10626 + 42504 + 134596 + 346104
    # = 536155; p = 2 · 536155 / 2²⁴ = 1072310 / 16777216 = .0639138
    assert r.method == "exact" and r.p == pytest.approx(1072310 / 16777216)
    assert mcnemar(*_outcomes(3, 3)).p == 1.0  # 2 · P(X ≤ 3 | 6) = 2 · 42/64 > 1: capped
    assert math.isnan(mcnemar(*_outcomes(0, 0, n11=4)).p)  # no discordant item: no test


def test_mcnemar_chi_square_from_25_discordant() -> None:
    r = mcnemar(*_outcomes(20, 5, n11=10))
    # χ² = (|20 − 5| − 1)² / 25 = 196 / 25 = 7.84 = 2.8²; df 1: p = 2 · (1 − Φ(2.8)) = 2 · .0025551 = .0051103
    assert (r.method, r.statistic) == ("chi2", pytest.approx(7.84))
    assert r.p == pytest.approx(0.0051103, abs=1e-7)
    with pytest.raises(ValueError, match="0/1 outcomes"):
        mcnemar([0, 0.5], [1, 1])


def test_wilcoxon_hand_computed() -> None:
    r = wilcoxon([0, 0, 0, 0, 0], [1, -2, 3, 4, 5])
    # |d| ranks 1…5; W− = 2 (the rank of −2), W+ = 13; statistic min(W+, W−) = 2. Exact null: each of the
    # 2⁵ = 32 sign patterns equally likely; W− ≤ 2 for the negative sets {}, {1}, {2}: 3 → p = 2 · 3/32 = .1875
    assert (r.n, r.statistic) == (5, 2)
    assert r.p == pytest.approx(6 / 32)
    zero = wilcoxon([1, 2], [1, 2])
    assert zero.n == 0 and math.isnan(zero.p)


def test_paired_bootstrap_two_items_worked_case() -> None:
    # A = [0, 0], B = [1, 0]: difference of means 0.5. A resample draws two item indices for both runs at
    # once: (0,0) → B − A = 1 (prob. ¼), (0,1) or (1,0) → .5 (½), (1,1) → 0 (¼). With 2000 resamples about
    # 500 are 0 and 500 are 1, so the 2.5% and 97.5% percentiles are 0 and 1; p = 2 · (#{d* ≤ 0} + 1) / 2001 ≈ .5
    r = paired_bootstrap([0, 0], [1, 0], resamples=2000, seed=7)
    assert (r.value_a, r.value_b, r.difference) == (0, 0.5, 0.5)
    assert (r.ci_low, r.ci_high) == (0, 1)
    assert r.valid == 2000 and 0.4 < r.p < 0.6


def test_paired_bootstrap_resamples_items_jointly() -> None:
    # B = A + 1 item by item: every joint resample gives B − A = 1 exactly, so the CI is [1, 1] and no
    # resample is ≤ 0: p = 2 · (0 + 1) / (2000 + 1). Resampling the runs separately would spread it ±1.
    a = [1.0, 2.0, 3.0, 4.0]
    r = paired_bootstrap(a, [x + 1 for x in a])
    assert (r.ci_low, r.ci_high, r.difference) == (1, 1, 1)
    assert r.p == pytest.approx(2 / 2001)


def test_paired_bootstrap_draws_are_the_documented_ones() -> None:
    # The resamples are default_rng(seed).integers(0, n, (resamples, n)): with 3 resamples the CI's ends are
    # the percentiles of these three differences of means.
    a, b = np.array([0.0, 1.0, 0.0, 1.0]), np.array([1.0, 1.0, 0.0, 0.0])
    idx = np.random.default_rng(3).integers(0, 4, size=(3, 4))
    d = sorted(b[i].mean() - a[i].mean() for i in idx)
    r = paired_bootstrap(a, b, resamples=3, seed=3, level=0.5)
    # level .5: the 25th and 75th percentiles of three sorted values, by linear interpolation
    assert r.ci_low == pytest.approx(d[0] + 0.5 * (d[1] - d[0]))
    assert r.ci_high == pytest.approx(d[1] + 0.5 * (d[2] - d[1]))
    assert paired_bootstrap(a, b, seed=3) == paired_bootstrap(a, b, seed=3)  # seeded: the same every time


def test_paired_bootstrap_leaves_out_undefined_resamples() -> None:
    # item 1 has no value (NaN) in either run: a resample of only item 1 has no mean; it is counted out
    a, b = [0.0, math.nan], [1.0, math.nan]
    r = paired_bootstrap(a, b, resamples=400, seed=1)
    assert r.difference == 1 and r.ci_low == r.ci_high == 1
    assert 0 < r.valid < 400  # about ¾ of the resamples draw item 0 at least once
    assert mean_statistic(np.array([[math.nan, math.nan]]))[0] != mean_statistic(np.array([[1.0, 1.0]]))[0]


def test_paired_bootstrap_within_strata() -> None:
    # Stratum s = items 0, 1 (A 0, 0; B 1, 1: B − A = 1) and stratum t = items 2, 3 (A = B = 0). Drawn within
    # strata, every resample keeps two items of each: the mean difference is always (1 + 1 + 0 + 0) / 4 = ½,
    # so the CI is [½, ½] and p = 2 / 2001. Drawn from all four items it ranges over 0 … 1.
    a, b, strata = [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], ["s", "s", "t", "t"]
    r = paired_bootstrap(a, b, strata=strata)
    assert (r.difference, r.ci_low, r.ci_high) == (0.5, 0.5, 0.5) and r.p == pytest.approx(2 / 2001)
    pooled = paired_bootstrap(a, b)
    assert pooled.ci_low < 0.5 < pooled.ci_high
    # the draws: per stratum in order of first appearance, integers(0, n_s, (resamples, n_s)) from one
    # generator, mapped to the stratum's items; one stratum gives exactly the unstratified draws
    x, y = np.array([0.0, 3.0, 1.0, 5.0]), np.array([1.0, 3.0, 0.0, 9.0])
    rng = np.random.default_rng(4)
    first, second = rng.integers(0, 2, size=(3, 2)), rng.integers(0, 2, size=(3, 2))
    idx = np.concatenate([np.array([0, 2])[first], np.array([1, 3])[second]], axis=1)
    d = sorted(y[i].mean() - x[i].mean() for i in idx)
    r = paired_bootstrap(x, y, resamples=3, seed=4, level=0.5, strata=["v", "u", "v", "u"])
    assert (r.ci_low, r.ci_high) == (
        pytest.approx(d[0] + 0.5 * (d[1] - d[0])),
        pytest.approx(d[1] + 0.5 * (d[2] - d[1])),
    )
    assert paired_bootstrap(x, y, strata=["one"] * 4) == paired_bootstrap(x, y)
    with pytest.raises(ValueError, match="one label per item"):
        paired_bootstrap(x, y, strata=["u"])


def test_holm_and_bh() -> None:
    p = [0.01, 0.04, 0.03, math.nan]
    # Holm, m = 3 (NaN not counted): sorted .01, .03, .04 → 3·.01 = .03, 2·.03 = .06, 1·.04 = .04 → running max
    # .03, .06, .06; back in input order [.03, .06, .06, NaN]
    assert adjust(p) == pytest.approx([0.03, 0.06, 0.06, math.nan], nan_ok=True)
    # BH: m·p/j = .03, .045, .04 → running min from the largest: .03, .04, .04 → [.03, .04, .04, NaN]
    assert adjust(p, "bh") == pytest.approx([0.03, 0.04, 0.04, math.nan], nan_ok=True)
    with pytest.raises(ValueError, match="unknown correction"):
        adjust(p, "bonferroni")


def test_magnitude_change_is_the_table_1_form() -> None:
    # |a| = [.5, .4], |b| = [.1, .3]: |b| − |a| = [−.4, −.1], mean −.25; SD = √((.15² + .15²)/1) = .212132;
    # d_z = .25 / .212132 = 1.178511 (positive: B less biased)
    r = magnitude_change([0.5, -0.4], [0.1, 0.3])
    assert r.mean_difference == pytest.approx(-0.25) and r.cohens_d == pytest.approx(1.178511, abs=1e-6)
