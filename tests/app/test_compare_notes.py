"""`biasmonkey compare`: every n/a says why and every count says what it counts, on hand-made runs
(numbers by hand in the comments): a statistic undefined in a run, items left out without a value
(a yes-no item without a Specific answer), the model-pairs rows with too few units, the settings
that differ in the pairs form, and the output's details (heading order, resamples, CSV, a pair with
no task in common)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from records import pair, yesno_item
from test_compare_undefined import ACQ, ALGEBRA, mcq, rows_by, run

from biasmonkey.harness_ext.app.compare import compare_pairs, item_rows
from biasmonkey.harness_ext.app.compare_output import markdown, write_outputs
from biasmonkey.harness_ext.app.compare_pairs import pair_effects

COMPS = "biasmonkey_yesno_comps"


def test_a_statistic_undefined_in_the_runs_says_so() -> None:
    # 4 questions of gold B, B, C, D: no question has the gold letter A, so each run's RStd (the SD of the four
    # letter recalls) is undefined, and so are B − A, CI and p. The note gave only the consequence ("only 0 of
    # 2000 resamples … under 90%"); it now names the runs whose value is n/a and why.
    a = run("A", {ALGEBRA: mcq("abstract_algebra", "BBCD", "BBCD")})
    b = run("B", {ALGEBRA: mcq("abstract_algebra", "BBCD", "AAAA")})
    rows, notes = item_rows([(a, b)], common_items=False)
    rstd = rows_by(rows, ALGEBRA)["rstd"]
    assert math.isnan(rstd["value_a"]) and math.isnan(rstd["value_b"]) and math.isnan(rstd["p"])
    assert rstd["note"] == (
        "A and B n/a: rstd is undefined on the 4 items compared (the run's summary says why), "
        "so the difference, CI and p are n/a"
    )
    assert f"A vs B: {ALGEBRA} rstd: {rstd['note']}" in notes


def test_items_without_a_value_are_counted_in_the_note() -> None:
    # Acquiescence Δ: A 1, 2, 3; B 2, none, 5. Item K1 has no Δ in B: left out, n = 2 (B − A = 1, 2: a defined
    # t-test), and the note counts it (it said nothing).
    a = run("A", {ACQ: [pair(f"K{i}", "bias", d) for i, d in enumerate([1, 2, 3])]})
    b = run("B", {ACQ: [pair(f"K{i}", "bias", d) for i, d in enumerate([2, None, 5])]})
    delta = rows_by(item_rows([(a, b)], common_items=False)[0], ACQ)["delta"]
    assert (delta["n"], delta["left_out"], delta["difference"]) == (2, 1, pytest.approx(1.5))
    assert delta["note"] == "1 of 3 items left out, no delta value in both runs (without one: A 0, B 1)"


def test_a_yes_no_item_without_a_specific_answer_is_left_out_of_accuracy_specific() -> None:
    # One COMPS item (gold Yes; yes −1 > no −2: vote +1, right): too few items for a Specific fold, so it has no
    # Specific answer in either run. abs_bias_specific had n 0, but accuracy_specific counted the item as wrong
    # (n 1, 0.000 vs 0.000, "no item that one run got right and the other wrong"). Now both leave it out (n 0).
    a, b = (run(name, {COMPS: [yesno_item(0, "Yes", -1.0, -2.0)]}) for name in ("A", "B"))
    measures = rows_by(item_rows([(a, b)], common_items=False)[0], COMPS)
    assert (measures["accuracy"]["n"], measures["accuracy"]["value_a"]) == (1, 1.0)  # the uncorrected answer counts
    for name in ("abs_bias_specific", "accuracy_specific"):
        row = measures[name]
        assert (row["n"], row["left_out"]) == (0, 1) and math.isnan(row["value_a"])
        assert row["note"] == (
            f"no item with a value in both runs: 1 of 1 items left out, no {name} value in both runs "
            "(without one: A 1, B 1)"
        )


def test_model_pairs_rows_say_why_d_and_p_are_na() -> None:
    # Row "one": one pair, |b| 0.5 → 0.2: one unit, no t-test. Row "none": A's bias NaN: no unit, 1 undefined.
    # Row "same": two pairs, each |b| 0.5 → 0.2 (change −0.3 twice): no spread.
    nan = math.nan
    first = (
        {"one": {"u": 0.5}, "none": {"u": nan}, "same": {"u": 0.5}},
        {"one": {"u": 0.2}, "none": {"u": 0.1}, "same": {"u": 0.2}},
    )
    second = (
        {"one": {"u": nan}, "none": {"u": nan}, "same": {"u": 0.5}},
        {"one": {"u": 0.3}, "none": {"u": 0.1}, "same": {"u": 0.2}},
    )
    rows, left = pair_effects([first, second], "task")
    by = {r["task"]: r for r in rows}
    assert (by["one"]["n"], by["one"]["undefined_units"]) == (1, 1) and math.isnan(by["one"]["p_value"])
    assert by["one"]["note"] == (
        "d and p n/a: 1 unit with a bias in both runs (a t-test needs 2); 1 unit left out: a run's bias is n/a on its items"
    )
    assert (by["none"]["n"], by["none"]["undefined_units"]) == (0, 2)
    assert by["none"]["note"] == (
        "d and p n/a: 0 units with a bias in both runs (a t-test needs 2); 2 units left out: a run's bias is n/a on its items"
    )
    assert by["same"]["n"] == 2 and by["same"]["note"] == "d and p n/a: no spread (every unit's change is the same)"
    # the markdown shows the units left out and the notes (it showed neither)
    result = compare_pairs([], [{"family": "yesno"} | r for r in rows], [], "pairs", "holm")
    result.pairs = [{"a": "A", "b": "B", "differing_settings": ""}]
    md = markdown(result)
    assert "| family | task | units | units n/a |" in md and "| yesno | none | 0 | 2 | n/a |" in md
    assert f"- yesno one: {by['one']['note']}" in md and f"- yesno same: {by['same']['note']}" in md


def test_model_pairs_markdown_names_the_settings_that_differ() -> None:
    rows, _ = pair_effects([({"t": {"u": 0.5}}, {"t": {"u": 0.2}}), ({"t": {"u": 0.4}}, {"t": {"u": 0.3}})], "task")
    result = compare_pairs([], [{"family": "yesno"} | r for r in rows], [], "pairs", "holm")
    result.pairs = [
        {"a": "C", "b": "B", "differing_settings": ""},
        {"a": "A", "b": "F", "differing_settings": "limit (2 vs 4)"},
    ]
    assert "Settings that differ (A vs B): A → F: limit (2 vs 4)." in markdown(result)


def test_output_heading_resamples_csv_and_a_pair_without_common_task(tmp_path: Path) -> None:
    # A, B: one COMPS item each (a bootstrap of 1 item draws nothing) and acquiescence Δ 1, 2, 3 vs 2, 2, 5 (the
    # run rows' p is NaN); C has a cognitive task only: the pairs A–C and B–C have no task in common.
    comps = {COMPS: [yesno_item(0, "Yes", -1.0, -2.0)]}
    a = run("A", comps | {ACQ: [pair(f"K{i}", "bias", d) for i, d in enumerate([1, 2, 3])]})
    b = run("B", comps | {ACQ: [pair(f"K{i}", "bias", d) for i, d in enumerate([2, 2, 5])]})
    c = run("C", {"biasmonkey_cognitive_anchoring": []})
    pairs = [(a, b), (a, c)]
    rows, notes = item_rows(pairs, common_items=False)
    result = compare_pairs(pairs, rows, notes, "items", "holm")
    md = markdown(result)
    # (a) the heading in the columns' order, A then B (it was "## B vs A")
    assert "## A vs B" in md and "## B vs A" not in md
    # (b) 1 item: no resample drawn, n/a (it printed 0)
    assert rows_by(rows, COMPS)["abs_bias"]["resamples"] == 0
    assert (
        "| yesno | biasmonkey_yesno_comps | abs_bias | 1 | 1.000 | 1.000 | 0.000 | n/a | paired bootstrap (2000 resamples, seed 0) | n/a |"
        in md
    )
    # (d) the pair with no task in common says so (it printed an empty table)
    assert md.split("## A vs C\n")[1].startswith("\nNo task in common: nothing compared for this pair.\n")
    # (c) the CSV: p and p_adjusted of a "(run)" row empty, as other missing values (they were "nan")
    write_outputs(result, tmp_path)
    saved = [r for r in csv.DictReader((tmp_path / "compare.csv").open()) if r["task"] == "(run)"]
    assert saved and all((r["p"], r["p_adjusted"], r["significant"]) == ("", "", "") for r in saved)
