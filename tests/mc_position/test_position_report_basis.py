"""The wrapped multiple-choice family's report says what its numbers are over: the headline title
names each entry's items, the verdict the items of a correction scored on fewer, and the table the
items a correction left out, in words (hand-built records, no harness run)."""

from __future__ import annotations

import pytest

from biasmonkey.harness_ext.app.report import verdict
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.app.report.tables import build_tables
from biasmonkey.tasks.families import POSITION
from biasmonkey.tasks.mc_position import report
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.scoring import score_document

TASK = "biasmonkey_position_t"
DIFFER = "items or settings differ between entries (the section's notes say how)"


def record(item: str, gold: int, shift: int):
    return score_document({"id": item, "kind": "item", "n": 2, "gold": gold, "shift": shift}, [0.0, -1.0])


# four 2-option items (gold option 0, 1, 0, 1), each asked in both orders and always answered A:
# raw scores 4 items; PriDe calibrates on 1 of them (5% share, at least 1) and scores 3; no content-free
# prompt → contextual none; 4 items cannot fill Specific's folds balanced across letters → none ("unbalanced: 4")
RECORDS = [record(f"t-{i}", i % 2, shift) for i in range(4) for shift in (0, 1)]


def model(name: str, records: list) -> ModelResults:
    m = ModelResults(name=name, model=name)
    m.records[POSITION.name][TASK] = records
    return m


def test_the_verdict_counts_the_items_of_each_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PositionOptions, "of_run", classmethod(lambda cls, m, task: PositionOptions(resamples=20)))
    m = model("a", RECORDS)
    tables = report.tables([m])
    row = {"model": "a", **report.summary(m, tables)}
    assert (row["position_items"], row["position_items_pride"]) == (4, 3)
    assert (row["position_items_contextual"], row["position_items_specific"]) == (0, 0)
    # recalls: A 1 (every gold-at-A row answered A), B 0 → RStd 0.5 raw
    sentence = report.summary_sentence(row)
    assert "0.500 raw; after correction PriDe " in sentence
    assert "(over 3 items), contextual n/a (no item scored), Specific n/a (no item scored)" in sentence
    assert sentence.endswith("(this run: 4 items).")


def test_the_headline_title_names_each_entrys_items(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PositionOptions, "of_run", classmethod(lambda cls, m, task: PositionOptions(resamples=20)))
    tables = report.tables([model("a", RECORDS), model("b", RECORDS[:6])])  # b: the first 3 items
    assert report.basis(tables["position"]) == f"a: 4 items; b: 3 items; {DIFFER}"
    assert report.headline(tables).title.endswith(f"; over a: 4 items; b: 3 items; {DIFFER}")
    same = report.tables([model("a", RECORDS), model("b", RECORDS)])["position"]
    assert report.basis(same) == "4 items"  # the same items, no settings recorded: one basis, nothing differs


def test_the_items_left_out_are_in_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PositionOptions, "of_run", classmethod(lambda cls, m, task: PositionOptions(resamples=20)))
    shown = report.shown_table(report.tables([model("a", RECORDS)])["position"]).set_index("condition")
    assert shown.loc["Specific", "left out / why"] == (
        "no numbers: no item scored: too few items per correct letter (2 options: A 2, B 2) for k − 1 = 4 balanced "
        "folds, which need at least 4 of each (left out: 4 items unbalanced across correct letters)"
    )
    assert shown.loc["PriDe", "left out / why"].startswith("left out: 1 item used for PriDe's calibration")
    assert report.left_out_words("unbalanced: 15; calibration: 1") == (
        "15 items unbalanced across correct letters, 1 item used for PriDe's calibration"
    )


def test_a_report_without_tests_says_no_tests() -> None:
    tables = build_tables([model("a", RECORDS)])
    assert (
        "Holm over the report's family of 0 tests (no tests of your models)"
        in verdict(tables, [model("a", RECORDS)])[0]
    )
