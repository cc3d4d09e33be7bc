"""Yes-no bias metrics and per-item records, on hand-computed examples (arithmetic in comments)."""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from biasmonkey.metrics.yesno import (
    accuracy,
    answer_logprob,
    authors_folds,
    bias,
    block_folds,
    generic_correction,
    instruction_tuning_effect,
    p_yes,
    relative_change,
    specific_correction,
    stratified_kfold,
    summarize_yesno,
    votes,
)
from biasmonkey.tasks.yesno.scoring import (
    NO_SPECIFIC,
    SMALL_CLASS,
    ItemRecord,
    caveats,
    file_position,
    null_answer_logprobs,
    score_item,
    summarize,
)

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


def test_answer_logprob_is_numpys_fold_to_the_bit() -> None:
    # plain floats, the same steps as np.logaddexp.reduce: wide and narrow gaps, -inf, equal values
    rng = np.random.default_rng(7)
    for _ in range(4000):
        x = -rng.exponential(rng.choice([1e-3, 1.0, 50.0]), size=int(rng.integers(1, 5)))
        if rng.random() < 0.2:
            x[rng.integers(x.size)] = -np.inf
        if rng.random() < 0.1:
            x[:] = x[0]
        assert answer_logprob(x) == float(np.logaddexp.reduce(x)), x
    assert answer_logprob([-math.inf, -math.inf]) == -math.inf


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
    # Every item its own fold: its yes and no minus their means over the other four items. The
    # corrected margin is m_i − (S − m_i)/4, with margins m = yes − no = [3, 1, 1, −1, 2] and S = 6.
    no = np.array([-4.0, -2.0, -2.0, -1.0, -3.0])
    yes = no + np.array([3.0, 1.0, 1.0, -1.0, 2.0])
    gold = [True, True, False, False, True]
    folds = np.arange(5)
    cy, cn = specific_correction(yes, no, folds)
    assert list(cy) == pytest.approx([y - (yes.sum() - y) / 4 for y in yes])
    assert list(cn) == pytest.approx([x - (no.sum() - x) / 4 for x in no])
    # corrected margins m − (6 − m)/4 = [2.25, −0.25, −0.25, −2.75, 1.0] → votes [+, −, −, −, +]
    assert list(cy - cn) == pytest.approx([2.25, -0.25, -0.25, -2.75, 1.0])
    s = summarize_yesno(yes, no, gold, folds=folds)
    assert s.bias == pytest.approx(0.6)  # base votes [+, +, +, −, +]: (4 − 1) / 5
    assert s.bias_specific == pytest.approx(-0.2)  # (2 − 3) / 5
    assert s.accuracy == pytest.approx(0.8) and s.accuracy_specific == pytest.approx(0.8)
    assert s.delta_pct_bias_specific == pytest.approx(100 * (-0.2 - 0.6) / 0.6)  # −133.3
    assert s.delta_pct_accuracy_specific == pytest.approx(0.0)


def test_specific_calibrates_each_group_on_its_own() -> None:
    # Two groups (e.g. EWoK domains) of two items, each item its own fold: an item is calibrated on
    # the other item of its group only. Group a: margins 2, 0 → corrected 2 − 0 = 2, 0 − 2 = −2;
    # group b: margins −1, −3 → 2, −2. Pooled across groups the first item would get 2 − (−4/3).
    yes, no = [1.0, 0.0, -1.0, -2.0], [-1.0, 0.0, 0.0, 1.0]
    cy, cn = specific_correction(yes, no, [0, 1, 0, 1], groups=["a", "a", "b", "b"])
    assert list(cy - cn) == pytest.approx([2.0, -2.0, 2.0, -2.0])
    cy, cn = specific_correction(yes, no, [0, 1, 2, 3])
    assert (cy - cn)[0] == pytest.approx(2 + 4 / 3)


