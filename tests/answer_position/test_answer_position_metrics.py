"""Answer-position metrics, records and the family's metric table, on hand-computed examples
(arithmetic in comments)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from biasmonkey.metrics.answer_position import (
    McqFolds,
    balanced_mcq_folds,
    letter_recalls,
    mcq_answers,
    mcq_specific_correction,
    recall_std,
    summarize_mcq,
)
from biasmonkey.tasks.answer_position.codecs import from_inspect, from_lm_eval, score_value
from biasmonkey.tasks.answer_position.family import FAMILY, TASKS, task_name
from biasmonkey.tasks.answer_position.options import AnswerPositionOptions
from biasmonkey.tasks.answer_position.scoring import McqRecord, score_item, summarize
from biasmonkey.tasks.contract import LoggedScore, reported
from biasmonkey.tasks.families import family_of

LN = math.log


def test_mcq_answers_and_recalls_hand_computed() -> None:
    lp = [
        [-1.0, -2.0, -3.0, -4.0],  # A
        [-2.0, -1.0, -1.0, -5.0],  # B and C tie: half each
        [-3.0, -3.0, -3.0, -3.0],  # four-way tie: a quarter each
        [-4.0, -3.0, -2.0, -1.0],  # D
    ]
    a = mcq_answers(lp)
    assert a.tolist() == [[1, 0, 0, 0], [0, 0.5, 0.5, 0], [0.25] * 4, [0, 0, 0, 1]]
    gold = ["A", "C", "C", "B"]
    # recall A: item 0 → 1; B: item 3 → 0; C: items 1, 2 → (0.5 + 0.25) / 2; D: no item → NaN
    r = letter_recalls(a, gold)
    assert r[:3].tolist() == [1.0, 0.0, 0.375] and math.isnan(r[3])
    # RStd: population SD of [1, 0, .5, .5] = sqrt((.25 + .25 + 0 + 0) / 4) = .353553
    assert recall_std([1.0, 0.0, 0.5, 0.5]) == pytest.approx(0.353553, abs=1e-6)
    with pytest.raises(ValueError, match="not among the letters"):
        letter_recalls(a, ["A", "C", "C", "E"])


def test_mcq_specific_correction_hand_computed() -> None:
    # k = 3 with two letters: balanced folds 0 and 1 calibrate each other, the extra fold 2 is
    # calibrated on both balanced folds.
    lp = np.array([[-1.0, -3.0], [-2.0, -1.0], [-1.5, -2.5], [-3.0, -0.5], [-1.0, -1.0]])
    folds = McqFolds(fold=np.array([0, 0, 1, 1, 2]), order=np.arange(5), per_letter=2, k=3)
    out = mcq_specific_correction(lp, folds)
    # fold 0 minus the fold-1 means (−2.25, −1.5); fold 1 minus the fold-0 means (−1.5, −2.0);
    # item 4 minus the means of items 0–3 (−1.875, −1.75)
    np.testing.assert_allclose(out, [[1.25, -1.5], [0.25, 0.5], [0.0, -0.5], [-1.5, 1.5], [0.875, 0.75]])


def test_balanced_mcq_folds_structure() -> None:
    gold = list("AAAAABBBBCCCCCCDDDD")  # A 5, B 4, C 6, D 4
    f = balanced_mcq_folds(gold, k=5, seed=42)
    # fewest items of a letter: 4 → 4 per letter drawn (a multiple of k − 1 = 4), one per fold
    assert f.per_letter == 4 and f.k == 5
    for fold in range(4):
        assert sorted(gold[i] for i in np.flatnonzero(f.fold == fold)) == ["A", "B", "C", "D"]
    extra = np.flatnonzero(f.fold == 4)
    assert sorted(gold[i] for i in extra) == ["A", "C", "C"]
    # order: the drawn A items, B items, C items, D items (4 each, fold 0..3 in turn), then the rest ascending
    assert sorted(f.order.tolist()) == list(range(19)) and f.order[16:].tolist() == extra.tolist()
    assert [gold[i] for i in f.order[:16]] == list("AAAABBBBCCCCDDDD")
    assert f.fold[f.order[:16]].tolist() == [0, 1, 2, 3] * 4
    # deterministic for a seed; the draw changes with it
    assert balanced_mcq_folds(gold, 5, 42).order.tolist() == f.order.tolist()
    assert balanced_mcq_folds(gold, 5, 7).order.tolist() != f.order.tolist()
    with pytest.raises(ValueError, match="at least 4 items"):
        balanced_mcq_folds(list("AAAABBBCCCCDDDD"))
    with pytest.raises(ValueError, match="k ≥ 3"):
        balanced_mcq_folds(gold, k=2)


def test_summarize_mcq_removes_a_letter_preference() -> None:
    """40 items, 10 per gold letter; margin 1 for the gold letter, +3 for A on every item, noise
    < 0.1. Base: always A. Each calibration set holds every gold letter equally often, so the
    subtracted means are 3·[A] + 1/4 + mean noise, and the corrected answer is the gold one."""
    rng = np.random.default_rng(3)
    gold = [x for x in "ABCD" for _ in range(10)]
    lp = np.full((40, 4), -5.0) + rng.uniform(-0.05, 0.05, (40, 4))
    lp[np.arange(40), ["ABCD".index(g) for g in gold]] += 1.0
    lp[:, 0] += 3.0
    s = summarize_mcq(lp, gold)
    assert s.n == 40 and s.n_ties == 0
    assert s.accuracy == 0.25 and s.recalls == (1.0, 0.0, 0.0, 0.0)
    assert s.rstd == pytest.approx(math.sqrt(0.1875))  # SD of [1, 0, 0, 0]
    assert s.accuracy_specific == 1.0 and s.recalls_specific == (1.0,) * 4 and s.rstd_specific == 0.0
    assert s.delta_pct_rstd_specific == pytest.approx(-100.0) and s.delta_pct_accuracy_specific == pytest.approx(300.0)
    with pytest.raises(ValueError, match="items × 4"):
        summarize_mcq(lp[:, :3], gold)


def test_too_few_items_leave_specific_nan() -> None:
    # C has 2 items < k − 1 = 4: no balanced folds; D has none: its recall and the RStd are NaN
    s = summarize_mcq([[-1.0, -2.0, -3.0, -4.0]] * 6, list("AAABCC"))
    assert s.accuracy == 0.5 and s.recalls[:3] == (1.0, 0.0, 0.0) and math.isnan(s.recalls[3])
    assert math.isnan(s.rstd) and math.isnan(s.accuracy_specific) and math.isnan(s.rstd_specific)


# ------------------------------------------------------------------------------ records and the metric table

GOLD = list("AABBCCDD")
# Every letter −2, A +1 (a preference for the first position), the gold letter + its bonus.
BONUS = [0.5, 1.5, 1.5, 0.5, 0.5, 0.5, 1.5, 0.5]


def _letters() -> np.ndarray:
    lp = np.full((8, 4), -2.0)
    lp[:, 0] += 1.0
    for i, (g, b) in enumerate(zip(GOLD, BONUS)):
        lp[i, "ABCD".index(g)] += b
    return lp


def _records() -> list[McqRecord]:
    """Each letter's two spellings " X" and "X" carry half its probability: log-sum-exp = the letter."""
    out = []
    for i, row in enumerate(_letters()):
        spellings = [v for x in row for v in (x - LN(2), x - LN(2))]
        doc = {"id": f"mmlu-anatomy-{i + 1}", "domain": "anatomy", "gold": GOLD[i]}
        out.append(score_item(doc, spellings))
    return out


