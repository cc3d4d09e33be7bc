"""Paired statistics of `biasmonkey compare` (metrics/paired.py), against numbers worked out by hand here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biasmonkey.metrics.paired import (
    MIN_VALID,
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


def test_paired_bootstrap_without_spread_is_undefined() -> None:
    # B = A + 1 item by item: every joint resample gives B − A = 1 exactly (resampling the runs separately
    # would spread it ±1). A zero-width CI [1, 1] with p = 2 · (0 + 1) / 2001 would be "significant" from
    # nothing but reorderings of the same items: CI and p are NaN, and the note says why.
    a = [1.0, 2.0, 3.0, 4.0]
    r = paired_bootstrap(a, [x + 1 for x in a])
    assert r.difference == 1 and (r.resamples, r.valid) == (2000, 2000)
    assert math.isnan(r.ci_low) and math.isnan(r.ci_high) and math.isnan(r.p)
    assert r.undefined.startswith("no spread")
    # identical runs: every difference 0; no p of 1 that would count as a test in Holm's m
    same = paired_bootstrap([0.0, 1.0, 1.0], [0.0, 1.0, 1.0])
    assert same.difference == 0 and math.isnan(same.p) and same.undefined.startswith("no spread")


def test_paired_bootstrap_needs_two_items() -> None:
    # one item: every resample is that item, B − A = 1 each time (it was CI [1, 1], p = 2/2001); none drawn
    one = paired_bootstrap([0.0], [1.0])
    assert one.difference == 1 and math.isnan(one.ci_low) and math.isnan(one.p)
    assert (one.resamples, one.valid, one.undefined) == (0, 0, "1 item: nothing to resample")
    none = paired_bootstrap([], [])
    assert math.isnan(none.difference) and math.isnan(none.p) and none.undefined == "0 items: nothing to resample"


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
    # item 2 has no value (NaN) in either run: a resample of only item 2 has no mean; it is left out and
    # counted. P(all three draws are item 2) = (1/3)³ = 1/27: about 2000 · 26/27 = 1926 valid, over 90 %.
    a, b = [0.0, 1.0, math.nan], [1.0, 1.0, math.nan]
    r = paired_bootstrap(a, b, seed=2)
    draws = np.random.default_rng(2).integers(0, 3, size=(2000, 3))
    assert r.valid == int(np.sum(np.any(draws != 2, axis=1))) and 1880 < r.valid < 1970
    assert r.difference == 0.5 and (r.ci_low, r.ci_high) == (0, 1) and r.undefined == ""
    assert mean_statistic(np.array([[math.nan, math.nan]]))[0] != mean_statistic(np.array([[1.0, 1.0]]))[0]


def test_paired_bootstrap_with_too_few_valid_resamples_is_undefined() -> None:
    # item 1 NaN of two: a resample is valid when it draws item 0 at least once, P = 1 − (1/2)² = ¾, so
    # about 1500 of 2000 are kept, under 90 %: the kept ones are not a sample of the items (those that happen
    # to draw item 0), so CI and p are NaN and the count is given.
    r = paired_bootstrap([0.0, math.nan], [1.0, math.nan])
    draws = np.random.default_rng(0).integers(0, 2, size=(2000, 2))
    assert r.valid == int(np.sum(np.any(draws == 0, axis=1))) and 1400 < r.valid < 1600
    assert math.isnan(r.ci_low) and math.isnan(r.p) and r.difference == 1
    assert r.undefined == f"only {r.valid} of 2000 resamples have the statistic in both runs (under 90%)"
    # the rule is MIN_VALID of the drawn resamples: 4 questions, each of another gold letter, and a statistic
    # that needs every letter drawn (as RStd does): P = 4!/4⁴ = 24/256 = 9.4 %, about 188 of 2000
    gold = np.array([0.0, 1.0, 2.0, 3.0])

    def every_letter(values: np.ndarray) -> np.ndarray:
        letters = np.stack([(values == j).any(axis=1) for j in range(4)], axis=-1)
        return np.where(letters.all(axis=-1), 0.0, math.nan)

    r = paired_bootstrap(gold, gold, every_letter)
    draws = np.random.default_rng(0).integers(0, 4, size=(2000, 4))
    assert MIN_VALID == 0.9 and r.valid == sum(len(set(row)) == 4 for row in draws.tolist())
    assert 150 < r.valid < 230 and math.isnan(r.p)


def test_paired_bootstrap_within_strata() -> None:
    # Stratum s = items 0, 1 (A 0, 0; B 1, 1: B − A = 1) and stratum t = items 2, 3 (A = B = 0). Drawn within
    # strata, every resample keeps two items of each: the mean difference is always (1 + 1 + 0 + 0) / 4 = ½,
    # no spread (undefined). Drawn from all four items it ranges over 0 … 1.
    a, b, strata = [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], ["s", "s", "t", "t"]
    r = paired_bootstrap(a, b, strata=strata)
    assert r.difference == 0.5 and math.isnan(r.ci_low) and r.undefined.startswith("no spread")
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


def test_paired_bootstrap_singleton_strata() -> None:
    # Every stratum a single item: each resample is the items themselves (B − A = (1 + 0) / 2 = ½ every time;
    # it was CI [½, ½], p = 2/2001): nothing is redrawn, CI and p NaN, none drawn.
    r = paired_bootstrap([0.0, 0.0], [1.0, 0.0], strata=["s", "t"])
    assert r.difference == 0.5 and math.isnan(r.ci_low) and math.isnan(r.p) and (r.resamples, r.fixed) == (0, 2)
    assert r.undefined == "every stratum has a single item (2 strata): each resample is the same items"
    # Some singletons: stratum s = items 0, 1 (B − A = 1, 0), stratum t = item 2 alone (B − A = 1, in every
    # resample, counted as fixed). A resample's mean difference is (s's two draws + 1) / 3: both item 0 (¼) → 1,
    # one of each (½) → ⅔, both item 1 (¼) → ⅓. The 2.5th and 97.5th percentiles: ⅓ and 1; none ≤ 0, so
    # p = 2 · (0 + 1) / 2001. The CI carries stratum s's variance only.
    r = paired_bootstrap([0.0, 0.0, 0.0], [1.0, 0.0, 1.0], strata=["s", "s", "t"])
    assert (r.difference, r.fixed, r.undefined) == (pytest.approx(2 / 3), 1, "")
    assert (r.ci_low, r.ci_high) == (pytest.approx(1 / 3), 1) and r.p == pytest.approx(2 / 2001)


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
