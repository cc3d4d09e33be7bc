"""The yes-no family's part of `biasmonkey compare`: per-item values of one run's records.

Per item, as `scoring.summarize` computes the task's numbers: the vote (+1 Yes, −1 No, 0 tie) and
its correctness (1, 0, ½ for a tie) before correction and after the Generic and the Specific
correction. An item in no Specific fold has no corrected answer: it has neither a Specific vote nor
a Specific correctness, so both measures leave it out and count it (the family's accuracy_specific
counts it as wrong instead, the authors' convention: a paired test of an answer that does not exist
would compare nothing). A run's bias is the mean vote; the comparison's bias measure is its magnitude |bias|
(either sign is a bias), compared with a paired bootstrap; accuracy with McNemar's test.
The corrections are computed on each run's own items, as the run's summary computes them.

Published models (`biasmonkey compare --published yesno[:PROMPT|SET,…]`, no RUN): the authors' released
per-model results give, per prompt type and set, each model's bias per domain (`published.published_biases`),
and the command prints their Table 1 in the model-pairs form, the authors' eight base/instruct pairs by
default. They are summaries, not per-item answers, so this family has no `published_records`: a run
cannot be paired with them item by item.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from biasmonkey.metrics.yesno import correctness, generic_correction, specific_correction, votes
from biasmonkey.tasks.contract import ItemMeasure, PublishedBiases, base_task_name
from biasmonkey.tasks.yesno.family import FAMILY
from biasmonkey.tasks.yesno.scoring import (
    K_FOLDS,
    SEED,
    TIES,
    ItemRecord,
    caveats,
    file_position,
    null_answer_logprobs,
    specific_folds,
    summarize,
)

CORRECTIONS = {"base": "bias", "generic": "bias_generic", "specific": "bias_specific"}  # the family's bias names
SUFFIX = {"base": "", "generic": "_generic", "specific": "_specific"}
PROMPT_SETTINGS = frozenset({"null_prompt"})  # the no-context prompt of the Generic correction
PAIR_UNIT = "domain"  # the model-pairs form's units: one per set, and per domain for EWoK (the authors')


def abs_mean(values: np.ndarray) -> np.ndarray:
    """|bias| per resample: the magnitude of the mean vote over the items with one (axis 1)."""
    with np.errstate(invalid="ignore"):
        counted = np.isfinite(values).sum(axis=1)
        total = np.where(np.isfinite(values), values, 0.0).sum(axis=1)
        return np.abs(np.where(counted > 0, total / np.maximum(counted, 1), math.nan))


def item_votes(records: Sequence[ItemRecord], k: int = K_FOLDS, seed: int = SEED) -> dict[str, dict[str, np.ndarray]]:
    """{correction: {"ids", "votes", "correct"}} per item in file order; votes NaN where an item has
    no corrected answer (Specific: in no fold); no "generic" entry without no-context log-probabilities."""
    ordered = sorted(records, key=file_position)
    ids = np.array([r.id for r in ordered])
    y, n = np.array([r.yes for r in ordered]), np.array([r.no for r in ordered])
    gold = np.array([r.gold_yes for r in ordered])
    sides = {"base": (y, n)}
    if (null := null_answer_logprobs(ordered)) is not None:
        sides["generic"] = generic_correction(y, n, *null)
    groups = [(r.dataset, r.domain or "") for r in ordered]
    sides["specific"] = specific_correction(y, n, specific_folds(ordered, k, seed), groups)
    found = {}
    for name, (yy, nn) in sides.items():
        answered = ~np.isnan(yy)
        v = np.where(answered, votes(np.nan_to_num(yy), np.nan_to_num(nn)), math.nan)
        found[name] = {"ids": ids, "votes": v, "correct": np.where(answered, correctness(v, gold), 0.0)}
    return found


def item_ids(records: Sequence[ItemRecord]) -> list[str]:
    return [r.id for r in records]


def item_measures(task: str, records: Sequence[ItemRecord], options: Any = None) -> list[ItemMeasure]:
    """|bias| (paired bootstrap) and accuracy (McNemar) before and after each correction."""
    k, seed = getattr(options, "k", K_FOLDS), getattr(options, "seed", SEED)
    measures = []
    for correction, item in item_votes(records, k, seed).items():
        suffix = SUFFIX[correction]
        answered = ~np.isnan(item["votes"])
        bias = {i: float(v) if ok else None for i, v, ok in zip(item["ids"], item["votes"], answered)}
        correct = {i: float(c) if ok else None for i, c, ok in zip(item["ids"], item["correct"], answered)}
        measures += [
            ItemMeasure(f"abs_bias{suffix}", bias, "bootstrap", abs_mean, headline=correction == "base"),
            ItemMeasure(f"accuracy{suffix}", correct, "mcnemar"),
        ]
    return measures


def _bias(records: Sequence[ItemRecord], correction: str) -> float:
    return float(getattr(summarize(records), CORRECTIONS[correction]))


def unit_biases(
    records: Mapping[str, Sequence[ItemRecord]], correction: str = "base", unit: str = "domain"
) -> dict[str, dict[str, float]]:
    """{row: {unit: bias}} of one run's yes-no tasks ({task: records}). unit "task": every task is
    its own row and unit; unit "domain": the EWoK tasks' units are their domains, the per-domain
    tasks are left out (their items are the EWoK task's), every other set is one unit."""
    rows: dict[str, dict[str, float]] = {}
    for task, items in sorted(records.items()):
        if unit == "task" or items[0].dataset != "ewok":
            rows[task] = {task: _bias(items, correction)}
        elif not FAMILY.tasks.get(base_task_name(task), {}).get("domain"):
            # (a per-domain task is skipped: its name says so; a --limit run may hold one domain only)
            by_domain: dict[str, list[ItemRecord]] = defaultdict(list)
            for r in items:
                by_domain[str(r.domain)].append(r)
            rows[task] = {domain: _bias(group, correction) for domain, group in sorted(by_domain.items())}
    return rows


def bias_caveats(records: Mapping[str, Sequence[ItemRecord]], correction: str = "base") -> list[str]:
    """What qualifies one run's biases of `unit_biases` ({task: records}), one line per task and
    caveat (`scoring.caveats`): exact ties, which every correction starts from, and for the Specific
    bias the items without a Specific answer, why it is undefined and gold classes smaller than k."""
    return [
        f"{task}: {detail}"
        for task, items in sorted(records.items())
        for warning, detail in caveats(summarize(items))
        if warning == TIES or correction == "specific"
    ]


def published_biases(selection: Sequence[str] = ()) -> PublishedBiases:
    """The authors' models' biases per (set, prompt type) row and domain, and their eight pairs
    (`published.published_biases`; `selection`: prompt types and/or sets, all by default)."""
    from biasmonkey.tasks.yesno.published import published_biases as read

    return read(selection)
