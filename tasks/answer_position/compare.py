"""The answer-position family's part of `biasmonkey compare`: per-question values of one run's records.

Per question, as `scoring.summarize` computes the subject's numbers: its gold letter and the
answer's share of each letter (1 for the most likely letter, 1/j each in a tie of j), before and
after the Specific correction (where the subject has balanced folds). Accuracy (the gold letter's
share) is compared with McNemar's test; RStd, the SD of the four letter recalls, a statistic of the
whole subject, with a paired bootstrap that redraws the questions jointly for both runs.

Overall (`overall_measures`): per prompt type with two or more subjects, one row pooling them, as
the family's report averages its subjects: accuracy over every question (McNemar), and the mean of
the subjects' RStd, each computed on its own subject's questions (and Specific correction), with a
paired bootstrap that redraws the questions within each subject (docs/compare.md says why).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

import numpy as np

from biasmonkey.metrics.answer_position import (
    LETTERS,
    balanced_mcq_folds,
    mcq_answers,
    mcq_specific_correction,
)
from biasmonkey.tasks.answer_position.family import FAMILY
from biasmonkey.tasks.answer_position.scoring import K_FOLDS, SEED, McqRecord, file_row, summarize
from biasmonkey.tasks.contract import ItemMeasure, base_task_name

PROMPT_SETTINGS: frozenset[str] = frozenset()  # k and seed change the correction, not the prompts


def rstd_statistic(values: np.ndarray) -> np.ndarray:
    """RStd per resample from rows (gold letter index, answer share per letter): values of shape
    (resamples, questions, 1 + letters) → (resamples,); NaN where a letter is no drawn question's answer."""
    gold, shares = values[..., 0].astype(int), values[..., 1:]
    recalls = []
    for j in range(shares.shape[-1]):
        mask = gold == j
        with np.errstate(invalid="ignore", divide="ignore"):
            recalls.append((shares[..., j] * mask).sum(axis=1) / mask.sum(axis=1))
    return np.std(np.stack(recalls, axis=-1), axis=-1)  # population SD (ddof 0), as the family's RStd


def mean_subject_rstd(values: np.ndarray) -> np.ndarray:
    """The mean over subjects of their RStd, per resample: rows (subject index, gold letter index,
    answer share per letter) of shape (resamples, questions, 2 + letters) → (resamples,); NaN where a
    subject's RStd is (as the family's mean over subjects)."""
    subject = values[..., 0]
    rest = values[..., 1:]
    per_subject = []
    for s in np.unique(subject[0]):
        own = rest.copy()
        own[..., 0] = np.where(subject == s, rest[..., 0], -1)  # another subject's question: no letter's
        per_subject.append(rstd_statistic(own))
    return np.mean(per_subject, axis=0)


def overall_measures(
    records: Mapping[str, Sequence[McqRecord]], options: Mapping[str, Any]
) -> dict[str, list[ItemMeasure]]:
    """{row: measures} pooling the subjects of each prompt type run with two or more subjects; items
    are (task, question id), their stratum the task. A measure enters a row only where every subject
    has it (e.g. Specific needs balanced folds in each)."""
    by_prompt: dict[str, list[str]] = defaultdict(list)
    for task in records:
        by_prompt[FAMILY.tasks[base_task_name(task) or task]["prompt"]].append(task)
    rows = {}
    for prompt, tasks in by_prompt.items():
        if len(tasks) < 2:
            continue
        per_task = {t: {m.name: m for m in item_measures(t, records[t], options.get(t))} for t in tasks}
        names = [n for n in per_task[tasks[0]] if all(n in measures for measures in per_task.values())]
        strata = {(t, i): t for t in tasks for i in per_task[t][names[0]].values} if names else {}
        measures = []
        for name in names:
            first = per_task[tasks[0]][name]
            if first.test == "bootstrap":  # RStd: the subject's index before each question's row
                values = {
                    (t, i): np.concatenate([[k], v])
                    for k, t in enumerate(tasks)
                    for i, v in per_task[t][name].values.items()
                }
                statistic = mean_subject_rstd
            else:
                values = {(t, i): v for t in tasks for i, v in per_task[t][name].values.items()}
                statistic = first.statistic
            measures.append(ItemMeasure(name, values, first.test, statistic, headline=first.headline, strata=strata))
        rows[f"all {len(tasks)} subjects ({prompt})"] = measures
    return rows


def item_ids(records: Sequence[McqRecord]) -> list[str]:
    return [r.id for r in records]


def item_measures(task: str, records: Sequence[McqRecord], options: Any = None) -> list[ItemMeasure]:
    """Accuracy (McNemar) and RStd (paired bootstrap), before and after the Specific correction."""
    k, seed = getattr(options, "k", K_FOLDS), getattr(options, "seed", SEED)
    ordered = sorted(records, key=file_row)
    ids = [r.id for r in ordered]
    letters = np.array([r.letters for r in ordered]).reshape(-1, len(LETTERS))
    gold = [r.gold for r in ordered]
    sides = {"": letters}
    with suppress(ValueError):  # too few questions of some letter for balanced folds (e.g. a --limit run)
        sides["_specific"] = mcq_specific_correction(letters, balanced_mcq_folds(gold, k, seed))
    gold_index = np.array([LETTERS.index(g) for g in gold], dtype=float)
    measures = []
    for suffix, lp in sides.items():
        shares = mcq_answers(lp)
        rows = np.column_stack([gold_index, shares])
        correct = shares[np.arange(len(ids)), gold_index.astype(int)]
        measures += [
            ItemMeasure(f"rstd{suffix}", dict(zip(ids, rows)), "bootstrap", rstd_statistic, headline=not suffix),
            ItemMeasure(f"accuracy{suffix}", dict(zip(ids, map(float, correct))), "mcnemar"),
        ]
    return measures


def unit_biases(
    records: Mapping[str, Sequence[McqRecord]], correction: str = "base", **options: Any
) -> dict[str, dict[str, float]]:
    """{task: {task: RStd}}: one unit per subject and prompt type (`correction` "specific": after Specific)."""
    field = "rstd_specific" if correction == "specific" else "rstd"
    return {task: {task: float(getattr(summarize(items), field))} for task, items in sorted(records.items())}
