"""The minimum detectable Δ of the report's t-test against hand-computed numbers.

Quantiles (scipy.stats.t.ppf, copied here by hand):
    df 1:  t_0.975 = 12.706205, t_0.8 = 1.376382
    df 4:  t_0.975 = 2.776445,  t_0.8 = 0.940965
    df 28: t_0.975 = 2.048407,  t_0.8 = 0.854647
    df 29: t_0.975 = 2.045230,  t_0.8 = 0.854192
"""

from __future__ import annotations

import math

import pytest

from biasmonkey.metrics.power import minimum_detectable_effect, pairs_needed


def test_mde_by_hand() -> None:
    # n 5, sd 2: (2.776445 + 0.940965) · 2 / √5 = 3.717410 · 0.894427 = 3.324952
    assert minimum_detectable_effect(5, 2.0) == pytest.approx(3.324952, abs=1e-5)
    # n 30, sd 10: (2.045230 + 0.854192) · 10 / √30 = 2.899422 · 1.825742 = 5.293595
    assert minimum_detectable_effect(30, 10.0) == pytest.approx(5.293595, abs=1e-5)
    # n 2, sd 1: (12.706205 + 1.376382) / √2 = 14.082587 / 1.414214 = 9.957893
    assert minimum_detectable_effect(2, 1.0) == pytest.approx(9.957893, abs=1e-5)


def test_mde_edges() -> None:
    assert minimum_detectable_effect(1, 3.0) == math.inf  # one pair: no t-test at all
    assert minimum_detectable_effect(0, 3.0) == math.inf
    # no spread: the t-test is undefined (summarize_deltas gives p NaN), so there is no MDE, not 0
    assert math.isnan(minimum_detectable_effect(10, 0.0))
    assert math.isnan(minimum_detectable_effect(1, 0.0))
    assert math.isnan(minimum_detectable_effect(10, math.nan))
    assert math.isnan(minimum_detectable_effect(10, -1.0))
    with pytest.raises(ValueError, match="must lie in"):
        minimum_detectable_effect(10, 1.0, alpha=0.0)
    # more pairs, smaller MDE
    values = [minimum_detectable_effect(n, 5.0) for n in (3, 5, 10, 50, 500)]
    assert values == sorted(values, reverse=True)


def test_pairs_needed_by_hand() -> None:
    # MDE(30, 10) = 5.293595 (above); MDE(29, 10) = (2.048407 + 0.854647) · 10 / √29 = 5.390837 > 5.2936
    assert pairs_needed(5.2936, 10.0) == 30
    assert pairs_needed(-5.2936, 10.0) == 30  # the sign of the effect does not matter
    # MDE(5, 2) = 3.324952; MDE(6, 2) is smaller, MDE(4, 2) larger
    assert pairs_needed(3.3250, 2.0) == 5
    assert pairs_needed(3.3249, 2.0) == 6
    assert pairs_needed(0.0, 2.0) is None
    assert pairs_needed(1.0, 0.0) is None  # no spread: no t-test at any n (was 2)
    assert pairs_needed(1.0, math.nan) is None
    assert pairs_needed(1e-9, 1e9, max_n=1000) is None  # not within max_n