def test_letters_are_the_log_sum_exp_of_both_spellings() -> None:
    r = score_item(
        {"id": "mmlu-anatomy-1", "domain": "anatomy", "gold": "C"},
        [LN(p) for p in (0.2, 0.2, 0.2, 0.2, 0.05, 0.05, 0.02, 0.01)],
    )
    assert r.letters == pytest.approx([LN(0.4), LN(0.4), LN(0.1), LN(0.03)])
    assert r.answers() == (0.5, 0.5, 0.0, 0.0)  # A and B tie: half each
    with pytest.raises(ValueError, match="4 log-probabilities, expected 8"):
        score_item({"id": "x-1", "domain": "anatomy", "gold": "A"}, [0.0] * 4)
    with pytest.raises(ValueError, match="not one of A, B, C, D"):
        score_item({"id": "x-1", "domain": "anatomy", "gold": "E"}, [0.0] * 8)
    with pytest.raises(ValueError, match="without probability"):
        score_item({"id": "x-1", "domain": "anatomy", "gold": "A"}, [-math.inf, -math.inf] + [-1.0] * 6)


def test_family_metrics_hand_computed() -> None:
    """k = 3 (two balanced folds of one item per letter; 2 items per letter: no extra fold)."""
    records = _records()
    # Plain answers (letters = −2 each, A −1, gold + bonus): A-items A ✓ ✓; B-items B (−.5 > −1) ✓, A ✗;
    # C-items A ✗ ✗ (−1.5 < −1); D-items D ✓, A ✗. Recalls A 1, B .5, C 0, D .5; accuracy 4/8 = .5;
    # RStd = population SD of [1, .5, 0, .5] = sqrt((.25 + 0 + .25 + 0)/4) = .353553
    folds = balanced_mcq_folds(GOLD, k=3, seed=42)
    assert folds.fold.tolist() == [1, 0, 0, 1, 1, 0, 1, 0]  # fold 0: items 2, 3, 6, 8; fold 1: 1, 4, 5, 7
    # Fold 0 is calibrated on fold 1's letter means: A (−.5 −1 −1 −1)/4 = −.875, B −1.875, C −1.875, D −1.625;
    # fold 1 on fold 0's: A (.5 −1 −1 −1)/4 = −.625, B −1.625, C −1.875, D −1.875. Item 4 (gold B, fold 1):
    # [−1, −1.5, −2, −2] − [−.625, −1.625, −1.875, −1.875] = [−.375, .125, −.125, −.125] → B ✓; item 5 (gold C,
    # fold 1): [−1, −2, −1.5, −2] − … = [−.375, −.375, .375, −.125] → C ✓; every item is then answered right.
    options = AnswerPositionOptions(k=3)
    m = {
        metric.name: metric.compute(records)
        for metric in reported(FAMILY, options, "lm_eval", TASKS[task_name("anatomy")])
    }
    assert m["accuracy"] == 0.5
    assert [m[f"recall_{x}"] for x in "ABCD"] == [1.0, 0.5, 0.0, 0.5]
    assert m["rstd"] == pytest.approx(math.sqrt(0.125))
    assert m["accuracy_specific"] == 1.0 and [m[f"recall_{x}_specific"] for x in "ABCD"] == [1.0] * 4
    assert m["rstd_specific"] == 0.0
    assert m["delta_pct_rstd_specific"] == pytest.approx(-100.0) and m["delta_pct_accuracy_specific"] == 100.0
    assert (m["n"], m["n_ties"], m["imputed_continuations"]) == (8, 0, 0)
    # the summary says the same, in any record order
    s = summarize(records[::-1], k=3)
    assert (s.accuracy, s.recalls, s.rstd_specific) == (0.5, (1.0, 0.5, 0.0, 0.5), 0.0)
    assert FAMILY.summarize(records).n == 8
    # the default k = 5 needs 4 items per letter: with 2, the Specific numbers are NaN
    m5 = {metric.name: metric.compute(records) for metric in FAMILY.metrics(AnswerPositionOptions(), "inspect")}
    assert m5["accuracy"] == 0.5 and math.isnan(m5["rstd_specific"])


