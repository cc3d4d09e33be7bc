"""The cognitive family's part of `biasmonkey compare`: per-test scores of one run's records.

A test's value is its score m (None: the test failed, left out and counted); records of several
Inspect epochs of one test give the mean of their scores. Two runs are compared by the paired
t-test (95% CI, d_z) and the Wilcoxon signed-rank test: m takes few distinct values, so the
rank test, free of the normality assumption, is reported beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from biasmonkey.tasks.cognitive.scoring import CognitiveRecord, summarize_records
from biasmonkey.tasks.contract import ItemMeasure

# Run options that change the prompts or which option order a test is shown in.
PROMPT_SETTINGS = frozenset({"prompts", "protocol", "reverse_options", "reversal", "seed", "decisions"})


def item_ids(records: Sequence[CognitiveRecord]) -> list[str]:
    return list(dict.fromkeys(r.id for r in records))


def scores_per_test(records: Sequence[CognitiveRecord]) -> dict[str, float | None]:
    """Per test: its score, the mean over its epochs' scores, None where every epoch failed."""
    scores: dict[str, list[float]] = {}
    for r in records:
        scores.setdefault(r.id, [])
        if r.score is not None:
            scores[r.id].append(r.score)
    return {i: float(np.mean(s)) if s else None for i, s in scores.items()}


def item_measures(task: str, records: Sequence[CognitiveRecord], options: Any = None) -> list[ItemMeasure]:
    return [ItemMeasure("score", scores_per_test(records), "t", wilcoxon=True, headline=True)]


def unit_biases(records: Mapping[str, Sequence[CognitiveRecord]], **options: Any) -> dict[str, dict[str, float]]:
    """{task: {task: mean score}}: one unit per bias."""
    return {task: {task: summarize_records(items).score.mean} for task, items in sorted(records.items())}
