"""Metrics and per-pair scoring against hand-computed numbers (arithmetic in the comments)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from biasmonkey.metrics import (
    PERTURBATIONS,
    DeltaSummary,
    distribution_from_counts,
    distribution_from_logprobs,
    human_likeness,
    normalized_entropy,
    pair_delta,
    pearson,
    summarize_deltas,
)
from biasmonkey.metrics.statistics import ZERO_SPREAD_RTOL, human_likeness_score, untestable
from biasmonkey.tasks.response_bias.prompts import parse_answer
from biasmonkey.tasks.response_bias.scoring import option_logprobs, score_exact, score_samples

NAN_OK = {"nan_ok": True}

# ------------------------------------------------------------------------------ pair_delta

# (bias, q, q', qp_positions, expected Δ); letters a..e are positions in the ORIGINAL question.
BIAS_CASES = [
    # acquiescence: 100(q'[a] − q[a]) = 100(0.7 − 0.6) = 10
    ("acquiescence", [0.6, 0.4], [0.7, 0.3], None, 10.0),
    # allow/forbid (TACL sign): 100(q[b] − q'[a]) = 100(0.7 − 0.2) = 50
    ("allow_forbid", [0.3, 0.7], [0.2, 0.8], None, 50.0),
    # response order, q' options reversed: q' label C is original a, so
    # 100(q[a] − q'[C]) = 100(0.5 − 0.6) = −10   (without the mapping it would be 100(0.5 − 0.1) = 40)
    ("response_order", [0.5, 0.3, 0.2], [0.1, 0.3, 0.6], [2, 1, 0], -10.0),
    # opinion floating, q' has a 6th ("don't know") option: 100(q[c] − q'[c]) = 100(0.4 − 0.1) = 30
    ("opinion_float", [0.1, 0.2, 0.4, 0.2, 0.1], [0.1, 0.2, 0.1, 0.2, 0.1, 0.3], None, 30.0),
    # odd/even: q' labels A,B,C,D stand for a,b,d,e, so q'[b] = q'[B] = 0.35 and q'[d] = q'[C] = 0.45:
    # 100(0.35 + 0.45 − 0.2 − 0.2) = 100 · 0.4 = 40
    ("odd_even", [0.1, 0.2, 0.4, 0.2, 0.1], [0.1, 0.35, 0.45, 0.1], [0, 1, 3, 4], 40.0),
]

# Perturbations: q' is the perturbed original (same options, identity positions).
PERTURBATION_CASES = [
    # acquiescence: 100(q'[a] − q[a]) = 100(0.45 − 0.6) = −15
    ("acquiescence", [0.6, 0.4], [0.45, 0.55], None, -15.0),
    # allow/forbid compares b on both sides: 100(q[b] − q'[b]) = 100(0.7 − 0.8) = −10
    ("allow_forbid", [0.3, 0.7], [0.2, 0.8], None, -10.0),
    # response order, no reversal: 100(q[a] − q'[a]) = 100(0.5 − 0.25) = 25
    ("response_order", [0.5, 0.3, 0.2], [0.25, 0.5, 0.25], None, 25.0),
    # opinion floating, 5 options both sides: 100(q[c] − q'[c]) = 100(0.4 − 0.5) = −10
    ("opinion_float", [0.1, 0.2, 0.4, 0.2, 0.1], [0.1, 0.2, 0.5, 0.1, 0.1], None, -10.0),
    # odd/even, 5 options both sides: 100(q'[b] + q'[d] − q[b] − q[d]) = 100(0.3 + 0.3 − 0.2 − 0.2) = 20
    ("odd_even", [0.1, 0.2, 0.4, 0.2, 0.1], [0.1, 0.3, 0.2, 0.3, 0.1], None, 20.0),
]


@pytest.mark.parametrize(("bias", "q", "qp", "positions", "expected"), BIAS_CASES, ids=[c[0] for c in BIAS_CASES])
def test_pair_delta_bias(bias, q, qp, positions, expected) -> None:
    assert pair_delta(bias, "bias", q, qp, positions) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("setting", PERTURBATIONS)
@pytest.mark.parametrize(
    ("bias", "q", "qp", "positions", "expected"), PERTURBATION_CASES, ids=[c[0] for c in PERTURBATION_CASES]
)
def test_pair_delta_perturbation(bias, q, qp, positions, expected, setting) -> None:
    assert pair_delta(bias, setting, q, qp, positions) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("bias", "q", "qp", "positions", "mapped", "unmapped"),
    [
        # reversed 3 options: mapped 100(0.5 − 0.6) = −10; identity 100(0.5 − 0.1) = 40
        ("response_order", [0.5, 0.3, 0.2], [0.1, 0.3, 0.6], [2, 1, 0], -10.0, 40.0),
        # odd/even: mapped 100(0.35 + 0.45 − 0.4) = 40; identity uses q' B and D: 100(0.35 + 0.1 − 0.4) = 5
        ("odd_even", [0.1, 0.2, 0.4, 0.2, 0.1], [0.1, 0.35, 0.45, 0.1], [0, 1, 3, 4], 40.0, 5.0),
    ],
)
def test_pair_delta_position_mapping_matters(bias, q, qp, positions, mapped, unmapped) -> None:
    assert pair_delta(bias, "bias", q, qp, positions) == pytest.approx(mapped, abs=1e-9)
    assert pair_delta(bias, "bias", q, qp, None) == pytest.approx(unmapped, abs=1e-9)
    assert pair_delta(bias, "bias", q, qp, list(range(len(qp)))) == pytest.approx(unmapped, abs=1e-9)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("sycophancy", "bias", [0.5, 0.5], [0.5, 0.5]), "unknown bias 'sycophancy'"),
        (("acquiescence", "typo", [0.5, 0.5], [0.5, 0.5]), "unknown setting 'typo'"),
        # allow/forbid needs q[b]: a 1-option q has none
        (("allow_forbid", "bias", [1.0], [0.5, 0.5]), r"q has 1 options but Δ needs option b"),
        # opinion floating needs option c on both sides
        (("opinion_float", "bias", [0.5, 0.5], [0.2, 0.3, 0.5]), r"q has 2 options but Δ needs option c"),
        (("opinion_float", "key_typo", [0.2, 0.3, 0.5], [0.5, 0.5]), r"q' has 2 options but Δ needs option c"),
        # odd/even needs d (position 3): a 3-option q' without mapping has no d
        (("odd_even", "bias", [0.2] * 5, [0.2, 0.3, 0.5]), r"q' has 3 options but Δ needs option d"),
        # two q' probabilities for three positions
        (("response_order", "bias", [0.5, 0.3, 0.2], [0.4, 0.6], [2, 1, 0]), "2 probabilities for 3 option positions"),
        (("odd_even", "bias", [0.2] * 5, [0.25] * 4, [0, 1, 3]), "4 probabilities for 3 option positions"),
    ],
    ids=["bias", "setting", "af-b", "of-q-c", "of-qp-c", "oe-d", "positions-ro", "positions-oe"],
)
def test_pair_delta_errors(args, match) -> None:
    with pytest.raises(ValueError, match=match):
        pair_delta(*args)


# ------------------------------------------------------------------------------ distributions


@pytest.mark.parametrize(
    ("logprobs", "expected"),
    [
        # exp(log .2) : exp(log .3) = 0.2 : 0.3 → 0.2/0.5, 0.3/0.5
        ([math.log(0.2), math.log(0.3)], [0.4, 0.6]),
        # unnormalised and shifted: 2 : 1 : 1 → 0.5, 0.25, 0.25
        ([math.log(2) + 100, 100.0, 100.0], [0.5, 0.25, 0.25]),
        # huge equal values must not overflow
        ([1000.0, 1000.0], [0.5, 0.5]),
        ([-1e4, 0.0], [0.0, 1.0]),
    ],
)
def test_distribution_from_logprobs(logprobs, expected) -> None:
    got = distribution_from_logprobs(logprobs)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert got.sum() == pytest.approx(1.0, rel=1e-15)


@pytest.mark.parametrize("bad", [[0.0, float("nan")], [0.0, float("inf")], [0.0, -float("inf")], []])
def test_distribution_from_logprobs_rejects_non_finite(bad) -> None:
    with pytest.raises(ValueError, match="finite"):
        distribution_from_logprobs(bad)


@pytest.mark.parametrize(
    ("counts", "total", "expected"),
    [
        ([3, 1, 0, 4], None, [3 / 8, 1 / 8, 0.0, 4 / 8]),  # 8 valid answers
        ([3, 1], 50, [0.06, 0.02]),  # 3/50, 1/50 (the released samples divide by the 50 rows)
        ([0, 5], None, [0.0, 1.0]),
    ],
)
def test_distribution_from_counts(counts, total, expected) -> None:
    assert distribution_from_counts(counts, total) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(
    ("counts", "total", "match"),
    [
        ([0, 0], None, "no answers"),
        ([1, 2], 0, "no answers"),
        ([3, 1], 2, "smaller than the 4 counted"),
        ([-1, 3], None, "non-negative"),
    ],
)
def test_distribution_from_counts_errors(counts, total, match) -> None:
    with pytest.raises(ValueError, match=match):
        distribution_from_counts(counts, total)


# ------------------------------------------------------------------------------ summarize_deltas

# [1, 2, 3, 6]: mean 12/4 = 3; deviations −2, −1, 0, 3 → squares 4 + 1 + 0 + 9 = 14;
# sample variance 14/3; stderr = sqrt(14/3)/sqrt(4) = sqrt(14/3)/2 ≈ 1.080123;
# t = 3/stderr = sqrt(54/7) ≈ 2.777460 (t² = 9 · 12/14 = 54/7), df = 3.
STDERR_1236 = math.sqrt(14 / 3) / 2
T_1236 = 3 / STDERR_1236
T_CRIT_975_DF3 = 3.182446  # t-table, 97.5% quantile, 3 df


def _t_sf2_df3(t: float) -> float:
    """Two-sided p for Student t with 3 df, textbook closed form (no scipy):
    p = 1 − (2/π)(θ + sinθ cosθ), θ = arctan(t/√3)."""
    theta = math.atan(abs(t) / math.sqrt(3))
    return 1 - (2 / math.pi) * (theta + math.sin(theta) * math.cos(theta))


def test_summarize_deltas_hand_example() -> None:
    s = summarize_deltas([1, 2, 3, 6])
    assert (s.n, s.df) == (4, 3)
    assert s.mean == 3.0
    assert s.stderr == pytest.approx(STDERR_1236, rel=1e-12)
    assert s.stderr == pytest.approx(1.080123, abs=1e-6)
    assert s.t == pytest.approx(math.sqrt(54 / 7), rel=1e-12)
    # p: between the table's 0.10 (t 2.353) and 0.05 (t 3.182) two-sided critical values;
    # closed form above ≈ 0.069137; to three decimals 0.069.
    assert round(s.p, 3) == 0.069
    assert s.p == pytest.approx(_t_sf2_df3(T_1236), rel=1e-9)
    assert s.p == pytest.approx(2 * stats.t.sf(T_1236, 3), rel=1e-12)
    assert not s.significant
    # 95% CI: 3 ± 3.182446 · 1.080123 = 3 ± 3.437434
    half = T_CRIT_975_DF3 * STDERR_1236
    assert half == pytest.approx(3.437434, abs=1e-6)
    assert s.ci_low == pytest.approx(3 - half, abs=1e-6)
    assert s.ci_high == pytest.approx(3 + half, abs=1e-6)


def test_summarize_deltas_significant_example() -> None:
    # [2, 3, 4, 5, 6]: mean 4; squares 4 + 1 + 0 + 1 + 4 = 10; variance 10/4 = 2.5;
    # stderr sqrt(2.5/5) = sqrt(0.5) ≈ 0.707107; t = 4/0.707107 = 4·sqrt(2) ≈ 5.656854, df 4.
    # Table (df 4, two-sided): t_.01 = 4.604 < 5.657 < t_.001 = 8.610 → 0.001 < p < 0.01.
    s = summarize_deltas([2, 3, 4, 5, 6])
    assert s.t == pytest.approx(4 * math.sqrt(2), rel=1e-12)
    assert 0.001 < s.p < 0.01 and s.significant
    assert s.p == pytest.approx(2 * stats.t.sf(4 * math.sqrt(2), 4), rel=1e-12)
    # 95% CI: t_crit(4) = 2.776445 → 4 ± 2.776445 · 0.707107 = 4 ± 1.963243
    assert s.ci_low == pytest.approx(4 - 1.963243, abs=1e-6)
    assert s.ci_high == pytest.approx(4 + 1.963243, abs=1e-6)


def _is_nan(x: float) -> bool:
    return isinstance(x, float) and math.isnan(x)


def test_summarize_deltas_empty_and_single() -> None:
    empty = summarize_deltas([])
    assert (empty.n, empty.df) == (0, 0)
    assert all(_is_nan(v) for v in (empty.mean, empty.stderr, empty.t, empty.p, empty.ci_low, empty.ci_high))
    assert empty.significant is None and empty.undefined_reason == "no pair with a Δ"  # n/a, not "not significant"

    one = summarize_deltas([5.0])
    assert (one.n, one.mean, one.df) == (1, 5.0, 0)
    assert all(_is_nan(v) for v in (one.stderr, one.t, one.p, one.ci_low, one.ci_high))
    assert one.significant is None and one.undefined_reason == "1 pair: no t-test"


@pytest.mark.parametrize("values", [[2.0, 2.0, 2.0, 2.0], [0.1, 0.1, 0.1], [-100 / 3] * 7])
def test_summarize_deltas_identical_values_are_untestable(values) -> None:
    # No spread: the t statistic is undefined (0/0), not infinite, and so are p, the CI (not a
    # zero-width interval at the mean) and the significance (None, not False). [0.1, 0.1, 0.1] is
    # the tricky one: its float mean is 0.10000000000000002, which fakes a spread of 1e-17.
    s = summarize_deltas(values)
    assert s.mean == values[0]
    assert s.stderr == 0.0
    assert _is_nan(s.t) and _is_nan(s.p)
    assert _is_nan(s.ci_low) and _is_nan(s.ci_high)
    assert s.significant is None
    assert s.undefined_reason == f"no spread: all {len(values)} Δ equal to 12 digits"


def test_summarize_deltas_spread_in_the_last_bits_is_no_spread() -> None:
    # Seven copies of x and one a single ulp above (ulp(23.1) = 2^-48 ≈ 3.6e-15): SD ≈ 1.3e-15, which
    # gave t ≈ 1.8e16 and p ≈ 3.7e-112. 1.3e-15 ≤ 1e-12 · 23.1: no spread, the test is undefined.
    x = 23.10585786300049
    s = summarize_deltas([x] * 7 + [math.nextafter(x, math.inf)])
    assert s.stderr == 0.0 and _is_nan(s.t) and _is_nan(s.p) and _is_nan(s.ci_low) and s.significant is None
    assert s.mean == pytest.approx(x, rel=1e-15)


@pytest.mark.parametrize(
    ("base", "step", "defined"),
    [
        # [b, b, b, b + d]: mean b + d/4, deviations −d/4 (×3) and 3d/4 → Σ² = 3d²/16 + 9d²/16 = 3d²/4;
        # variance (3d²/4)/3 = d²/4 → SD = d/2. Tolerance: 1e-12 · max(1, |mean|).
        (1.0, 4e-12, True),  # SD 2e-12 > 1e-12 · 1
        (1.0, 1e-12, False),  # SD 5e-13 ≤ 1e-12
        (0.0, 4e-12, True),  # mean 1e-12: the floor 1 → tolerance 1e-12 < SD 2e-12
        (0.0, 1e-12, False),  # SD 5e-13 ≤ 1e-12 (without the floor, 1e-12 · 2.5e-13 would call it a spread)
        (1e6, 4e-6, True),  # SD 2e-6 > 1e-12 · 1e6 = 1e-6
        (1e6, 1e-6, False),  # SD 5e-7 ≤ 1e-6
    ],
)
def test_summarize_deltas_zero_spread_tolerance(base: float, step: float, defined: bool) -> None:
    assert ZERO_SPREAD_RTOL == 1e-12  # the cases above are computed for it
    s = summarize_deltas([base] * 3 + [base + step])
    assert (s.significant is not None) == defined
    assert _is_nan(s.p) != defined and _is_nan(s.ci_low) != defined
    if defined:  # stderr = SD/√4 = d/4; t = (b + d/4)/(d/4): 1e12 for b = 1 and 1e6, 1 for b = 0
        assert s.stderr == pytest.approx(step / 4, rel=1e-3)
        assert s.t == pytest.approx((base + step / 4) / (step / 4), rel=1e-3)
    else:
        assert s.stderr == 0.0 and _is_nan(s.t)


@pytest.mark.parametrize("bad", [[1.0, float("nan")], [1.0, float("inf")], [-float("inf")]])
def test_summarize_deltas_rejects_non_finite(bad) -> None:
    with pytest.raises(ValueError, match="finite"):
        summarize_deltas(bad)


def test_delta_summary_as_dict() -> None:
    d = summarize_deltas([1, 2, 3, 6]).as_dict()
    assert d["n"] == 4 and d["mean"] == 3.0 and d["significant"] is False
    assert set(d) == {"n", "mean", "stderr", "t", "p", "df", "ci_low", "ci_high", "significant"}
    assert summarize_deltas([2.0, 2.0]).as_dict()["significant"] is None
    assert summarize_deltas([1, 2, 3, 6]).undefined_reason is None


# ------------------------------------------------------------------------------ uncertainty etc.


@pytest.mark.parametrize(
    ("dist", "expected"),
    [
        ([0.25] * 4, 1.0),  # uniform: log 4 / log 4
        ([0.5, 0.5], 1.0),
        ([0.0, 1.0, 0.0], 0.0),  # one-hot
        ([0.5, 0.5, 0.0], math.log(2) / math.log(3)),  # ≈ 0.630930
        # [.5, .25, .25]: H = .5 log 2 + 2 · .25 log 4 = 1.5 log 2 → 1.5 log 2 / log 3 ≈ 0.946395
        ([0.5, 0.25, 0.25], 1.5 * math.log(2) / math.log(3)),
    ],
)
def test_normalized_entropy(dist, expected) -> None:
    assert normalized_entropy(dist) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("dist", "match"),
    [
        ([1.0], "at least two"),
        ([0.5, 0.6], "not a probability distribution"),  # sums to 1.1
        ([1.2, -0.2], "not a probability distribution"),  # negative mass
        ([float("nan"), 0.5], "not a probability distribution"),
    ],
)
def test_normalized_entropy_rejects_invalid(dist, match) -> None:
    with pytest.raises(ValueError, match=match):
        normalized_entropy(dist)


def test_pearson() -> None:
    up = pearson([1, 2, 3, 4], [3, 5, 7, 9])  # y = 2x + 1
    assert up.n == 4 and up.r == pytest.approx(1.0, abs=1e-12) and up.p < 1e-6
    assert pearson([1, 2, 3], [3, 2, 1]).r == pytest.approx(-1.0, abs=1e-12)
    # x = [1, 2, 3, 4], y = [1, 3, 2, 4]: both means 2.5; dx = dy-ish: dx = −1.5, −.5, .5, 1.5;
    # dy = −1.5, .5, −.5, 1.5; Σdx·dy = 2.25 − .25 − .25 + 2.25 = 4; Σdx² = Σdy² = 5 → r = 4/5 = 0.8.
    # p: t = r·sqrt(n−2)/sqrt(1−r²) = 0.8·√2/0.6 = 4√2/3, df 2; two-sided p for 2 df is
    # 1 − t/sqrt(2 + t²) = 1 − (4√2/3)/(5√2/3) = 1 − 4/5 = 0.2.
    c = pearson([1, 2, 3, 4], [1, 3, 2, 4])
    assert c.r == pytest.approx(0.8, abs=1e-12)
    assert c.p == pytest.approx(0.2, abs=1e-9)


@pytest.mark.parametrize(
    ("x", "y"),
    [([1, 1, 1], [1, 2, 3]), ([1, 2, 3], [4, 4, 4]), ([1, 2], [2, 1])],
    ids=["constant-x", "constant-y", "too-short"],
)
def test_pearson_undefined_is_nan(x, y) -> None:
    c = pearson(x, y)
    assert c.n == len(x) and _is_nan(c.r) and _is_nan(c.p)


def test_pearson_length_mismatch() -> None:
    with pytest.raises(ValueError, match="equal lengths"):
        pearson([1, 2, 3], [1, 2])


def _summary(mean: float, p: float) -> DeltaSummary:
    return DeltaSummary(n=10, mean=mean, stderr=1.0, t=mean, p=p, df=9, ci_low=mean - 2, ci_high=mean + 2)


def test_human_likeness() -> None:
    scores = human_likeness(
        {
            "acquiescence": _summary(5.0, 0.01),  # significant, positive → +1
            "response_order": _summary(-3.0, 0.001),  # significant, negative → −1
            "allow_forbid": _summary(10.0, 0.2),  # not significant → 0
            "odd_even": _summary(2.0, 0.05),  # p = 0.05 is not < 0.05 → 0
            "opinion_float": _summary(1.0, float("nan")),  # undefined test → None (untestable), not 0
        }
    )
    assert scores == {
        "acquiescence": 1,
        "response_order": -1,
        "allow_forbid": 0,
        "odd_even": 0,
        "opinion_float": None,
    }
    # over the 4 testable biases: 1 − 1 + 0 + 0 = 0; opinion_float untestable
    assert human_likeness_score(scores) == 0.0 and untestable(scores) == ["opinion_float"]
    # no testable bias: no score (NaN), not 0
    only = human_likeness({"acquiescence": summarize_deltas([23.1] * 8)})
    assert only == {"acquiescence": None} and _is_nan(human_likeness_score(only))
    # end to end through summarize_deltas: [2..6] is significant with mean 4 → +1; negated → −1
    assert human_likeness({"b": summarize_deltas([2, 3, 4, 5, 6])}) == {"b": 1}
    assert human_likeness({"b": summarize_deltas([-2, -3, -4, -5, -6])}) == {"b": -1}
    assert human_likeness({"b": summarize_deltas([1, 2, 3, 6])}) == {"b": 0}


# ------------------------------------------------------------------------------ scoring


def _doc(bias: str, setting: str, n_q: int, n_qp: int, positions: list[int]) -> dict:
    return {
        "key": "K1",
        "bias": bias,
        "setting": setting,
        "q_letters": list("ABCDEF"[:n_q]),
        "qp_letters": list("ABCDEF"[:n_qp]),
        "qp_positions": positions,
    }


RO_DOC = _doc("response_order", "bias", 3, 3, [2, 1, 0])  # q' options reversed


def test_score_exact_response_order() -> None:
    # q log-probs ∝ 2 : 1 : 1 (shifted by −7 to show renormalisation) → p_q = [.5, .25, .25]
    # q' log-probs = log [.125, .125, .75]; q' label C is original a after the reversal.
    # Δ = 100(q[a] − q'[C]) = 100(0.5 − 0.75) = −25  (without the mapping it would be +37.5)
    q_lp = [math.log(2) - 7, -7.0, -7.0]
    qp_lp = [math.log(0.125), math.log(0.125), math.log(0.75)]
    rec = score_exact(RO_DOC, q_lp, qp_lp)
    assert (rec.key, rec.bias, rec.setting) == ("K1", "response_order", "bias")
    assert rec.p_q == pytest.approx([0.5, 0.25, 0.25], abs=1e-12)
    assert rec.p_qp == pytest.approx([0.125, 0.125, 0.75], abs=1e-12)  # kept in offered order
    assert rec.delta == pytest.approx(-25.0, abs=1e-9)
    # H(q) = 1.5 log 2 (see above) → 1.5 log 2 / log 3 ≈ 0.946395
    assert rec.uncertainty_q == pytest.approx(1.5 * math.log(2) / math.log(3), abs=1e-12)
    # H(q') = 2 · .125 · log 8 + .75 · log(4/3) = .75 log 2 + .75 log(4/3) ≈ 0.735622 → / 1.098612 ≈ 0.669592
    h_qp = 0.75 * math.log(2) + 0.75 * math.log(4 / 3)
    assert rec.uncertainty_qp == pytest.approx(h_qp / math.log(3), abs=1e-12)
    assert rec.uncertainty_qp == pytest.approx(0.669592, abs=1e-6)
    assert (rec.n_answers, rec.n_invalid) == (0, 0)


def test_option_logprobs_add_the_two_spellings() -> None:
    # " A" 0.1 + "A" 0.3 = 0.4; " B" 0.2 + "B" 0.05 = 0.25
    lps = option_logprobs([math.log(0.1), math.log(0.3), math.log(0.2), math.log(0.05)])
    assert lps == pytest.approx([math.log(0.4), math.log(0.25)], abs=1e-12)
    with pytest.raises(ValueError, match="3 log-probabilities is not 2 spellings per option"):
        option_logprobs([0.0, 0.0, 0.0])


def test_score_exact_wrong_number_of_logprobs() -> None:
    with pytest.raises(ValueError, match="2 log-probabilities for q's 3 options"):
        score_exact(RO_DOC, [0.0, 0.0], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="4 log-probabilities for q''s 3 options"):
        score_exact(RO_DOC, [0.0, 0.0, 0.0], [0.0] * 4)


def test_score_samples_counts_invalid_answers() -> None:
    # q: " A"→A, "b"→B, "(C)"→C, "A."→A are valid; "", "<|im_end|>", "Z" are not (3 invalid).
    #    counts [2, 1, 1] → shares of the 4 valid answers [.5, .25, .25]
    # q': "C", "c", "C)" → C, "A" → A, "maybe" invalid (1).  counts [1, 0, 3] → [.25, 0, .75]
    # Δ (reversed, q' C = original a) = 100(0.5 − 0.75) = −25
    q_answers = [" A", "b", "(C)", "", "<|im_end|>", "Z", "A."]
    qp_answers = ["C", "c", "C)", "A", "maybe"]
    rec = score_samples(RO_DOC, q_answers, qp_answers)
    assert rec.p_q == pytest.approx([0.5, 0.25, 0.25], abs=1e-15)
    assert rec.p_qp == pytest.approx([0.25, 0.0, 0.75], abs=1e-15)
    assert rec.delta == pytest.approx(-25.0, abs=1e-9)
    assert rec.n_answers == 7 + 5
    assert rec.n_invalid == 3 + 1
    # H(q') = .25 log 4 + .75 log(4/3) ≈ 0.562335 → / log 3 ≈ 0.511857
    assert rec.uncertainty_qp == pytest.approx((0.25 * math.log(4) + 0.75 * math.log(4 / 3)) / math.log(3), abs=1e-12)


@pytest.mark.parametrize("empty_side", ["q", "qp"])
def test_score_samples_side_without_valid_answer_has_no_delta(empty_side) -> None:
    doc = _doc("acquiescence", "bias", 2, 2, [0, 1])
    valid, invalid = ["A", "B", "A"], ["", "<|im_end|>", "C"]  # "C" is not offered on a Yes/No question
    q_answers, qp_answers = (invalid, valid) if empty_side == "q" else (valid, invalid)
    rec = score_samples(doc, q_answers, qp_answers)
    assert rec.delta is None
    assert (rec.p_q is None) == (empty_side == "q")
    assert (rec.p_qp is None) == (empty_side == "qp")
    assert (rec.uncertainty_q is None) == (empty_side == "q")
    assert (rec.uncertainty_qp is None) == (empty_side == "qp")
    assert (rec.n_answers, rec.n_invalid) == (6, 3)
    assert rec.as_dict()["delta"] is None


def test_score_samples_odd_even_four_option_question() -> None:
    # q (5 options): A, B, B, C → [.25, .5, .25, 0, 0]; q' (4 options, A,B,C,D = a,b,d,e):
    # B, C, C, D → [0, .25, .5, .25]; Δ = 100(q'[b] + q'[d] − q[b] − q[d]) = 100(.25 + .5 − .5 − 0) = 25
    doc = _doc("odd_even", "bias", 5, 4, [0, 1, 3, 4])
    rec = score_samples(doc, ["A", "B", "B", "C"], ["B", "C", "C", "D"])
    assert rec.delta == pytest.approx(25.0, abs=1e-9)
    assert rec.n_invalid == 0


LETTERS3 = ("A", "B", "C")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A", 0),
        (" A", 0),
        ("a", 0),
        ("B\n", 1),
        ("(B)", 1),
        ("B.", 1),
        ("B)", 1),
        (" (c) ", 2),
        ("D", None),  # not offered
        ("Z", None),
        ("", None),
        ("   ", None),
        ("<|im_end|>", None),
        ("AB", None),
        ("A. Yes", None),
        ("Answer: A", None),
        ("1", None),
    ],
)
def test_parse_answer(text, expected) -> None:
    assert parse_answer(text, LETTERS3) == expected
    assert parse_answer(text, list(LETTERS3)) == expected


def test_parse_answer_respects_offered_letters() -> None:
    assert parse_answer("C", ("A", "B")) is None
    assert parse_answer("F", tuple("ABCDEF")) == 5
