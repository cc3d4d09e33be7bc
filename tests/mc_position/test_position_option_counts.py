"""Items with different option counts: the recalls and RStd are over the items of one option count
(the most common; on a tie the larger), the others left out of them and counted in the summary notes
and the report's warnings (hand-built records, no harness run)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from position_fixtures import OneTaskModel

from biasmonkey.tasks.mc_position import report
from biasmonkey.tasks.mc_position.compare import item_measures
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.scoring import score_document, summarize
from biasmonkey.tasks.mc_position.summary import summary_table

OPTIONS = PositionOptions(resamples=50)
WHY = "recalls of different option counts are not comparable: without preference each of n positions gets 1/n"


def record(item: str, n: int, gold: int, shift: int, letters: list[float] | None = None):
    letters = [0.0] * n if letters is None else letters  # default: every letter tied
    return score_document({"id": item, "kind": "item", "n": n, "gold": gold, "shift": shift}, letters)


def tied(first: int, n: int, count: int) -> list:
    """`count` n-option items (t-first, …), gold option i mod n, in all n cyclic orders, every letter tied."""
    return [record(f"t-{first + i}", n, i % n, s) for i in range(count) for s in range(n)]


def test_a_model_without_preference_shows_no_bias_over_mixed_option_counts() -> None:
    # 4 three-option and 4 four-option items, every letter tied: each row gives each letter 1/n.
    # Pooled, positions A–C got (1/3 + 1/4)/2 = 7/24 = .2917 and D 1/4: RStd .018 with no bias.
    # Now a tie of counts goes to the larger: the 4-option items only, every recall 1/4 → RStd 0.
    records = tied(0, 3, 4) + tied(4, 4, 4)
    raw = summarize(records, OPTIONS).conditions["raw"]
    assert raw.recalls == pytest.approx((0.25,) * 4) and raw.rstd == 0.0 and raw.rstd_original == 0.0
    # accuracy over orders stays over all 8 items: (4 · 1/3 + 4 · 1/4) / 8 = 7/24
    assert raw.n_items == 8 and raw.accuracy_permuted == pytest.approx(7 / 24)
    note = (
        "recalls and RStd over the 4 items with 4 options only (the most common option count, on a tie the "
        f"larger); left out of them: 4 items with 3 options ({WHY})"
    )
    assert raw.notes["recalls"] == note
    assert any(n.startswith(f"position_t, raw: {note}") for n in summary_table([records], [OPTIONS]).notes)
    (warning,) = [w for w in report.warnings([OneTaskModel(records)], {}) if w["warning"] == "option counts differ"]
    assert warning["detail"] == note


def test_the_most_common_option_count_gives_the_recalls() -> None:
    # 5 three-option items and 3 four-option ones, tied: recalls over the 3-option items, 1/3 each
    # (position D, no 3-option item's, has none) → RStd 0
    raw = summarize(tied(0, 3, 5) + tied(5, 4, 3), OPTIONS).conditions["raw"]
    assert raw.recalls[:3] == pytest.approx((1 / 3,) * 3) and math.isnan(raw.recalls[3]) and raw.rstd == 0.0
    assert raw.notes["recalls"].startswith("recalls and RStd over the 5 items with 3 options only (")
    assert "left out of them: 3 items with 4 options (" in raw.notes["recalls"]


def test_a_correction_without_the_tasks_option_count_has_no_rstd() -> None:
    # contextual calibration with a content-free prompt for 3 options only scores the 3-option items;
    # raw's recalls are over the 4-option items (a tie: the larger count), so the corrected RStd,
    # over other items, would not compare like with like: n/a and why
    content_free = [
        score_document({"id": "content_free_3", "kind": "content_free", "n": 3, "gold": -1, "shift": 0}, [0.0] * 3)
    ]
    s = summarize(tied(0, 3, 4) + tied(4, 4, 4) + content_free, OPTIONS)
    contextual = s.conditions["contextual"]
    assert contextual.n_items == 4 and contextual.left_out == {"no_content_free": 4}
    assert math.isnan(contextual.rstd) and math.isnan(contextual.rstd_original)
    assert contextual.notes == {
        "recalls": f"recalls and RStd n/a: no item with 4 options, the task's most common option count "
        f"(4 items with 3 options; {WHY})"
    }
    assert math.isnan(s.delta_pct["contextual"]["rstd"])


def test_one_option_count_has_no_note() -> None:
    records = tied(0, 4, 4)
    assert "recalls" not in summarize(records, OPTIONS).conditions["raw"].notes
    assert not [w for w in report.warnings([OneTaskModel(records)], {}) if w["warning"] == "option counts differ"]


def test_compare_takes_the_recalls_over_raws_option_count_as_the_summary_does() -> None:
    """A correction scoring only the 3-option items (contextual: a content-free document of 3 options
    only) has recalls and RStd n/a where raw's count is 4, in the summary; `compare`'s per-item values
    give the same (they used to take the correction's own count, 3, and an RStd of 0)."""
    free = score_document({"id": "content_free_3", "kind": "content_free", "n": 3, "gold": -1, "shift": 0}, [0.0] * 3)
    records = [free, *tied(0, 3, 2), *tied(2, 4, 4)]  # raw: 4 items with 4 options, 2 with 3 → count 4
    summary = summarize(records, OPTIONS).conditions["contextual"]
    assert math.isnan(summary.rstd)
    (rstd,) = [m for m in item_measures("biasmonkey_position_t", records) if m.name == "rstd_contextual"]
    assert len(rstd.values) == 2  # the two 3-option items
    assert math.isnan(float(rstd.statistic(np.stack(list(rstd.values.values()))[None])[0]))
