"""The cognitive family's report hooks on hand-made records: biases without a t-test are counted and
named, entries run on different tests say so, and 0 shows as 0."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from records import cognitive_test

from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.app.report.tables import build_tables
from biasmonkey.tasks.cognitive import report

TASK = "biasmonkey_cognitive_anchoring"


def model(name: str, scores: list[float | None]) -> ModelResults:
    m = ModelResults(name=name, model=f"/models/{name}")
    m.records["cognitive"][TASK] = [cognitive_test(i, s) for i, s in enumerate(scores)]
    return m


def test_a_bias_without_a_t_test_is_counted_and_named() -> None:
    # one scored test (m = +0.571): mean 0.571, no SD → no t-test, p NaN, outside Holm's family
    tables = build_tables([model("tiny", [0.571])])
    (row,) = tables["cognitive"].to_dict("records")
    assert pd.isna(row["p"]) and row["no_t_test"] == "1 scored test, fewer than 2"
    summary = tables["summary"].iloc[0]
    assert (summary["cognitive_biases"], summary["cognitive_significant_holm"], summary["cognitive_untested"]) == (
        0,
        0,
        1,
    )
    assert report.summary_sentence(summary.to_dict(), tables) == (
        "Cognitive biases: 0 of 0 tested biases significant after Holm; 1 more without a t-test "
        "(anchoring: 1 scored test, fewer than 2), outside the count."
    )
    assert report.summary_display(tables["summary"]) == {"cognitive significant (Holm)": ["0 / 0 (+1 without t-test)"]}
    warning = tables["warnings"].query("warning == 'no t-test'").iloc[0]
    assert (warning["model"], warning["task"]) == ("tiny", "anchoring")
    assert warning["detail"] == "1 scored test, fewer than 2: no p-value, outside the significance counts"


def test_no_spread_and_a_tested_bias() -> None:
    # .5, .5: SD 0 → no t-test; .5, 1: mean .75, stderr .25, t 3, df 1 → p 0.2048, tested, not significant
    flat = build_tables([model("flat", [0.5, 0.5])])
    assert flat["cognitive"]["no_t_test"].tolist() == ["no spread: all 2 scores equal"]
    tested = build_tables([model("m", [0.5, 1.0])])
    assert tested["cognitive"]["no_t_test"].tolist() == [""]
    row = tested["summary"].iloc[0].to_dict()
    assert row["cognitive_untested"] == 0 and len(tested["warnings"]) == 0
    assert report.summary_sentence(row, tested) == "Cognitive biases: 0 of 1 significant after Holm."
    assert report.summary_display(tested["summary"]) == {"cognitive significant (Holm)": ["0 / 1"]}


def test_entries_on_different_tests_say_so(tmp_path: Path) -> None:
    # tiny: 1 test of anchoring; tiny1: 2 tests
    tables = build_tables([model("tiny", [0.571]), model("tiny1", [0.5, -0.25])])
    cog = tables["cognitive"]
    assert report.basis(cog) == "tiny: 1 test per bias; tiny1: 2 tests per bias"
    assert report.headline(tables).title.endswith("; over tiny: 1 test per bias; tiny1: 2 tests per bias")
    note = report.like_with_like(cog)
    assert note == (
        "Not like with like: the entries ran different numbers of tests (tiny: 1 test per bias; tiny1: 2 tests "
        "per bias), so their means are not over the same tests."
    )
    assert note in report.section(tables, tmp_path).blocks
    # the same tests: one basis, no note
    same = build_tables([model("a", [0.5, 1.0]), model("b", [0.25, 1.0])])["cognitive"]
    assert report.basis(same) == "2 tests per bias" and report.like_with_like(same) is None
    assert report.like_with_like(cog[cog["model"] == "tiny"]) is None


def test_settings_that_differ_are_named() -> None:
    cog = pd.DataFrame(
        {"model": ["a", "b"], "bias": ["anchoring"] * 2, "n_tests": [2, 2], "settings": ["limit=2", "limit=2, k=3"]}
    )
    assert report.like_with_like(cog) == "Not like with like: their settings differ (a: limit=2; b: limit=2, k=3)."


def test_floating_point_noise_of_zero_shows_as_zero() -> None:
    # a random baseline of −2.75e-18 (cog_l1's anchoring test: uniform-choice terms that cancel up to rounding):
    # the CSV keeps it, the shown table says 0
    cog = report.tables([model("m", [0.5, 1.0])])["cognitive"]
    cog.loc[0, "random_baseline"] = -2.75e-18
    shown = report.shown(cog).iloc[0]
    assert shown["random_baseline"] == 0.0 and str(shown["random_baseline"]) == "0.0"  # not −0.0
    assert shown["score"] == 0.75 and pd.notna(shown["t"]) and pd.isna(shown["expected_score"])  # others kept
    assert "settings" not in shown and cog.loc[0, "random_baseline"] == -2.75e-18
