"""The wrapped multiple-choice family's summary and report rows say why a number or CI of a computed
condition is n/a (hand-built records, no harness run)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from position_fixtures import OneTaskModel

from biasmonkey.tasks.mc_position import report
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.report import shown_table
from biasmonkey.tasks.mc_position.scoring import score_document, summarize
from biasmonkey.tasks.mc_position.summary import condition_rows, summary_table

OPTIONS = PositionOptions(resamples=50)
RSTD_NOTE = (
    "rstd n/a: no row has its correct option at positions B, C (RStd needs a recall for every position the items have)"
)
RSTD_ORIGINAL_NOTE = (
    "rstd_original n/a: no item has its correct option at positions B, C in the original order "
    "(RStd needs a recall for every position the items have)"
)
CHANGED_NOTE = "changed n/a: no item asked in 2 or more orders"


def record(item: str, gold: int, shift: int, letters: list[float]):
    return score_document({"id": item, "kind": "item", "n": len(letters), "gold": gold, "shift": shift}, letters)


def test_rstd_of_a_single_recall_is_na_with_its_reason() -> None:
    # four 3-option items in the original order only, gold option 0, always answered A: recall of A
    # 1, B and C never gold → the RStd (SD 0 of one recall before) is n/a, and the notes say why
    records = [record(f"t-{i}", 0, 0, [0.0, -1.0, -1.0]) for i in range(4)]
    table = summary_table([records], run_options=[OPTIONS])
    raw = table.rows[0]
    assert (raw["condition"], raw["n_items"], raw["accuracy"]) == ("raw", 4, 1.0)
    assert all(math.isnan(raw[k]) for k in ("rstd", "rstd_ci_low", "rstd_ci_high", "rstd_original", "changed"))
    assert raw["notes"] == f"{RSTD_NOTE}; {RSTD_ORIGINAL_NOTE}; {CHANGED_NOTE}"
    assert f"position_t, raw: {RSTD_NOTE}; {RSTD_ORIGINAL_NOTE}; {CHANGED_NOTE}." in table.notes
    shown = shown_table(pd.DataFrame([{"model": "m", **row} for row in table.rows])).iloc[0]
    assert shown["RStd (all orders)"] == "–" and shown["accuracy"] == "1.000 [1.000, 1.000]"
    assert shown["left out / why"] == raw["notes"]


def test_one_item_has_numbers_without_cis() -> None:
    # one 2-option item in both orders, answered A in both: gold option 0 at A (s0, right) and at B
    # (s1, wrong) → accuracy 1, accuracy over orders 1/2, recalls (1, 0) → RStd .5; every bootstrap
    # resample is that item: no CIs, and the reason
    records = [record("t-0", 0, 0, [0.0, -1.0]), record("t-0", 0, 1, [0.0, -1.0])]
    (raw, *_) = condition_rows("position_t", summarize(records, OPTIONS))
    assert (raw["accuracy"], raw["accuracy_permuted"], raw["rstd"]) == (1.0, 0.5, 0.5)
    assert all(math.isnan(raw[f"{m}_ci_{side}"]) for m in ("accuracy", "rstd") for side in ("low", "high"))
    assert raw["notes"].endswith("no CIs: 1 item (a bootstrap over items needs at least 2)")
    shown = shown_table(pd.DataFrame([{"model": "m", **raw}])).iloc[0]
    assert shown["accuracy"] == "1.000" and "no CIs: 1 item" in shown["left out / why"]


def test_an_item_cut_short_is_counted_in_the_notes_and_warnings() -> None:
    # two 3-option items, gold option 0, always answered A; t-1 asked in 2 of its 3 orders (--limit).
    # t-0: gold at A, C, B under shifts 0, 1, 2 → right once: 1/3; t-1: gold at A, C → right once: 1/2.
    # accuracy over orders (1/3 + 1/2) / 2 = 5/12; recalls A 2/2, B 0/1, C 0/2 → (1, 0, 0): it is in them
    always_a = [0.0, -1.0, -1.0]
    records = [record("t-0", 0, s, always_a) for s in range(3)] + [record("t-1", 0, s, always_a) for s in range(2)]
    raw = summarize(records, OPTIONS).conditions["raw"]
    assert raw.accuracy_permuted == pytest.approx(5 / 12) and raw.recalls == (1.0, 0.0, 0.0)
    note = (
        "1 item asked in fewer orders than the run asks (t-1: 2 of 3; a run cut short, e.g. by --limit, which "
        "counts orders): scored on the orders asked, in accuracy over orders, the recalls, RStd and changed"
    )
    assert f"position_t: {note}" in summary_table([records], run_options=[OPTIONS]).notes
    (warning,) = [w for w in report.warnings([OneTaskModel(records)], {}) if w["warning"] == "items cut short"]
    assert warning["detail"] == note
    # every item in all its orders: no note
    assert not any("fewer orders" in n for n in summary_table([records[:3]], run_options=[OPTIONS]).notes)


def test_specific_without_balanced_folds_says_which_letters_are_short() -> None:
    # four 3-option items in the original order, gold A, A, B, C: k = 5 needs k − 1 = 4 gold items per
    # letter; A has 2, B 1, C 1 → no item scored, and the reason says so
    records = [record(f"t-{i}", g, 0, [0.0, -1.0, -1.0]) for i, g in enumerate((0, 0, 1, 2))]
    specific = summarize(records, OPTIONS).conditions["specific"]
    why = "too few items per correct letter (3 options: A 2, B 1, C 1) for k − 1 = 4 balanced folds, which need at least 4 of each"
    assert specific.reason == f"no item scored: {why} (left out: unbalanced: 4)"
    rows = condition_rows("position_t", summarize(records, OPTIONS))
    shown = shown_table(pd.DataFrame([{"model": "m", **row} for row in rows])).iloc[3]
    assert (
        shown["left out / why"]
        == f"no numbers: no item scored: {why} (left out: 4 items unbalanced across correct letters)"
    )
