"""Yes-no bias metrics and per-item records, on hand-computed examples (arithmetic in comments)."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from biasmonkey.metrics.yesno import (
    accuracy,
    answer_logprob,
    bias,
    compare_pairs,
    generic_correction,
    p_yes,
    relative_change,
    specific_correction,
    stratified_folds,
    summarize_yesno,
    votes,
)
from biasmonkey.tasks.yesno.scoring import ItemRecord, null_answer_logprobs, score_item, summarize

LN = math.log

# ------------------------------------------------------------------------------ answers and votes


def test_answer_logprob_is_the_log_of_the_summed_probabilities() -> None:
    # P(" Yes") = 0.1, P("Yes") = 0.3 → P(yes) = 0.4
    assert answer_logprob([LN(0.1), LN(0.3)]) == pytest.approx(LN(0.4))
    # a continuation missing from a top-k list (-inf) adds nothing
    assert answer_logprob([LN(0.25), -math.inf]) == pytest.approx(LN(0.25))
    for bad in ([], [math.nan, 0.0], [math.inf, -1.0]):
        with pytest.raises(ValueError):
            answer_logprob(bad)


def test_bias_and_accuracy_with_a_tie() -> None:
    yes = [-1.0, -2.0, -3.0, -1.0]
    no = [-2.0, -1.0, -3.0, -0.5]
    gold = [True, True, False, False]
    v = votes(yes, no)
    assert list(v) == [1, -1, 0, -1]  # yes > no, yes < no, tie, yes < no
    assert bias(v) == pytest.approx(-0.25)  # (1 yes − 2 no) / 4
    # correct: item 0 (Yes/Yes) 1, item 1 (No/Yes) 0, item 2 tie 0.5, item 3 (No/No) 1 → 2.5 / 4
    assert accuracy(v, gold) == pytest.approx(0.625)
    s = summarize_yesno(yes, no, gold)
    assert (s.n, s.n_ties, s.bias, s.accuracy) == (4, 1, pytest.approx(-0.25), pytest.approx(0.625))
    assert math.isnan(s.bias_generic) and math.isnan(s.accuracy_generic)  # no null log-probs given


def test_all_yes_and_all_no() -> None:
    gold = [True, False, True, False]
    s = summarize_yesno([0.0] * 4, [-1.0] * 4, gold)
    assert (s.bias, s.accuracy) == (1.0, 0.5)
    s = summarize_yesno([-1.0] * 4, [0.0] * 4, gold)
    assert (s.bias, s.accuracy) == (-1.0, 0.5)


# ------------------------------------------------------------------------------ Generic


def test_generic_correction_hand_computed() -> None:
    yes = [-1.0, -2.0, -0.5]
    no = [-1.5, -1.0, -2.5]
    gold = [True, False, True]
    null = (-0.2, -1.2)
    cy, cn = generic_correction(yes, no, *null)
    # yes − (−0.2) = [−0.8, −1.8, −0.3]; no − (−1.2) = [−0.3, 0.2, −1.3]
    assert list(cy) == pytest.approx([-0.8, -1.8, -0.3])
    assert list(cn) == pytest.approx([-0.3, 0.2, -1.3])
    s = summarize_yesno(yes, no, gold, null=null)
    # base votes [+1, −1, +1]: bias 1/3, all correct; Generic votes [−1, −1, +1]: bias −1/3, 2/3 correct
    assert s.bias == pytest.approx(1 / 3) and s.accuracy == 1.0
    assert s.bias_generic == pytest.approx(-1 / 3) and s.accuracy_generic == pytest.approx(2 / 3)
    # Δ% = 100 · (−1/3 − 1/3) / (1/3) = −200 (over-corrected); accuracy 100 · (2/3 − 1) / 1 = −33.3
    assert s.delta_pct_bias_generic == pytest.approx(-200.0)
    assert s.delta_pct_accuracy_generic == pytest.approx(-100 / 3)


# ------------------------------------------------------------------------------ Specific


def test_specific_leave_one_out_hand_computed() -> None:
    # k = n = 5: every item is its own fold, whatever the shuffle, so c_i = (S − m_i) / (2 · 4)
    # with margins m = yes − no = [3, 1, 1, −1, 2] and S = 6.
    no = np.array([-4.0, -2.0, -2.0, -1.0, -3.0])
    yes = no + np.array([3.0, 1.0, 1.0, -1.0, 2.0])
    gold = [True, True, False, False, True]
    c = np.array([3, 5, 5, 7, 4]) / 8  # (6 − m_i) / 8
    cy, cn = specific_correction(yes, no, gold, k=5, seed=123)
    assert list(cy) == pytest.approx(list(yes - c))
    assert list(cn) == pytest.approx(list(no + c))
    # corrected margins m − 2c = [2.25, −0.25, −0.25, −2.75, 1.0] → votes [+, −, −, −, +]
    s = summarize_yesno(yes, no, gold, k=5, seed=123)
    assert s.bias == pytest.approx(0.6)  # base votes [+, +, +, −, +]: (4 − 1) / 5
    assert s.bias_specific == pytest.approx(-0.2)  # (2 − 3) / 5
    assert s.accuracy == pytest.approx(0.8) and s.accuracy_specific == pytest.approx(0.8)
    assert s.delta_pct_bias_specific == pytest.approx(100 * (-0.2 - 0.6) / 0.6)  # −133.3
    assert s.delta_pct_accuracy_specific == pytest.approx(0.0)


@pytest.mark.parametrize("offset", [3.0, -3.0, 0.7])
def test_specific_removes_a_known_bias(offset: float) -> None:
    """Margins s·1 + offset + noise (s = +1 for Yes items, −1 for No): the offset is the bias.

    50 + 50 items in 5 stratified folds: every calibration set holds 40 Yes and 40 No items, so
    c = (offset + mean noise) / 2 and the corrected margin is s + noise_i − mean noise, whose
    sign is s since |noise| < 0.4. Specific must give bias 0 and accuracy 1.
    """
    rng = np.random.default_rng(7)
    sign = np.repeat([1.0, -1.0], 50)
    margin = sign + offset + rng.uniform(-0.4, 0.4, 100)
    no = rng.uniform(-5, -1, 100)
    yes = no + margin
    s = summarize_yesno(yes, no, sign > 0, null=(-1.0, -1.0))
    if abs(offset) > 1.4:  # every base answer is the offset's side
        assert s.bias == pytest.approx(math.copysign(1.0, offset)) and s.accuracy == 0.5
        assert s.delta_pct_bias_specific == pytest.approx(-100.0)
    assert s.bias_specific == 0.0 and s.accuracy_specific == 1.0
    # equal no-context log-probs: Generic changes nothing
    assert (s.bias_generic, s.accuracy_generic) == (s.bias, s.accuracy)


def test_stratified_folds_are_balanced_and_seeded() -> None:
    gold = np.array([True] * 23 + [False] * 17)
    folds = stratified_folds(gold, k=5, seed=0)
    assert sorted(set(folds)) == [0, 1, 2, 3, 4]
    assert sorted(np.bincount(folds)) == [8, 8, 8, 8, 8]
    for cls in (True, False):
        per_fold = np.bincount(folds[gold == cls], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1
    assert list(stratified_folds(gold, 5, 0)) == list(folds)
    assert list(stratified_folds(gold, 5, 1)) != list(folds)
    with pytest.raises(ValueError, match="at least 2 folds"):
        stratified_folds(gold, k=1)


def test_specific_needs_two_items() -> None:
    s = summarize_yesno([-1.0], [-2.0], [True])
    assert s.bias == 1.0 and math.isnan(s.bias_specific) and math.isnan(s.delta_pct_bias_specific)


# ------------------------------------------------------------------------------ Δ% and P(yes)


def test_relative_change() -> None:
    assert relative_change(0.5, 0.25) == pytest.approx(-50.0)
    assert relative_change(-0.4, 0.1) == pytest.approx(-125.0)  # 100 · (0.1 + 0.4) / −0.4
    assert relative_change(0.6, 0.66) == pytest.approx(10.0)
    assert math.isnan(relative_change(0.0, 0.1))
    assert math.isnan(relative_change(0.5, math.nan))


def test_p_yes_mass_view() -> None:
    yes = [LN(0.3), LN(0.2), LN(0.1)]
    no = [LN(0.1), LN(0.2), LN(0.4)]
    # P(yes) normalised over the two answers: 0.3/0.4 = 0.75, 0.5, 0.1/0.5 = 0.2
    assert list(p_yes(yes, no)) == pytest.approx([0.75, 0.5, 0.2])
    s = summarize_yesno(yes, no, [True, True, False])
    assert s.p_yes_gold_yes == pytest.approx(0.625)  # (0.75 + 0.5) / 2
    assert s.p_yes_gold_no == pytest.approx(0.2)


def test_summary_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="finite"):
        summarize_yesno([0.0, -math.inf], [-1.0, -1.0], [True, False])
    with pytest.raises(ValueError):
        summarize_yesno([0.0, 1.0], [0.0], [True, False])
    with pytest.raises(ValueError, match="gold labels"):
        summarize_yesno([0.0, 1.0], [0.0, 0.0], [True])


# ------------------------------------------------------------------------------ model pairs


def test_compare_pairs_hand_computed() -> None:
    base = [0.5, -0.4, 0.2]
    instruct = [0.1, 0.3, -0.2]
    c = compare_pairs(base, instruct)
    # |base| = [.5, .4, .2] (mean .36667), |instruct| = [.1, .3, .2] (mean .2)
    # differences |i| − |b| = [−.4, −.1, 0], mean −.16667
    assert c.n_pairs == 3
    assert c.mean_abs_bias_base == pytest.approx(0.366667, abs=1e-6)
    assert c.mean_abs_bias_instruct == pytest.approx(0.2)
    assert c.mean_diff == pytest.approx(-1 / 6)
    # var|b| = (.13333² + .03333² + .16667²) / 2 = .023333; var|i| = (.1² + .1² + 0) / 2 = .01
    # pooled SD = sqrt((.023333 + .01) / 2) = .129099; d = .166667 / .129099 = 1.29099
    assert c.cohen_d == pytest.approx(1.290994, abs=1e-6)
    # paired: SD of the differences sqrt(.086667 / 2) = .208167, SE .120185, t = −1.38675
    assert c.paired.n == 3 and c.paired.t == pytest.approx(-1.38675, abs=1e-5)
    assert json.loads(json.dumps(c.as_dict()))["paired"]["n"] == 3


def test_compare_a_single_pair() -> None:
    c = compare_pairs([0.4], [-0.1])
    assert c.mean_diff == pytest.approx(-0.3) and math.isnan(c.cohen_d)


# ------------------------------------------------------------------------------ records


def _doc(i: int, gold: str) -> dict:
    return {"id": f"ewok-social_relations-{i}", "dataset": "ewok", "domain": "social_relations", "gold": gold}


def test_score_item_and_json_round_trip() -> None:
    # continuations " Yes", "Yes", " No", "No": P = .3, .1, .2, .05 → yes = ln .4, no = ln .25
    rec = score_item(_doc(1, "Yes"), [LN(0.3), LN(0.1), LN(0.2), LN(0.05)], [LN(0.01), LN(0.02), LN(0.03), -math.inf])
    assert rec.yes == pytest.approx(LN(0.4)) and rec.no == pytest.approx(LN(0.25))
    assert rec.null_yes == pytest.approx(LN(0.03)) and rec.null_no == pytest.approx(LN(0.03))
    assert rec.gold_yes and rec.domain == "social_relations"
    back = ItemRecord.from_dict(json.loads(json.dumps(rec.as_dict())))
    assert back == rec
    no_null = score_item(_doc(2, "No"), [0.0, -1.0, -2.0, -3.0])
    assert no_null.null_yes is None and null_answer_logprobs([rec, no_null]) is None


@pytest.mark.parametrize(
    ("gold", "lps", "message"),
    [
        ("Maybe", [0.0] * 4, "not Yes or No"),
        ("Yes", [0.0] * 3, "3 prompt log-probabilities, expected 4"),
        ("Yes", [-math.inf, -math.inf, -1.0, -1.0], "without probability"),
    ],
)
def test_score_item_rejects_bad_input(gold: str, lps: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        score_item(_doc(3, gold), lps)


def test_summarize_records_is_order_free_and_checks_them() -> None:
    rng = random.Random(0)
    null = [LN(0.02), LN(0.01), LN(0.03), LN(0.04)]
    records = [
        score_item(_doc(i, "Yes" if i % 2 else "No"), [rng.uniform(-5, -1) for _ in range(4)], null) for i in range(30)
    ]
    s = summarize(records)
    shuffled = records[:]
    rng.shuffle(shuffled)
    assert summarize(shuffled) == s
    assert s.n == 30
    ordered = sorted(records, key=lambda r: r.id)
    direct = summarize_yesno(
        [r.yes for r in ordered], [r.no for r in ordered], [r.gold_yes for r in ordered], null=(LN(0.03), LN(0.07))
    )
    assert direct.as_dict() == pytest.approx(s.as_dict(), nan_ok=True)

    with pytest.raises(ValueError, match="duplicate item ids"):
        summarize(records + records[:1])
    other_model = score_item(_doc(99, "Yes"), [-1.0] * 4, [LN(0.5)] * 4)
    with pytest.raises(ValueError, match="different models"):
        summarize(records + [other_model])
