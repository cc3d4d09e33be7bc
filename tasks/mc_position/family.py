"""The wrapped multiple-choice family's contract: any multiple-choice task, asked in its cyclic orders.

A task of this family wraps another harness task by name: `position_<task>` (lm-eval
`biasmonkey_position_mmlu_anatomy` wraps lm-eval's `mmlu_anatomy`). Its tasks are therefore
open: `TASKS` answers for any such name and lists none. One document = one item in one order,
or the content-free prompt of one option count. Every number needs the whole task (items are
grouped across documents), so each metric is set-level, from `summarize`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from biasmonkey.metrics.position_bias import PositionSummary
from biasmonkey.tasks.contract import Family, Metric, records_metric
from biasmonkey.tasks.mc_position import codecs
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.scoring import PositionRecord, summarize
from biasmonkey.tasks.mc_position.summary import summary_table

NAME = "mc_position"
TITLE = "Answer-position bias on any multiple-choice task"
PREFIX = "position_"  # the wrapped tasks: position_<task> (lm-eval biasmonkey_position_<task>)
CONDITIONS = ("raw", "pride", "contextual", "specific")  # the answers as given, then each correction


def task_name(inner: str) -> str:
    """position_mmlu_anatomy for lm-eval's mmlu_anatomy."""
    return PREFIX + inner


class WrappedTasks(Mapping[str, Mapping[str, Any]]):
    """The family's task table: every `position_<task>` is a task (its fixed argument: the wrapped
    task's name); none is listed, as any multiple-choice task can be wrapped."""

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        if not name.startswith(PREFIX) or len(name) == len(PREFIX):
            raise KeyError(name)
        return {"inner": name.removeprefix(PREFIX)}

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.startswith(PREFIX) and len(name) > len(PREFIX)


TASKS = WrappedTasks()


def metric_name(measure: str, condition: str) -> str:
    """accuracy, accuracy_pride, …: the raw value keeps the measure's name."""
    return measure if condition == "raw" else f"{measure}_{condition}"


# measure -> (higher is better, the value in a condition's summary)
MEASURES = {
    "accuracy": True,
    "accuracy_permuted": True,
    "rstd": False,
    "changed": False,
}


@lru_cache(maxsize=4)
def _summary(records: tuple[PositionRecord, ...], options: PositionOptions) -> PositionSummary:
    return summarize(records, options)


def metrics(options: PositionOptions, harness: str, **task: Any) -> list[Metric[PositionRecord]]:
    """Accuracy in the original order and over all orders, RStd and the share of changed answers,
    raw and after each correction, and the number of items (the recalls and confidence intervals:
    `biasmonkey summarize` and the report)."""
    headline = replace(options, resamples=1)  # the harness table needs no intervals

    def value(measure: str, condition: str):
        return lambda records: float(getattr(_summary(tuple(records), headline).conditions[condition], measure))

    return [
        *(
            records_metric(metric_name(measure, condition), better, value(measure, condition))
            for condition in CONDITIONS
            for measure, better in MEASURES.items()
        ),
        records_metric(
            "n_items", True, lambda records: float(_summary(tuple(records), headline).conditions["raw"].n_items)
        ),
        records_metric("imputed_continuations", False, lambda records: float(sum(r.n_imputed for r in records))),
    ]


def docs(options: PositionOptions, inner: str) -> list[dict[str, Any]]:
    raise NotImplementedError(f"the documents of {task_name(inner)} are the wrapped task's, read by its harness")


FAMILY: Family[PositionRecord] = Family(
    name=NAME,
    title=TITLE,
    item="multiple-choice",
    tasks=TASKS,
    options_type=PositionOptions,
    record_type=PositionRecord,
    docs=docs,
    metrics=metrics,
    summarize=summarize,
    from_lm_eval=codecs.from_lm_eval,
    from_inspect=codecs.from_inspect,
    scorer="position_scorer",
    inspect_per_epoch=False,
    unit="item orders",
    hand_written_files=("examples/mmlu_anatomy_authors.yaml",),
    summary_table=summary_table,
    open_tasks="any lm-eval multiple-choice task, wrapped by name: biasmonkey run --position-of TASK "
    "(lm-eval biasmonkey_position_TASK, written by biasmonkey position-tasks; Inspect biasmonkey/position -T task=TASK)",
    signed_metric="rstd",
    hub_metric="abs_rstd",
    hub_note=lambda fixed: (
        "lower = less answer-position bias: RStd, the population SD of the recalls per answer position over "
        "the items' cyclic orders (0 = every position recalled alike)"
    ),
)
