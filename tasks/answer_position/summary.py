"""The answer-position family's table in `biasmonkey summarize` (`Family.summary_table`).

One row per MMLU task (subject and prompt type): every metric the task reports, under its name,
computed from the records, as the harnesses compute it (the family's metrics are the same in
both harnesses). Under the table, per task, why a number is n/a: RStd where some letter is never
the gold answer, the Specific numbers where some gold letter has fewer than k − 1 questions (no
balanced folds: a run on the first few questions of a subject, say) (`McqSummary.notes`), and
a letter's recall stderr where fewer than 2 questions have that gold letter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from biasmonkey.tasks.answer_position.options import AnswerPositionOptions
from biasmonkey.tasks.answer_position.prompts import LETTERS
from biasmonkey.tasks.answer_position.scoring import McqRecord, summarize
from biasmonkey.tasks.contract import HARNESSES, SummaryTable, base_task_name


def summary_table(
    records_per_task: Iterable[Sequence[McqRecord]],
    run_options: Sequence[Any] | None = None,
    *,
    tasks: Sequence[str],
    **_: Any,
) -> SummaryTable:
    """One row per task of its metrics, and the reasons of its n/a numbers as notes.

    `run_options`, where given: each task's `AnswerPositionOptions` (k and seed of the Specific
    folds), in the order of `records_per_task`; otherwise the defaults. `tasks`: each task's name,
    with or without the harness prefix (e.g. answer_position_anatomy_fewshot)."""
    from biasmonkey.tasks.answer_position.family import TASKS, metrics  # family.py imports this module

    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, (records, task) in enumerate(zip(records_per_task, tasks, strict=True)):
        records = list(records)
        given = run_options[i] if run_options is not None and i < len(run_options) else None
        options = given if isinstance(given, AnswerPositionOptions) else AnswerPositionOptions()
        name = base_task_name(task) or task
        reported = metrics(options, HARNESSES[0], **TASKS[name])
        rows.append({"task": task, **{m.name: m.compute(records) for m in reported}})
        notes += [f"{task}: {note}." for note in summarize(records, options.k, options.seed).notes.values()]
        gold = Counter(r.gold for r in records)
        if few := [x for x in LETTERS if 0 < gold[x] < 2]:
            notes.append(
                f"{task}: recall stderr n/a for {', '.join(few)}: 1 question with that gold letter "
                "(a standard error needs at least 2)."
            )
    return SummaryTable(rows, list(dict.fromkeys(k for r in rows for k in r)), notes)
