"""The wrapped multiple-choice family's summary and report rows say why a number or CI of a computed
condition is n/a (hand-built records, no harness run)."""

from __future__ import annotations

import math

import pandas as pd

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