def test_items_in_no_fold_are_wrong_in_specific_accuracy_and_out_of_its_bias() -> None:
    """As the authors' extract_stats.py counts them: an item in no fold has no corrected answer;
    Specific accuracy divides by all items, Specific bias by the items with an answer."""
    # 10 EWoK items, k = 2: blocks 0–3 (fold 0) and 4–7 (fold 1); items 8, 9 are in no fold.
    folds = authors_folds([True] * 10, "ewok", k=2)
    assert folds.tolist() == [0] * 4 + [1] * 4 + [-1, -1]
    gold = [True, False] * 5
    # fold 0 margins 1, 1, 1, 1; fold 1 margins 3, −1, 3, −1 (mean 1): corrected fold 0: 1 − 1 = 0 → ties;
    # fold 1: m − 1 = 2, −2, 2, −2 → Yes, No, Yes, No, all correct.
    no = np.zeros(10)
    yes = np.array([1, 1, 1, 1, 3, -1, 3, -1, 5, 5], dtype=float)
    cy, cn = specific_correction(yes, no, folds)
    assert np.isnan(cy[8:]).all() and np.isnan(cn[8:]).all()
    s = summarize_yesno(yes, no, gold, folds=folds)
    # bias over the 8 answered items: (2 − 2 + 0 ties) / 8 = 0; accuracy (4 · 0.5 + 4) / 10 = 0.6
    assert s.bias_specific == 0.0 and s.accuracy_specific == pytest.approx(0.6)


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


def test_stratified_kfold_is_balanced_and_seeded() -> None:
    gold = np.array([True] * 23 + [False] * 17)
    folds = stratified_kfold(gold, k=5, seed=42)
    assert sorted(np.bincount(folds)) == [8, 8, 8, 8, 8]
    for cls in (True, False):
        per_fold = np.bincount(folds[gold == cls], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1
    assert list(stratified_kfold(gold, 5, 42)) == list(folds)
    assert list(stratified_kfold(gold, 5, 1)) != list(folds)
    with pytest.raises(ValueError, match="at least 2 folds"):
        stratified_kfold(gold, k=1)


def test_stratified_kfold_equals_scikit_learn() -> None:
    """The authors' COMPS/Arith/bAbI folds: StratifiedKFold(k, shuffle=True, random_state) test folds."""
    model_selection = pytest.importorskip("sklearn.model_selection")
    rng = np.random.default_rng(5)
    for trial in range(60):
        n, k, seed = int(rng.integers(10, 400)), int(rng.integers(2, 8)), int(rng.integers(0, 100))
        labels = rng.choice(["Yes", "No", "Maybe"][: 2 + trial % 2], n)
        if min(np.unique(labels, return_counts=True)[1]) < k:
            continue  # scikit-learn refuses (or warns about) classes smaller than k
        expected = np.empty(n, dtype=int)
        splits = model_selection.StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros(n), labels)
        for fold, (_, test) in enumerate(splits):
            expected[test] = fold
        assert stratified_kfold(labels, k, seed).tolist() == expected.tolist(), (n, k, seed)
        assert (
            authors_folds(labels == "Yes", "comps", k, seed).tolist()
            == stratified_kfold(labels == "Yes", k, seed).tolist()
        )


@pytest.mark.parametrize(
    ("n", "sizes"),
    [(60, [12, 12, 12, 12, 12]), (134, [28, 28, 28, 24, 24]), (138, [28, 28, 28, 28, 24]), (6, [4, 0, 0, 0, 0])],
)
def test_ewok_folds_are_consecutive_blocks_of_four(n: int, sizes: list[int]) -> None:
    # n // 4 blocks split as np.array_split splits them: 33 blocks → 7, 7, 7, 6, 6; the rest in no fold.
    folds = block_folds(n)
    assert folds.tolist() == authors_folds([True] * n, "ewok").tolist()
    assert [int((folds == f).sum()) for f in range(5)] == sizes
    assert (folds[: n - n % 4] >= 0).all() and (folds[n - n % 4 :] == -1).all()
    assert (np.diff(folds[folds >= 0]) >= 0).all() and all(len(set(folds[i : i + 4])) == 1 for i in range(0, n - 3, 4))
    with pytest.raises(ValueError, match="unknown yes-no dataset"):
        authors_folds([True] * n, "mmlu")


