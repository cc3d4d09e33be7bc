"""What qualifies a yes-no task's numbers is shown wherever they are: exact ties, items without a
Specific answer and Specific's gold-class problems, in the `biasmonkey summarize` table and its
notes, the report's warnings and verdict, and the `yesno-compare` / `compare --pairs` notes."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
from records import yesno_item

from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.tasks.contract import reported
from biasmonkey.tasks.yesno import report
from biasmonkey.tasks.yesno.compare import bias_caveats
from biasmonkey.tasks.yesno.family import FAMILY
from biasmonkey.tasks.yesno.options import YesNoOptions

TIE_NOTE = (
    "8 of 8 answers are exact ties (yes == no, e.g. both read as the top-k floor), each scored as a coin flip "
    "(0 in the bias, ½ correct): bias and accuracy say nothing of these items"
)


def tied_items() -> list:
    """8 COMPS items (gold Yes, No, …) whose yes and no log-probabilities are equal, as when both
    answers are read as the top-k floor."""
    return [yesno_item(i, gold, -9.0, -9.0) for i, gold in enumerate(["Yes", "No"] * 4)]


def test_summarize_table_counts_ties_and_notes_them() -> None:
    table = FAMILY.summary_table([tied_items()], tasks=["biasmonkey_yesno_comps"])
    (row,) = table.rows
    # every answer a tie: bias 0 / 8 = 0 and accuracy 8 · ½ / 8 = 0.5 under every correction
    assert (row["task"], row["n"], row["n_ties"], row["bias"], row["accuracy"]) == ("yesno_comps", 8, 8, 0.0, 0.5)
    assert row["n_no_specific"] == 0
    # the Specific folds of 4 + 4 items: each class has fewer than k = 5 items
    assert table.notes == [
        f"yesno_comps: {TIE_NOTE}.",
        "yesno_comps: comps: 4 gold-Yes items, fewer than the k = 5 folds: some folds hold no Yes item.",
        "yesno_comps: comps: 4 gold-No items, fewer than the k = 5 folds: some folds hold no No item.",
    ]


def test_summarize_table_has_the_metrics_of_each_harness() -> None:
    """The columns are the task's metrics in its harness (lm-eval's where not given), as without the hook."""
    items = [yesno_item(i, gold, -1.0 - i / 10, -2.0) for i, gold in enumerate(["Yes", "No"] * 5)]
    for harnesses in (None, ["lm_eval"], ["inspect"]):
        table = FAMILY.summary_table([items], tasks=["yesno_comps"], harnesses=harnesses)
        names = [
            m.name for m in reported(FAMILY, YesNoOptions(), (harnesses or ["lm_eval"])[0], FAMILY.tasks["yesno_comps"])
        ]
        assert table.columns == ["task", *names]
        assert ("p_yes_gold_yes_stderr" in names) == (harnesses != ["inspect"])
    # no ties, every item in a fold, 5 + 5 items: nothing to note
    assert table.rows[0]["n_ties"] == 0 and table.notes == []


def test_items_without_a_specific_answer_are_counted_in_the_table() -> None:
    """10 EWoK items of one domain: the last 2 fill no block of 4 and have no Specific answer."""
    items = [
        replace(
            yesno_item(i, gold, 0.0 if gold == "Yes" else -1.0, -1.0 if gold == "Yes" else 0.0),
            id=f"ewok-social_relations-{i + 1}",
            dataset="ewok",
            domain="social_relations",
        )
        for i, gold in enumerate(["Yes", "No"] * 5)
    ]
    table = FAMILY.summary_table([items], tasks=["yesno_ewok_social_relations"])
    (row,) = table.rows
    # right on every item; Specific: 8 right of 10 (2 in no fold count as wrong) → 0.8
    assert (row["accuracy"], row["accuracy_specific"], row["n_no_specific"]) == (1.0, 0.8, 2)
    assert table.notes[0].startswith("yesno_ewok_social_relations: 2 of 10 items have no Specific answer")


def test_specific_with_one_gold_answer_is_nan_with_its_reason() -> None:
    items = [yesno_item(i, "Yes", 0.0, -1.0) for i in range(6)]
    table = FAMILY.summary_table([items], tasks=["yesno_comps"])
    (row,) = table.rows
    assert math.isnan(row["bias_specific"]) and math.isnan(row["delta_pct_bias_specific"]) and row["n_no_specific"] == 6
    assert table.notes == [
        "yesno_comps: comps: every item in folds (6) has the gold answer Yes, so the Specific correction would "
        "subtract the answer itself: undefined."
    ]


def test_report_warns_of_ties_and_says_so_in_the_verdict() -> None:
    m = ModelResults(name="m1", model="org/m1")
    m.records["yesno"]["biasmonkey_yesno_comps"] = tied_items()
    tables = report.tables([m])
    warned = report.warnings([m], tables)
    assert {"model": "m1", "task": "biasmonkey_yesno_comps", "warning": "tied answers", "detail": TIE_NOTE} in warned
    summary = report.summary(m, tables)
    assert (summary["yesno_items"], summary["yesno_ties"]) == (8, 8)
    sentence = report.summary_sentence({"model": "m1", **summary}, tables)
    assert "(this run: 8 items, 8 of them exact ties scored as coin flips" in sentence


def test_compare_notes_ties_and_specific_caveats() -> None:
    runs = {"biasmonkey_yesno_comps": tied_items()}
    assert bias_caveats(runs) == [f"biasmonkey_yesno_comps: {TIE_NOTE}"]
    specific = bias_caveats(runs, "specific")
    assert specific[0] == f"biasmonkey_yesno_comps: {TIE_NOTE}" and len(specific) == 3  # + the two small classes
    clean = [yesno_item(i, gold, -1.0, -2.0) for i, gold in enumerate(["Yes", "No"] * 5)]
    assert bias_caveats({"biasmonkey_yesno_comps": clean}, "specific") == []


def test_report_warns_when_specific_is_undefined_and_shows_n_a() -> None:
    """3 items, all gold Yes: Specific is undefined, so the verdict and the summary column say n/a
    (it said +0.00: every corrected answer a tie) and a warning says why; the small classes (3 < k = 5,
    as on nearly every --limit run) are noted by `summarize`, not warned of."""
    m = ModelResults(name="m1", model="org/m1")
    m.records["yesno"]["biasmonkey_yesno_comps"] = [yesno_item(i, "Yes", -1.0, -3.0) for i in range(3)]
    tables = report.tables([m])
    assert [(w["warning"], w["detail"]) for w in report.warnings([m], tables)] == [
        (
            "Specific undefined",
            "comps: every item in folds (3) has the gold answer Yes, so the Specific correction would subtract the "
            "answer itself: undefined",
        )
    ]
    summary = report.summary(m, tables)
    assert summary["yesno_bias_base"] == 1.0 and math.isnan(summary["yesno_bias_specific"])
    assert report.summary_sentence({"model": "m1", **summary}) == (
        "Yes-no bias (mean over 1 task, 0 = unbiased): +1.00, n/a after the Specific correction (this run: 3 items)."
    )
    shown = report.summary_display(pd.DataFrame([{"model": "m1", **summary}]))
    assert shown == {"yes-no bias base → specific": ["+1.00 → n/a"]}
