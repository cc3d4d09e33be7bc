"""The answer-position family's `biasmonkey summarize` table: its rows are the metrics the tasks
report, and every n/a number has its reason under the table; RStd of fewer than 2 recalls is n/a."""

from __future__ import annotations

import math

import pytest

from biasmonkey.metrics.answer_position import recall_std, summarize_mcq
from biasmonkey.tasks.answer_position.family import FAMILY
from biasmonkey.tasks.answer_position.options import AnswerPositionOptions
from biasmonkey.tasks.answer_position.scoring import McqRecord, score_item
from biasmonkey.tasks.answer_position.summary import summary_table
from biasmonkey.tasks.contract import HARNESSES, reported

TASK = "answer_position_anatomy_fewshot"
SPECIFIC_NOTE = (
    "Specific n/a: too few questions per gold letter (A 2, B 1, C 0, D 1) for k − 1 = 4 balanced folds, "
    "which need at least 4 of each"
)


def _records(gold: str) -> list[McqRecord]:
    """One question per gold letter in `gold`, answered A: A −1, B −2, C −3, D −4, each letter's two
    spellings at its value (their log-sum-exp only shifts every letter alike)."""
    letters = [-1.0, -2.0, -3.0, -4.0]
    return [
        score_item({"id": f"mmlu-anatomy-{i}", "domain": "anatomy", "gold": g}, [v for x in letters for v in (x, x)])
        for i, g in enumerate(gold)
    ]


def test_rstd_of_one_recall_is_nan() -> None:
    # one recall has SD 0 whatever the bias: n/a (it was 0.0)
    assert math.isnan(recall_std([0.3])) and math.isnan(recall_std([]))
    assert recall_std([1.0, 0.0]) == 0.5  # SD of (1, 0)
    s = summarize_mcq([[-1.0], [-1.0]], ["A", "A"], k=3, letters=("A",))  # k − 1 = 2 folds of 1 question
    assert s.recalls == s.recalls_specific == (1.0,) and math.isnan(s.rstd) and math.isnan(s.rstd_specific)
    assert s.notes == {"rstd": "rstd n/a: one letter (RStd needs at least 2 recalls)"}


def test_summary_notes_say_why_rstd_and_specific_are_nan() -> None:
    # gold A, A, B, D (no C), every question answered A: recalls A 1, B 0, C NaN, D 0 → RStd n/a;
    # C has 0 < k − 1 = 4 questions → no balanced folds, Specific n/a
    s = summarize_mcq([[-1.0, -2.0, -3.0, -4.0]] * 4, list("AABD"))
    assert math.isnan(s.rstd) and math.isnan(s.accuracy_specific)
    assert s.notes == {
        "rstd": "rstd n/a: no question has the gold letter C (RStd needs every letter's recall)",
        "specific": SPECIFIC_NOTE,
    }
    # 4 questions per letter: both computed, no notes
    assert summarize_mcq([[-1.0, -2.0, -3.0, -4.0]] * 16, list("ABCD") * 4).notes == {}


def test_summary_table_rows_are_the_reported_metrics_and_notes_their_reasons() -> None:
    assert FAMILY.summary_table is summary_table
    records = _records("AABD")
    options = AnswerPositionOptions()
    table = summary_table([records], run_options=[options], tasks=[TASK])
    (row,) = table.rows
    for harness in HARNESSES:  # the same metrics in both harnesses: the table is each one's
        names = [m.name for m in reported(FAMILY, options, harness, FAMILY.tasks[TASK])]
        assert list(table.columns) == ["task", *names]
    assert row["task"] == TASK and row["n"] == 4 and row["accuracy"] == 0.5  # the two gold-A questions
    assert math.isnan(row["rstd"]) and math.isnan(row["rstd_specific"]) and math.isnan(row["recall_C"])
    assert row["recall_A"] == 1.0 and math.isnan(row["recall_B_stderr"])  # one gold-B question
    assert row["recall_A_stderr"] == 0.0  # two gold-A questions, both answered A
    assert list(table.notes) == [
        f"{TASK}: rstd n/a: no question has the gold letter C (RStd needs every letter's recall).",
        f"{TASK}: {SPECIFIC_NOTE}.",
        f"{TASK}: recall stderr n/a for B, D: 1 question with that gold letter (a standard error needs at least 2).",
    ]
    # the run's k: k = 3 needs 2 per letter, which C still lacks
    k3 = summary_table([records], run_options=[AnswerPositionOptions(k=3)], tasks=[f"biasmonkey_{TASK}"])
    assert "for k − 1 = 2 balanced folds, which need at least 2 of each" in k3.notes[1]
    with pytest.raises(ValueError):
        summary_table([records], tasks=[])  # a name per task