def test_specific_needs_two_items() -> None:
    s = summarize_yesno([-1.0], [-2.0], [True])
    assert s.bias == 1.0 and math.isnan(s.bias_specific) and math.isnan(s.delta_pct_bias_specific)
    assert s.n_no_specific == 1 and s.specific_undefined


def test_items_in_no_fold_are_counted() -> None:
    """A perfectly accurate model on 10 EWoK-style items: nothing changes but the 2 items after the
    last block of 4, which have no Specific answer; the number stays the authors', the count says so."""
    gold = [True, False] * 5
    margin = np.where(gold, 1.0, -1.0)  # Yes items +1, No items −1: every answer right
    s = summarize_yesno(margin, np.zeros(10), gold, folds=block_folds(10))
    # blocks 0–3 (fold 0) and 4–7 (fold 1), each with mean margin 0: corrected margins = margins, 8 right;
    # items 8, 9 in no fold: accuracy 8 / 10, Δ% = 100 · (0.8 − 1) / 1 = −20
    assert (s.accuracy, s.accuracy_specific, s.delta_pct_accuracy_specific) == (1.0, 0.8, pytest.approx(-20.0))
    assert s.n_no_specific == 2 and s.bias_specific == 0.0  # (4 − 4) / 8 answered items
    (note,) = [detail for kind, detail in caveats(s) if kind == NO_SPECIFIC]
    assert note.startswith("2 of 10 items have no Specific answer")


def test_specific_is_undefined_with_one_gold_answer() -> None:
    """All 6 items gold Yes: the calibration mean is the answer itself (margins 1, mean 1), so the
    correction would make every answer a tie (bias 0, "−100 %") and accuracy 0.5: undefined instead."""
    s = summarize_yesno([0.0] * 6, [-1.0] * 6, [True] * 6)
    assert (s.bias, s.accuracy) == (1.0, 1.0)
    assert all(math.isnan(x) for x in (s.bias_specific, s.accuracy_specific, s.delta_pct_bias_specific))
    assert s.n_no_specific == 6 and s.small_classes == ()
    assert s.specific_undefined == (
        "every item in folds (6) has the gold answer Yes, so the Specific correction would subtract the "
        "answer itself: undefined"
    )
    # per calibration group: group b (items 2, 3) is all Yes, so the task's Specific is undefined
    s = summarize_yesno(
        [0.0, -1.0, 0.0, 0.0],
        [-1.0, 0.0, -1.0, -1.0],
        [True, False, True, True],
        folds=[0, 1, 0, 1],
        groups=["a", "a", "b", "b"],
        k=2,
    )
    assert math.isnan(s.bias_specific) and s.specific_undefined.startswith(
        "b: every item in folds (2) has the gold answer Yes"
    )


@pytest.mark.parametrize(
    ("gold", "notes"),
    [
        ([True] * 6 + [False], ["1 gold-No item, fewer than the k = 5 folds: some folds hold no No item"]),
        (
            [True, False, True],  # 3 items, k = 5: in effect leave-one-out
            [
                "2 gold-Yes items, fewer than the k = 5 folds: some folds hold no Yes item",
                "1 gold-No item, fewer than the k = 5 folds: some folds hold no No item",
            ],
        ),
        ([True] * 5 + [False] * 5, []),
    ],
)
def test_gold_classes_smaller_than_k_are_noted(gold: list[bool], notes: list[str]) -> None:
    margin = np.where(gold, 1.0, -1.0)
    s = summarize_yesno(margin, np.zeros(len(gold)), gold)
    assert list(s.small_classes) == notes
    assert math.isfinite(s.bias_specific) and not s.specific_undefined  # noted, not undefined
    assert [detail for kind, detail in caveats(s) if kind == SMALL_CLASS] == notes


def test_small_classes_are_where_scikit_learn_warns_or_refuses() -> None:
    """docs/yesno.md: the authors' StratifiedKFold warns of a class smaller than k and refuses k
    above every class; ours makes the folds and notes the classes."""
    model_selection = pytest.importorskip("sklearn.model_selection")
    split = model_selection.StratifiedKFold(5, shuffle=True, random_state=42).split
    with pytest.warns(UserWarning, match="least populated class in y has only 1 members"):
        list(split(np.zeros(7), [True] * 6 + [False]))
    with pytest.raises(ValueError, match="cannot be greater than the number of members in each class"):
        list(split(np.zeros(6), [True] * 3 + [False] * 3))
    assert len(summarize_yesno([0.0] * 6, [-1.0] * 6, [True] * 3 + [False] * 3).small_classes) == 2


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


