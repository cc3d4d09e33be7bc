"""Answer-position bias over cyclic permutations and its corrections (metrics/position_bias.py),
against numbers worked out by hand in the comments (never produced by the code under test)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace

import numpy as np
import pytest

from biasmonkey.metrics.answer_position import summarize_mcq
from biasmonkey.metrics.position_bias import (
    NotComputable,
    PositionItem,
    contextual_correction,
    cyclic_order,
    position_bootstrap,
    position_metrics,
    pride_correction,
    pride_prior,
    specific_correction,
    summarize_positions,
)

LN = math.log


def _item(
    id: str, n: int, gold: int, shifts: tuple[int, ...], probs: list[list[float]], c: float = -3.0
) -> PositionItem:
    """An item from letter probabilities: log-probs log p + c (c: unnormalised, as a model's are)."""
    return PositionItem(id, n, gold, shifts, np.log(np.array(probs, dtype=float)) + c)


def _nan_equal(a: tuple[float, ...], b: list[float]) -> bool:
    return len(a) == len(b) and all((math.isnan(x) and math.isnan(y)) or x == pytest.approx(y) for x, y in zip(a, b))


# ---------------------------------------------------------------------------- items


def test_cyclic_order() -> None:
    # position p shows original option (p + s) mod n
    assert cyclic_order(3, 0).tolist() == [0, 1, 2]
    assert cyclic_order(4, 1).tolist() == [1, 2, 3, 0]
    assert cyclic_order(5, 3).tolist() == [3, 4, 0, 1, 2]
    assert cyclic_order(2, 1).tolist() == [1, 0]
    with pytest.raises(ValueError, match="n ≥ 1"):
        cyclic_order(0, 0)


@pytest.mark.parametrize(
    ("n", "gold", "shifts", "logprobs", "message"),
    [
        (1, 0, (0,), [[0.0]], r"item 'q7': n = 1 options; need 2 ≤ n ≤ 26"),
        (27, 0, (0,), [[0.0] * 27], r"item 'q7': n = 27 options; need 2 ≤ n ≤ 26"),
        (3, 3, (0,), [[0.0] * 3], r"item 'q7': gold index 3 out of range 0\.\.2"),
        (3, -1, (0,), [[0.0] * 3], r"item 'q7': gold index -1 out of range"),
        (3, 0, (1, 2), [[0.0] * 3] * 2, r"item 'q7': shift 0 \(the original order\) missing from shifts \(1, 2\)"),
        (3, 0, (0, 1, 1), [[0.0] * 3] * 3, r"item 'q7': duplicate shift in \(0, 1, 1\)"),
        (3, 0, (0, 3), [[0.0] * 3] * 2, r"item 'q7': shifts \(0, 3\) out of range 0\.\.2"),
        (3, 0, (0, 1), [[0.0] * 3], r"item 'q7': logprobs of shape \(1, 3\), expected \(2, 3\)"),
        (3, 0, (0,), [[0.0] * 4], r"item 'q7': logprobs of shape \(1, 4\), expected \(1, 3\)"),
        (3, 0, (0,), [[0.0, math.nan, 0.0]], r"item 'q7': non-finite log-probabilities"),
        (3, 0, (0,), [[0.0, -math.inf, 0.0]], r"item 'q7': non-finite log-probabilities"),
    ],
)
def test_item_validation_errors(n: int, gold: int, shifts: tuple[int, ...], logprobs: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PositionItem("q7", n, gold, shifts, np.array(logprobs))


def test_item_stores_a_read_only_copy() -> None:
    lp = np.array([[-1.0, -2.0]])
    it = PositionItem("x", 2, 0, [0], lp)  # a list of shifts becomes a tuple
    lp[0, 0] = 5.0
    assert it.shifts == (0,) and it.logprobs.tolist() == [[-1.0, -2.0]]
    with pytest.raises(ValueError):
        it.logprobs[0, 0] = 0.0


# ---------------------------------------------------------------------------- raw metrics


def _tiny() -> list[PositionItem]:
    """Three items, all shifts. Under shift s, position p shows option (p + s) mod n; the gold
    option shows at position (g − s) mod n."""
    return [
        # n = 3, gold 0.  s0: order 0,1,2, gold at A; answer A (orig 0): right.
        #                 s1: order 1,2,0, gold at C; answer A (orig 1): wrong.
        #                 s2: order 2,0,1, gold at B; answer C (orig 1): wrong.
        PositionItem("a", 3, 0, (0, 1, 2), np.array([[-0.1, -2, -3], [-0.1, -2, -3], [-2, -3, -0.5]])),
        # n = 2, gold 1, a tie in both rows: half of each letter. s0: gold at B, share .5; answer
        # per original option (.5, .5). s1: order 1,0, gold at A, share .5; per original (.5, .5).
        PositionItem("b", 2, 1, (0, 1), np.array([[-1.0, -1.0], [-1.0, -1.0]])),
        # n = 3, gold 2.  s0: gold at C, answer C (orig 2). s1: gold at B, answer B (orig 2).
        #                 s2: gold at A, answer A (orig 2): right throughout.
        PositionItem("c", 3, 2, (0, 1, 2), np.array([[-3, -2, -0.2], [-3, -0.2, -2], [-0.2, -3, -2]])),
    ]


def test_raw_metrics_hand_computed() -> None:
    m = position_metrics(_tiny(), resamples=50)
    assert (m.n_items, m.n_rows) == (3, 8)  # 3 + 2 + 3 rows
    # accuracy (shift 0): a 1, b .5 (tie), c 1 → 2.5 / 3 = 5/6
    assert m.accuracy == pytest.approx(5 / 6)
    # per item mean over shifts: a (1 + 0 + 0)/3 = 1/3, b (.5 + .5)/2 = 1/2, c 1 → (1/3 + 1/2 + 1)/3 = 11/18
    assert m.accuracy_permuted == pytest.approx(11 / 18)
    # recalls over the 3-option items a and c only (the most common option count; b, 2 options, is
    # left out of them: pooled, A would get b's .5 of 1/2 on 2 letters), rows by gold position:
    #   A: a-s0 (1), c-s2 (1) → 1
    #   B: a-s2 (0), c-s1 (1) → 1/2
    #   C: a-s1 (0), c-s0 (1) → 1/2
    assert m.recalls == pytest.approx((1.0, 1 / 2, 1 / 2))
    # mean 2/3; deviations 1/3, −1/6, −1/6 → variance (4 + 1 + 1)/36/3 = 1/18 → SD √2/6
    assert m.rstd == pytest.approx(math.sqrt(2) / 6)
    # shift 0 only: A a (1), B none (only b had it), C c (1) → rstd_original n/a
    assert _nan_equal(m.recalls_original, [1.0, math.nan, 1.0]) and math.isnan(m.rstd_original)
    assert m.notes["recalls"].startswith("recalls and RStd over the 2 items with 3 options only (")
    assert "left out of them: 1 item with 2 options (" in m.notes["recalls"]
    # chosen original option: a 0, 1, 1 (changed); b (.5, .5) in both rows (same); c 2, 2, 2 → 1/3
    assert m.changed == pytest.approx(1 / 3)


def test_changed_counts_only_items_with_two_shifts() -> None:
    # "u": one shift (not in the denominator); "v": s0 answers A = orig 0, s1 answers A = orig 1 → changed;
    # "w": s0 answers A = orig 0, s1 (order 1,0) answers B = orig 0 → unchanged. changed = 1/2.
    items = [
        PositionItem("u", 2, 0, (0,), np.array([[-1.0, -2.0]])),
        PositionItem("v", 2, 0, (0, 1), np.array([[-1.0, -2.0], [-1.0, -2.0]])),
        PositionItem("w", 2, 0, (0, 1), np.array([[-1.0, -2.0], [-2.0, -1.0]])),
    ]
    assert position_metrics(items, resamples=5).changed == 0.5
    # a tie against a clear answer is a change: s0 (.5, .5) per original, s1 answers B = orig 0 → (1, 0)
    tie = PositionItem("t", 2, 0, (0, 1), np.array([[-1.0, -1.0], [-2.0, -1.0]]))
    assert position_metrics([tie], resamples=5).changed == 1.0
    assert math.isnan(position_metrics(items[:1], resamples=5).changed)  # no item with ≥ 2 shifts


def test_recalls_nan_where_no_row_has_the_gold() -> None:
    # two n = 2 items with gold at A, and n_positions 3: B and C have no row → NaN recalls. B is a
    # position the items have: RStd is undefined (a lone recall would have SD 0 whatever the bias);
    # C is no item's position and needs no recall: gold A and B, both answered A → recalls (1, 0,
    # NaN), RStd = SD(1, 0) = .5
    items = [PositionItem(f"i{j}", 2, 0, (0,), np.array([[-1.0, -2.0]])) for j in range(2)]
    m = position_metrics(items, n_positions=3, resamples=5)
    assert _nan_equal(m.recalls, [1.0, math.nan, math.nan]) and math.isnan(m.rstd)
    assert m.notes["rstd"].startswith("rstd n/a: no row has its correct option at position B (")
    both = [PositionItem(f"i{j}", 2, j, (0,), np.array([[-1.0, -2.0]])) for j in range(2)]
    m = position_metrics(both, n_positions=3, resamples=5)
    assert _nan_equal(m.recalls, [1.0, 0.0, math.nan]) and m.rstd == 0.5 and m.rstd_original == 0.5
    assert "rstd" not in m.notes and "rstd_original" not in m.notes


ALWAYS_A = np.array([[5.0, 0.0, 0.0, 0.0]])  # answers A


@pytest.mark.parametrize(
    ("gold", "recalls", "missing"),
    [(0, [1.0, math.nan, math.nan, math.nan], "B, C, D"), (1, [math.nan, 0.0, math.nan, math.nan], "A, C, D")],
)
def test_rstd_is_undefined_for_the_strongest_bias(gold: int, recalls: list[float], missing: str) -> None:
    # ten 4-option items, all with the same gold, asked in the original order only, always answered
    # A: one finite recall (SD 0 whatever the bias): RStd, its CI and the original-order RStd are n/a
    items = [PositionItem(f"q{i}", 4, gold, (0,), ALWAYS_A) for i in range(10)]
    m = position_metrics(items, resamples=50)
    assert _nan_equal(m.recalls, recalls) and _nan_equal(m.recalls_original, recalls)
    assert math.isnan(m.rstd) and math.isnan(m.rstd_original)
    assert all(math.isnan(x) for k in ("rstd", "rstd_original") for x in m.ci[k])
    assert m.notes["rstd"] == (
        f"rstd n/a: no row has its correct option at positions {missing} "
        "(RStd needs a recall for every position the items have)"
    )
    assert m.notes["rstd_original"] == (
        f"rstd_original n/a: no item has its correct option at positions {missing} in the original order "
        "(RStd needs a recall for every position the items have)"
    )
    assert m.notes["changed"] == "changed n/a: no item asked in 2 or more orders"
    assert m.accuracy == (1.0 if gold == 0 else 0.0) and m.ci["accuracy"] == (m.accuracy, m.accuracy)


def test_all_orders_give_every_position_a_recall() -> None:
    # the same items in all four cyclic orders, always answered A: the gold (option 0) stands at A
    # under shift 0 (answered) and at D, C, B under shifts 1, 2, 3 (not) → recalls (1, 0, 0, 0):
    # mean 1/4, deviations 3/4, −1/4 (×3) → variance (9/16 + 3/16)/4 = 3/16 → RStd √3/4 = .4330;
    # the original order has the gold at A only: rstd_original n/a
    items = [PositionItem(f"q{i}", 4, 0, (0, 1, 2, 3), np.tile(ALWAYS_A, (4, 1))) for i in range(10)]
    m = position_metrics(items, resamples=50)
    assert m.recalls == (1.0, 0.0, 0.0, 0.0) and m.rstd == pytest.approx(math.sqrt(3) / 4)
    assert m.ci["rstd"] == pytest.approx((math.sqrt(3) / 4,) * 2)  # every resample alike
    assert math.isnan(m.rstd_original) and "positions B, C, D in the original order" in m.notes["rstd_original"]
    assert set(m.notes) == {"rstd_original"}
    # mixed option counts: a 2-option and a 3-option item, gold A, answered A: B and C are the
    # items' positions without a recall → n/a
    mixed = [PositionItem("two", 2, 0, (0,), [[0.0, -1.0]]), PositionItem("three", 3, 0, (0,), [[0.0, -1.0, -1.0]])]
    assert math.isnan(position_metrics(mixed, resamples=5).rstd)


def test_one_item_has_no_confidence_intervals() -> None:
    # one 3-option item in all orders, always answered A, gold option 0: recalls (1, 0, 0), mean
    # 1/3, deviations 2/3, −1/3, −1/3 → variance (4 + 1 + 1)/27 = 2/9 → RStd √2/3 = .4714; every
    # resample is that item, so a CI would have zero width: none, with the reason
    item = PositionItem("only", 3, 0, (0, 1, 2), np.tile([[5.0, 0.0, 0.0]], (3, 1)))
    m = position_metrics([item], resamples=50)
    assert (m.accuracy, m.rstd) == (1.0, pytest.approx(math.sqrt(2) / 3))
    assert all(math.isnan(x) for ci in m.ci.values() for x in ci)
    assert all(math.isnan(x) for ci in (*m.recalls_ci, *m.recalls_original_ci) for x in ci)
    assert m.notes["ci"] == "no CIs: 1 item (a bootstrap over items needs at least 2)"
    assert all(np.isnan(v).all() for v in position_bootstrap([item], resamples=7).values())
    # two items: CIs again
    two = position_metrics([item, replace(item, id="other")], resamples=50)
    assert two.ci["accuracy"] == (1.0, 1.0) and "ci" not in two.notes


def test_a_ci_counts_the_resamples_without_a_value() -> None:
    # five 2-option items in the original order only, gold A, A, A, A, B: a resample has an RStd
    # only where it draws the gold-B item (index 4); the count follows the documented draw
    items = [PositionItem(f"g{i}", 2, int(i == 4), (0,), np.array([[0.0, -1.0]])) for i in range(5)]
    idx = np.random.default_rng(3).integers(0, 5, size=(40, 5))
    valid = int((idx == 4).any(axis=1).sum())
    assert 0 < valid < 40
    m = position_metrics(items, resamples=40, seed=3)
    # recalls (1, 0) → RStd .5 in every resample that has one
    assert m.rstd == 0.5 and m.ci["rstd"] == (0.5, 0.5)
    assert m.notes["rstd_ci"] == (
        f"rstd CI over {valid} of 40 resamples (the others: a drawn position without a drawn row "
        "with its correct option there)"
    )


# ---------------------------------------------------------------------------- fidelity


def test_matches_answer_position_on_shift_zero_items() -> None:
    rng = np.random.default_rng(7)
    gold = rng.permutation(np.repeat(np.arange(4), 10))  # 10 items per letter: balanced folds exist (≥ k − 1 = 4)
    lp = np.round(rng.normal(size=(40, 4)), 1)
    lp[0] = [-1.0, -1.0, -2.0, -3.0]  # a tie, shared in both
    letters = ["ABCD"[g] for g in gold]
    ref = summarize_mcq(lp, letters)
    items = [PositionItem(f"q{i}", 4, int(g), (0,), lp[i : i + 1]) for i, g in enumerate(gold)]
    s = summarize_positions(items, resamples=20)
    raw, spec = s.conditions["raw"], s.conditions["specific"]
    assert raw.accuracy == pytest.approx(ref.accuracy, abs=1e-12)
    np.testing.assert_allclose(raw.recalls_original, ref.recalls, atol=1e-12)
    np.testing.assert_allclose(raw.recalls, ref.recalls, atol=1e-12)  # only shift 0: the same rows
    assert raw.rstd_original == pytest.approx(ref.rstd, abs=1e-12)
    assert spec.accuracy == pytest.approx(ref.accuracy_specific, abs=1e-12)
    np.testing.assert_allclose(spec.recalls_original, ref.recalls_specific, atol=1e-12)
    assert spec.rstd_original == pytest.approx(ref.rstd_specific, abs=1e-12)
    assert spec.n_items == 40 and spec.left_out == {"unbalanced": 0}
    # PriDe needs its calibration items in all shifts: absent, with the reason
    pride = s.conditions["pride"]
    assert math.isnan(pride.accuracy) and "needs items asked in all their cyclic orders" in pride.reason
    assert s.conditions["contextual"].reason == "no content-free vectors given"


# ---------------------------------------------------------------------------- PriDe


def _pride_items() -> tuple[list[PositionItem], np.ndarray]:
    """Six items; the three calibration items sit where default_rng(0).choice(6, 3) draws."""
    calib = [
        _item("X1", 2, 0, (0, 1), [[0.8, 0.2], [0.8, 0.2]]),
        _item("X2", 2, 1, (1, 0), [[0.9, 0.1], [0.6, 0.4]]),  # shifts in another order
        _item("X3", 3, 0, (0, 1, 2), [[0.5, 0.25, 0.25], [0.4, 0.4, 0.2], [0.8, 0.1, 0.1]]),
    ]
    rest = [
        _item("Y2", 2, 1, (0, 1), [[0.7, 0.3], [0.85, 0.15]]),
        _item("Y3", 3, 2, (0,), [[0.45, 0.2, 0.35]]),
        _item("Z4", 4, 0, (0,), [[0.4, 0.3, 0.2, 0.1]]),  # no 4-option calibration item: no prior
    ]
    drawn = np.random.default_rng(0).choice(6, 3, replace=False)
    items: list[PositionItem | None] = [None] * 6
    for i, it in zip(drawn, calib):
        items[i] = it
    for i, it in zip([j for j in range(6) if j not in drawn], rest):
        items[i] = it
    return items, drawn  # type: ignore[return-value]


def test_pride_prior_of_one_item() -> None:
    # softmax over positions of the mean log-probability: the normalised geometric means
    # A (.5 · .4 · .8)^(1/3) = .16^(1/3), B (.25 · .4 · .1)^(1/3) = .01^(1/3), C (.25 · .2 · .1)^(1/3) = .005^(1/3)
    g = np.array([0.16 ** (1 / 3), 0.01 ** (1 / 3), 0.005 ** (1 / 3)])
    lp = np.log([[0.5, 0.25, 0.25], [0.4, 0.4, 0.2], [0.8, 0.1, 0.1]]) + 7.0  # rows renormalised first
    np.testing.assert_allclose(pride_prior(lp), g / g.sum(), rtol=1e-8)  # = (.584170, .231828, .184002)


def test_pride_hand_computed() -> None:
    items, drawn = _pride_items()
    c = pride_correction(items, share=0.5, seed=0)
    # count = max(1, floor(.5 · 6)) = 3, the items default_rng(0).choice(6, 3, replace=False) draws
    assert c.calibration_ids == tuple(items[i].id for i in drawn) == ("X1", "X2", "X3")
    # n = 2: X1's prior (.8, .2) (both rows alike); X2's geometric means (√(.9·.6), √(.1·.4)) = (√.54, .2),
    # normalised; prior_2 = their mean = (.793031, .206969)
    r = math.sqrt(0.54)
    p2 = (np.array([0.8, 0.2]) + np.array([r, 0.2]) / (r + 0.2)) / 2
    g = np.array([0.16 ** (1 / 3), 0.01 ** (1 / 3), 0.005 ** (1 / 3)])
    p3 = g / g.sum()  # one 3-option calibration item (test above): (.584170, .231828, .184002)
    assert sorted(c.priors) == [2, 3]
    np.testing.assert_allclose(c.priors[2], p2, rtol=1e-8)
    np.testing.assert_allclose(c.priors[3], p3, rtol=1e-8)
    assert c.left_out == {"calibration": 3, "unpriored": 1}  # Z4 (n = 4) has no prior
    by_id = {it.id: i for i, it in enumerate(items)}
    assert [it.id for it, s in zip(items, c.scored) if s] == [it.id for it in items if it.id in ("Y2", "Y3")]
    assert np.isnan(c.logprobs[by_id["Z4"]]).all() and np.isnan(c.logprobs[by_id["X1"]]).all()
    # debiased = log(observed / prior): Y2 s0 (.7/.7930, .3/.2070) = (.883, 1.449) → B;
    # Y2 s1 (.85/.7930, .15/.2070) = (1.072, .725) → A; Y3 (.45/.5842, .2/.2318, .35/.1840) = (.770, .863, 1.902) → C
    np.testing.assert_allclose(c.logprobs[by_id["Y2"]], np.log([[0.7, 0.3], [0.85, 0.15]] / p2), rtol=1e-7)
    np.testing.assert_allclose(c.logprobs[by_id["Y3"]], np.log([[0.45, 0.2, 0.35]] / p3), rtol=1e-7)

    s = summarize_positions(items, pride_share=0.5, pride_seed=0, resamples=20)
    raw, pride = s.conditions["raw"], s.conditions["pride"]
    # raw, all six items at shift 0: X1 A (gold A) 1, X2 A (gold B) 0, X3 A (gold A) 1, Y2 A (gold B) 0,
    # Y3 A (gold C) 0, Z4 A (gold A) 1 → 1/2
    assert raw.accuracy == 0.5
    # PriDe: Y2 and Y3 only. Y2 s0 gold at B, answered B; s1 gold at A, answered A; Y3 gold C, answered C
    assert (pride.n_items, pride.n_rows) == (2, 3)
    assert (pride.accuracy, pride.accuracy_permuted) == (1.0, 1.0)
    # recalls over raw's option count, 2 (X1, X2, Y2; 3 has 2 items, 4 one): Y2 only, Y3 left out of them;
    # 4 positions (Z4's n)
    assert _nan_equal(pride.recalls, [1.0, 1.0, math.nan, math.nan]) and pride.rstd == 0.0
    assert "left out of them: 1 item with 3 options (" in pride.notes["recalls"]
    # Y2 answers original option 1 under both shifts (s1: position A shows option 1): unchanged
    assert pride.changed == 0.0
    assert pride.left_out == {"calibration": 3, "unpriored": 1}
    assert s.pride_calibration_ids == ("X1", "X2", "X3")
    assert s.pride_priors[2] == pytest.approx(tuple(p2), rel=1e-8)
    assert s.delta_pct["pride"]["accuracy"] == pytest.approx(100.0)  # 100 · (1 − .5)/.5


def test_pride_draw_size_and_errors() -> None:
    items, _ = _pride_items()
    # share .05 of 6 items: floor(.3) = 0 → at least 1: default_rng(0).choice(6, 1) draws index 5, X2
    first = np.random.default_rng(0).choice(6, 1, replace=False)
    assert first.tolist() == [5] and items[5].id == "X2"
    c = pride_correction(items, share=0.05, seed=0)
    assert c.calibration_ids == ("X2",) and sorted(c.priors) == [2]
    # X2's prior alone: (√.54, .2)/(√.54 + .2); no 3- or 4-option prior: X3, Y3, Z4 unpriored; X1, Y2 scored
    r = math.sqrt(0.54)
    np.testing.assert_allclose(c.priors[2], np.array([r, 0.2]) / (r + 0.2), rtol=1e-8)
    assert c.left_out == {"calibration": 1, "unpriored": 3}
    assert sorted(it.id for it, s in zip(items, c.scored) if s) == ["X1", "Y2"]
    # one item with only shift 0: no item to estimate a prior from
    lone = [PositionItem("solo", 3, 0, (0,), np.zeros((1, 3)))]
    with pytest.raises(NotComputable, match=r"PriDe needs items asked in all their cyclic orders \(permutations=0\)"):
        pride_correction(lone)
    # an item cut short (a --limit run) is never drawn: the calibration item is the complete one,
    # whatever the seed, and the cut item is debiased with its prior
    cut = [
        PositionItem("whole", 2, 0, (0, 1), np.log([[0.6, 0.4], [0.7, 0.3]])),
        PositionItem("cut", 2, 1, (0,), np.zeros((1, 2))),
    ]
    for seed in range(5):
        drawn = pride_correction(cut, share=0.5, seed=seed)
        assert drawn.calibration_ids == ("whole",) and drawn.scored.tolist() == [False, True]
    assert issubclass(NotComputable, ValueError)
    with pytest.raises(ValueError, match="share must be in"):
        pride_correction(items, share=1.0)


# ---------------------------------------------------------------------------- contextual calibration


def test_contextual_calibration_hand_computed() -> None:
    items = [
        _item("P", 2, 1, (0,), [[0.6, 0.4]]),  # raw A (wrong); /p_cf: (.6/.8, .4/.2) = (.75, 2) → B (right)
        # s0 (.9/.8, .1/.2) = (1.125, .5) → A (right, as raw); s1 gold at B: raw (.7, .3) → A (wrong),
        # (.7/.8, .3/.2) = (.875, 1.5) → B (right)
        _item("Q", 2, 0, (0, 1), [[0.9, 0.1], [0.7, 0.3]]),
        _item("R", 3, 2, (0,), [[0.2, 0.3, 0.5]]),  # no 3-option content-free vector: left out; raw C (right)
    ]
    cf = {2: [LN(0.8) + 5.0, LN(0.2) + 5.0]}  # unnormalised: p̂_cf = (.8, .2)
    c = contextual_correction(items, cf)
    assert c.scored.tolist() == [True, True, False] and c.left_out == {"no_content_free": 1}
    # corrected = log softmax(row) − log p̂_cf
    np.testing.assert_allclose(c.logprobs[0], [[LN(0.75), LN(2.0)]])
    np.testing.assert_allclose(c.logprobs[1], [[LN(1.125), LN(0.5)], [LN(0.875), LN(1.5)]])
    s = summarize_positions(items, content_free=cf, resamples=20)
    raw, ctx = s.conditions["raw"], s.conditions["contextual"]
    assert raw.accuracy == pytest.approx(2 / 3)  # P 0, Q 1, R 1
    assert raw.accuracy_permuted == pytest.approx(1 / 2)  # P 0, Q (1 + 0)/2, R 1 → 1.5/3
    assert (ctx.n_items, ctx.n_rows, ctx.accuracy, ctx.accuracy_permuted) == (2, 3, 1.0, 1.0)
    assert ctx.left_out == {"no_content_free": 1}
    assert s.delta_pct["contextual"]["accuracy"] == pytest.approx(50.0)  # 100 · (1 − 2/3)/(2/3)
    with pytest.raises(ValueError, match="content-free vector for n = 2"):
        contextual_correction(items, {2: [0.0, 0.0, 0.0]})


# ---------------------------------------------------------------------------- Specific


def test_specific_offset_applies_to_every_shift() -> None:
    # four 2-option items (gold A, A, B, B: k = 3 needs ≥ 2 per letter) with the same shift-0 row
    # (−.2, −1.8): every calibration set's mean is that row, whatever the folds, so the offset
    # is (.2, 1.8) for each item, on both shifts.
    rows = np.array([[-0.2, -1.8], [-0.5, -1.0]])
    items = [PositionItem(f"s{i}", 2, g, (0, 1), rows) for i, g in enumerate([0, 0, 1, 1])]
    items.append(PositionItem("t", 3, 0, (0,), np.array([[-1.0, -2.0, -3.0]])))  # the only 3-option item: unbalanced
    c = specific_correction(items, k=3)
    for i in range(4):
        np.testing.assert_allclose(c.logprobs[i], [[0.0, 0.0], [-0.3, 0.8]])
    assert c.scored.tolist() == [True] * 4 + [False] and c.left_out == {"unbalanced": 1}
    m = summarize_positions(items, k=3, resamples=20).conditions["specific"]
    # corrected s0 rows tie (.5 to the gold); s1 rows answer B: gold-A items (gold at B under s1) 1, gold-B items 0
    assert m.accuracy == 0.5
    assert m.accuracy_permuted == 0.5  # gold A: (.5 + 1)/2, gold B: (.5 + 0)/2 → mean .5
    # A: s0 of gold-A items (.5, .5), s1 of gold-B items (0, 0) → .25; B: s0 of gold-B (.5, .5), s1 of gold-A (1, 1) → .75
    assert _nan_equal(m.recalls, [0.25, 0.75, math.nan])
    assert m.rstd == pytest.approx(0.25)  # SD of (.25, .75)
    assert m.recalls_original[:2] == (0.5, 0.5)
    # per original option: s0 (.5, .5), s1 answers B = option 0 → (1, 0): all four changed
    assert m.changed == 1.0
    with pytest.raises(ValueError, match="k ≥ 3"):
        specific_correction(items, k=2)


# ---------------------------------------------------------------------------- bootstrap


def _random_items(n_items: int, seed: int = 3, n: int = 4) -> list[PositionItem]:
    rng = np.random.default_rng(seed)
    return [
        PositionItem(f"r{i}", n, int(rng.integers(n)), tuple(range(n)), rng.normal(size=(n, n)) + 0.8 * np.eye(n)[0])
        for i in range(n_items)
    ]


def test_bootstrap_ci_properties() -> None:
    items = _random_items(60)
    a = position_metrics(items, resamples=300, seed=5)
    for k, (lo, hi) in a.ci.items():
        assert lo <= getattr(a, k) <= hi, k
    for r, (lo, hi) in zip(a.recalls, a.recalls_ci):
        assert lo <= r <= hi
    assert a.ci == position_metrics(items, resamples=300, seed=5).ci  # same seed, same CI
    assert a.ci != position_metrics(items, resamples=300, seed=6).ci
    boot = position_bootstrap(items, resamples=37)
    assert boot["accuracy"].shape == (37,) and boot["recalls"].shape == (37, 4)
    assert boot["recalls_original"].shape == (37, 4) and boot["rstd"].shape == (37,)


def test_bootstrap_resamples_items_as_documented() -> None:
    # item i right at shift 0 iff i is even (answer A, gold A or B); a resample's accuracy is the
    # share of even indices among its draws default_rng(9).integers(0, 7, size=(50, 7))
    items = [PositionItem(f"e{i}", 2, i % 2, (0, 1), np.array([[-1.0, -2.0], [-1.0, -2.0]])) for i in range(7)]
    idx = np.random.default_rng(9).integers(0, 7, size=(50, 7))
    boot = position_bootstrap(items, resamples=50, seed=9)
    np.testing.assert_allclose(boot["accuracy"], (idx % 2 == 0).mean(axis=1))


def test_all_correct_ci_is_one() -> None:
    items = [
        PositionItem(f"c{i}", 3, i % 3, (0, 1, 2), np.eye(3)[[(i % 3 - s) % 3 for s in range(3)]]) for i in range(9)
    ]
    m = position_metrics(items, resamples=200)
    assert m.accuracy == 1.0 and m.ci["accuracy"] == (1.0, 1.0) and m.ci["accuracy_permuted"] == (1.0, 1.0)
    assert m.recalls_ci == ((1.0, 1.0),) * 3 and m.ci["rstd"] == (0.0, 0.0) and m.changed == 0.0


def test_summary_as_dict_is_json() -> None:
    items = _random_items(40)
    s = summarize_positions(items, content_free={4: [0.0, 0.1, 0.2, 0.3]}, pride_share=0.1, resamples=50)
    d = json.loads(json.dumps(s.as_dict()))
    assert set(d["conditions"]) == {"raw", "pride", "contextual", "specific"}
    assert d["conditions"]["pride"]["n_items"] == 36  # floor(.1 · 40) = 4 calibration items
    assert len(d["pride_calibration_ids"]) == 4 and list(d["pride_priors"]) == ["4"]
    assert len(d["conditions"]["raw"]["recalls_ci"]) == 4 and d["conditions"]["raw"]["reason"] is None
    with pytest.raises(ValueError, match="duplicate item ids"):
        summarize_positions(items + items[:1])


def test_empty_conditions_say_why() -> None:
    s = summarize_positions([], resamples=5)
    assert s.conditions["raw"].reason == "no items" and math.isnan(s.conditions["raw"].accuracy)
    assert s.conditions["pride"].reason == "PriDe needs at least one item"
    # one item: PriDe's one calibration item is it; no 2-option content-free vector; no balanced folds
    one = [PositionItem("a", 2, 0, (0, 1), np.zeros((2, 2)))]
    s = summarize_positions(one, content_free={3: [0.0, 0.0, 0.0]}, resamples=5)
    assert s.conditions["raw"].accuracy == 0.5  # a tie: half the gold
    assert s.conditions["pride"].reason == "no item scored (left out: calibration: 1)"
    assert s.conditions["contextual"].reason == "no item scored (left out: no_content_free: 1)"
    assert s.conditions["specific"].reason == (
        "no item scored: too few items per correct letter (2 options: A 1, B 0) for k − 1 = 4 balanced folds, "
        "which need at least 4 of each (left out: unbalanced: 1)"
    )
    assert math.isnan(s.delta_pct["specific"]["accuracy"])


def test_performance_sanity() -> None:
    items = _random_items(2000, seed=11)
    start = time.perf_counter()
    s = summarize_positions(items, content_free={4: [0.0, 0.0, 0.0, 0.0]}, resamples=1000)
    assert time.perf_counter() - start < 5.0
    assert all(c.reason is None for c in s.conditions.values())


def test_a_correction_scoring_one_item_has_no_cis() -> None:
    # two 2-option items in both orders: PriDe draws max(1, floor(.05 · 2)) = 1 calibration item and
    # scores the other alone → numbers without CIs, and the reason; raw (2 items) has CIs
    items = [PositionItem(f"p{i}", 2, i, (0, 1), np.array([[0.0, -1.0], [0.0, -1.0]])) for i in range(2)]
    s = summarize_positions(items, resamples=20)
    raw, pride = s.conditions["raw"], s.conditions["pride"]
    assert pride.n_items == 1 and pride.reason is None and math.isfinite(pride.accuracy)
    assert all(math.isnan(x) for ci in pride.ci.values() for x in ci)
    assert pride.notes["ci"].startswith("no CIs: 1 item") and "ci" not in raw.notes
    # raw: both items answer A in both orders; gold at A in 2 of 4 rows → recalls (1, 0), RStd .5
    assert raw.rstd == 0.5 and not math.isnan(raw.ci["accuracy"][0])