def test_summaries_refuse_duplicates_and_mixed_subjects() -> None:
    records = _records()
    with pytest.raises(ValueError, match="duplicate item ids"):
        summarize(records + records[:1])
    other = score_item({"id": "mmlu-virology-1", "domain": "virology", "gold": "A"}, records[0].logprobs)
    with pytest.raises(ValueError, match="several subjects"):
        summarize([*records, other])


def test_codecs_round_trip() -> None:
    records = _records()
    for r in records:
        doc = {"id": r.id, "domain": r.domain, "gold": r.gold, "query": "…"}
        logged = [[str(v), "False"] for v in r.logprobs]  # lm-eval logs numbers as strings
        assert from_lm_eval(doc, logged) == r
        assert from_inspect(LoggedScore(r.id, score_value(r), None, doc)) == r
        assert McqRecord.from_dict(json.loads(json.dumps(r.as_dict()))) == r
    imputed = from_lm_eval(doc, [[str(v) + (" imputed" if i == 1 else ""), "False"] for i, v in enumerate(r.logprobs)])
    assert imputed.n_imputed == 1
    with pytest.raises(ValueError, match="not a biasmonkey answer-position score"):
        from_inspect(LoggedScore("x", {"yes": 0.0}, None, doc))


def test_task_table() -> None:
    assert len(TASKS) == 57 * 3
    assert TASKS["answer_position_abstract_algebra"] == {"subject": "abstract_algebra", "prompt": "zeroshot"}
    assert TASKS["answer_position_world_religions_fewshot"] == {"subject": "world_religions", "prompt": "fewshot"}
    assert family_of("biasmonkey_answer_position_anatomy_instronly") is FAMILY
    assert family_of("biasmonkey/answer_position_anatomy") is FAMILY
    assert FAMILY.hub_metric == "abs_" + FAMILY.signed_metric == "abs_rstd"
    with pytest.raises(ValueError, match="at least 3"):
        AnswerPositionOptions(k=2)