# ------------------------------------------------------------------------------ instruction tuning

FIXTURES = Path(__file__).parent.parent / "fixtures" / "yesno"


def _fixture_rows(name: str) -> list[dict[str, str]]:
    with open(FIXTURES / name, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


AUTHORS_ITEMS = "authors_items_zeroshot_ewok_physical_dynamics_qwen1.5-7b.csv"


def test_specific_equals_the_authors_on_their_ewok_domain_file() -> None:
    """The authors' own per-question output (EWoK physical_dynamics, Qwen1.5-7B, zero-shot): our
    folds, corrected log-probabilities, corrected answers and Specific numbers are theirs exactly."""
    rows = _fixture_rows(AUTHORS_ITEMS)
    gold = [r["Correct Answer"] == "Yes" for r in rows]
    yes, no = (np.array([float(r[f"raw_{a}_logprob"]) for r in rows]) for a in ("yes", "no"))
    folds = authors_folds(gold, "ewok")
    assert folds.tolist() == [int(r["fold"]) for r in rows]  # 15 blocks of 4 → 3 blocks per fold
    cy, cn = specific_correction(yes, no, folds)
    assert cy.tolist() == [float(r["corrected_yes_logprob"]) for r in rows]
    assert cn.tolist() == [float(r["corrected_no_logprob"]) for r in rows]
    answers = [r["kfold_predicted_answer"] == "True" for r in rows]
    assert (cy > cn).tolist() == answers
    # Through the records, in any order (ids ewok-physical_dynamics-<row + 1>):
    records = [
        score_item(
            {"id": f"ewok-physical_dynamics-{int(r['row']) + 1}", "dataset": "ewok", "domain": "physical_dynamics"}
            | {"gold": r["Correct Answer"]},
            [y, -math.inf, n, -math.inf],
        )
        for r, y, n in zip(rows, yes, no)
    ]
    random.Random(1).shuffle(records)
    s = summarize(records)
    n_items = len(rows)
    assert s.accuracy == sum(r["raw_is_correct"] == "True" for r in rows) / n_items  # 34 / 60
    assert s.bias == pytest.approx(-0.4)  # the authors' plain_bias (their summary JSON)
    assert s.accuracy_specific == sum(a == g for a, g in zip(answers, gold)) / n_items == 28 / 60  # kfold_acc
    assert s.bias_specific == (2 * sum(answers) - n_items) / n_items == 0.0  # kfold_bias


def test_instruction_tuning_effect_hand_computed() -> None:
    base = [0.5, -0.4, 0.2]
    instruct = [0.1, 0.3, -0.2]
    e = instruction_tuning_effect(base, instruct)
    # |base| = [.5, .4, .2] (mean .36667), |instruct| = [.1, .3, .2] (mean .2)
    # differences |i| − |b| = [−.4, −.1, 0]: mean −1/6
    assert e.n == 3 and e.df == 2
    assert e.mean_abs_base == pytest.approx(0.366667, abs=1e-6) and e.mean_abs_instruct == pytest.approx(0.2)
    assert e.mean_difference == pytest.approx(-1 / 6)
    # deviations from the mean: −.23333, .06667, .16667 → SS .086667, SD sqrt(.086667 / 2) = .208167
    assert e.sd_difference == pytest.approx(0.208167, abs=1e-6)
    # d_z with the paper's sign: mean(|b| − |i|) / SD = .166667 / .208167 = +.800641, positive for
    # a reduction (the authors' script: −.800641; a pooled-SD d would give 1.29099 here)
    assert e.cohens_d == pytest.approx(0.800641, abs=1e-6)
    # t = mean / (SD / √3) = −.166667 / .120185 = −1.38675; with df = 2, p = 1 − |t| / √(t² + 2)
    # = 1 − 1.38675 / 1.98068 = .29986
    assert e.t == pytest.approx(-1.38675, abs=1e-5)
    assert e.p_value == pytest.approx(0.29986, abs=1e-5)
    # percent reduction of the mean magnitude: 100 · (.36667 − .2) / .36667 = 45.45
    assert e.percent_reduction == pytest.approx(100 * (1 / 6) / (0.55 / 1.5))
    assert json.loads(json.dumps(e.as_dict()))["n"] == 3


def test_instruction_tuning_effect_degenerate_inputs() -> None:
    one = instruction_tuning_effect([0.4], [-0.1])
    assert one.n == 1 and one.mean_difference == pytest.approx(-0.3)
    assert all(math.isnan(x) for x in (one.sd_difference, one.cohens_d, one.t, one.p_value))
    same = instruction_tuning_effect([0.5, -0.25], [0.25, 0.0])  # both differences −0.25
    assert same.mean_difference == -0.25 and same.sd_difference == 0.0
    assert math.isnan(same.cohens_d) and math.isnan(same.p_value)  # undefined, not infinite
    none = instruction_tuning_effect([], [])
    assert none.n == 0 and math.isnan(none.mean_difference) and math.isnan(none.percent_reduction)
    with pytest.raises(ValueError, match="finite"):
        instruction_tuning_effect([0.1, math.nan], [0.2, 0.3])
    with pytest.raises(ValueError):
        instruction_tuning_effect([0.1, 0.2], [0.2])


def test_instruction_tuning_effect_takes_rounding_for_no_spread() -> None:
    """Differences equal but for their last bit are equal: d_z and the test are undefined, not huge."""
    # |0.1| − |0.3| = −0.19999999999999998 and |0.5| − |0.7| = −0.19999999999999996: a spread of one
    # ulp (SD 2.8e-17 ≤ 1e-12 · max(1, 0.2)); `np.ptp(diff) > 0` gave d = 7.2e15, t = −1.0e16, p = 6e-17.
    e = instruction_tuning_effect([0.3, 0.7], [0.1, 0.5])
    assert e.mean_difference == pytest.approx(-0.2) and e.sd_difference == 0.0
    assert math.isnan(e.cohens_d) and math.isnan(e.t) and math.isnan(e.p_value)
    assert e.percent_reduction == pytest.approx(40.0)  # 100 · (0.5 − 0.3) / 0.5
    # A spread the biases themselves make is kept: differences −0.2 and −0.2 + 1e-6 have
    # SD 1e-6/√2 = 7.07e-7, so d = 0.1999995 / 7.07e-7 = 2.83e5.
    real = instruction_tuning_effect([0.3, 0.7], [0.1, 0.5 + 1e-6])
    assert real.sd_difference == pytest.approx(1e-6 / math.sqrt(2), rel=1e-6)
    assert real.cohens_d == pytest.approx(0.1999995 / (1e-6 / math.sqrt(2)), rel=1e-6)


@pytest.mark.parametrize(("dataset", "n"), [("comps", 8), ("ewok", 88)])
def test_instruction_tuning_effect_reproduces_the_authors_summary(dataset: str, n: int) -> None:
    """Zero-shot rows of the authors' bias_analysis_detailed.csv give their summary row.

    COMPS: one unit per model pair; EWoK: one unit per (model pair, domain). Their summary
    reports d = −1.053 for COMPS (a pooled-SD d gives 1.643); our d has the paper's sign, +1.053."""
    rows = [r for r in _fixture_rows("bias_analysis_zeroshot.csv") if r["dataset"] == dataset]
    (want,) = [
        r for r in _fixture_rows("bias_analysis_summary.csv") if (r["prompt"], r["dataset"]) == ("zeroshot", dataset)
    ]
    base = [float(r["base_bias"]) for r in rows]
    inst = [float(r["inst_bias"]) for r in rows]
    e = instruction_tuning_effect(base, inst)
    assert e.n == n == int(want["n"])
    for field in ("mean_abs_base", "mean_abs_instruct", "mean_difference", "percent_reduction"):
        assert getattr(e, field) == pytest.approx(float(want[field]), rel=1e-12), field
    assert e.cohens_d == pytest.approx(-float(want["cohens_d"]), rel=1e-12)  # their script's sign is the opposite
    assert e.p_value == pytest.approx(float(want["p_value"]), rel=1e-9)  # ttest_rel vs their ttest_1samp
    if dataset == "comps":
        assert e.cohens_d == pytest.approx(1.053403456932908, rel=1e-12)


# The authors' eight model pairs (plotting-tables-scripts/instructvbase_stats.py, upstream 48591bb).
MODEL_PAIRS = {
    "falcon": [("Falcon3-3B-Base", "Falcon3-3B-Instruct"), ("Falcon3-10B-Base", "Falcon3-10B-Instruct")],
    "mpt": [("mpt-7b", "mpt-7b-chat"), ("mpt-30b", "mpt-30b-chat")],
    "qwen": [("Qwen1.5-7B", "Qwen1.5-7B-Chat"), ("Qwen1.5-32B", "Qwen1.5-32B-Chat")],
    "llama": [("Llama-2-7b-hf", "Llama-2-7b-chat-hf"), ("Llama-2-13b-hf", "Llama-2-13b-chat-hf")],
}


@pytest.mark.requires("shared_data")
def test_all_of_the_authors_summary_from_their_per_model_results(data_dir: Path) -> None:
    """All 15 rows of bias_analysis_summary.csv from reference/summary_jsons: one unit per
    (model pair, domain) of each file, plain_bias (MMLU: plain_rstd)."""
    ref = data_dir / "yesno" / "reference" / "summary_jsons"
    for want in _fixture_rows("bias_analysis_summary.csv"):
        prompt, dataset = want["prompt"], want["dataset"]
        field = "plain_rstd" if dataset == "mmlu" else "plain_bias"
        base, inst = [], []
        for family, pairs in MODEL_PAIRS.items():
            results = json.loads((ref / f"{prompt}_{family}_{dataset}.json").read_text())
            for models in results.values():  # one entry per domain
                for b, i in pairs:
                    base.append(models[b][field])
                    inst.append(models[i][field])
        e = instruction_tuning_effect(base, inst)
        assert e.n == int(want["n"]), (prompt, dataset)
        for name in ("mean_abs_base", "mean_abs_instruct", "mean_difference", "percent_reduction"):
            assert getattr(e, name) == pytest.approx(float(want[name]), rel=1e-9), (prompt, dataset, name)
        assert e.cohens_d == pytest.approx(-float(want["cohens_d"]), rel=1e-9), (prompt, dataset)  # the paper's sign
        assert e.p_value == pytest.approx(float(want["p_value"]), rel=1e-7), (prompt, dataset)


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
    ordered = sorted(records, key=file_position)  # rows 0, 1, …, 29 of one EWoK domain
    gold = [r.gold_yes for r in ordered]
    direct = summarize_yesno(
        [r.yes for r in ordered],
        [r.no for r in ordered],
        gold,
        null=(LN(0.03), LN(0.07)),
        folds=authors_folds(gold, "ewok"),
    )
    assert direct.small_classes == s.small_classes == ()  # 15 + 15 items in folds, both classes ≥ k = 5
    assert direct.as_dict() | {"small_classes": 0} == pytest.approx(s.as_dict() | {"small_classes": 0}, nan_ok=True)

    with pytest.raises(ValueError, match="duplicate item ids"):
        summarize(records + records[:1])
    other_model = score_item(_doc(99, "Yes"), [-1.0] * 4, [LN(0.5)] * 4)
    with pytest.raises(ValueError, match="different models"):
        summarize(records + [other_model])


def test_yesno_compare_names_the_units_it_leaves_out_for_want_of_a_bias() -> None:
    from biasmonkey.tasks.yesno.commands import undefined_note

    rows = [
        {"task": "biasmonkey_yesno_comps", "undefined_units": 0},
        {"task": "biasmonkey_yesno_arith", "undefined_units": 2},
    ]
    note = undefined_note(rows, "specific")
    assert note is not None and note.endswith("left out of the comparison: biasmonkey_yesno_arith (2)")
    assert "finite specific bias" in note
    assert undefined_note(rows[:1], "specific") is None
