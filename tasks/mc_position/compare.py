"""The wrapped multiple-choice family's part of `biasmonkey compare`: per-item values of one run's records.

Per item, as `scoring.summarize` computes the task's numbers, raw and after each correction that
the run's records allow (PriDe, contextual calibration, Specific; a correction's items only):
accuracy in the original order (McNemar), accuracy over the item's orders (paired t-test), whether
its chosen option changed between orders (McNemar), and RStd, a statistic of the whole task, with a
paired bootstrap that redraws the items (with all their orders) jointly for both runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from biasmonkey.metrics.position_bias import (
    NotComputable,
    contextual_correction,
    item_features,
    metrics_from_sums,
    pride_correction,
    recall_option_count,
    specific_correction,
)
from biasmonkey.tasks.contract import ItemMeasure
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.scoring import PositionRecord, position_items, summarize

# The options that change what is asked or scored: runs differing in them are compared only with --allow-settings.
PROMPT_SETTINGS = frozenset({"permutations", "permutation_seed", "letter_spellings"})


def item_ids(records: Sequence[PositionRecord]) -> list[str]:
    return list(dict.fromkeys(r.id for r in records if r.kind == "item"))


def _rstd(m: int) -> Callable[[np.ndarray], np.ndarray]:
    """RStd per resample from the items' feature rows (resamples, items, features) → (resamples,)."""
    return lambda values: metrics_from_sums(values.sum(axis=1), values.shape[1], m)["rstd"]


def item_measures(task: str, records: Sequence[PositionRecord], options: Any = None) -> list[ItemMeasure]:
    """Accuracy, accuracy over orders, changed answers and RStd per condition the records allow."""
    options = options if isinstance(options, PositionOptions) else PositionOptions()
    items, content_free = position_items(records)
    if not items:
        return []
    m = max(it.n for it in items)
    sides = {"": (items, [it.logprobs for it in items])}
    corrections = {
        "_pride": lambda: pride_correction(items, options.pride_share, options.pride_seed),
        "_contextual": lambda: contextual_correction(items, content_free),
        "_specific": lambda: specific_correction(items, options.k, options.seed),
    }
    for suffix, correct in corrections.items():
        try:
            scored = correct().scored_items(items)
        except NotComputable:
            continue
        if scored[0]:
            sides[suffix] = scored
    recall_n = recall_option_count(items)  # raw's, for every correction, as `summarize` takes it
    measures = []
    for suffix, (chosen, rows) in sides.items():
        features = item_features(chosen, rows, m, recall_n)
        ids = [it.id for it in chosen]
        several = [k for k, it in enumerate(chosen) if len(it.shifts) > 1]
        measures += [
            ItemMeasure(f"rstd{suffix}", dict(zip(ids, features)), "bootstrap", _rstd(m), headline=not suffix),
            ItemMeasure(f"accuracy{suffix}", dict(zip(ids, features[:, 0])), "mcnemar"),
            ItemMeasure(f"accuracy_permuted{suffix}", dict(zip(ids, features[:, 1])), "t"),
            ItemMeasure(f"changed{suffix}", {ids[k]: features[k, 3] for k in several}, "mcnemar"),
        ]
    return measures


def unit_biases(records: dict[str, Sequence[PositionRecord]], correction: str = "base", **options: Any) -> dict:
    """{task: {task: RStd}}: one unit per wrapped task (`correction` "pride", "contextual", "specific")."""
    condition = "raw" if correction == "base" else correction
    return {
        task: {task: float(summarize(items, PositionOptions(resamples=1)).conditions[condition].rstd)}
        for task, items in sorted(records.items())
    }
