"""Helpers shared by the Inspect adapters: task registration, metrics made from compute
functions, and reading a finished log."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.scorer import Metric, SampleScore, metric


def register_task(name: str, build: Callable[..., Task], fixed: Mapping[str, Any], doc: str) -> Callable[..., Task]:
    """Register `biasmonkey/<name>` as `build(**fixed, **params)`.

    The registered function carries `build`'s signature without the fixed parameters, so
    Inspect lists the remaining ones as the task's -T parameters (with their defaults)."""

    def make(**params: Any) -> Task:
        return build(**fixed, **params)

    signature = inspect.signature(build)
    make.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values() if p.name not in fixed]
    )
    make.__name__ = make.__qualname__ = name
    make.__doc__ = doc
    return task(name=name)(make)


def check_positive_int(name: str, value: Any) -> None:
    """A -T parameter that must be a positive integer."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"option {name}={value!r} must be a positive integer")


def _metric_factory(compute: Callable[[list[SampleScore]], float]) -> Callable[[], Metric]:
    def factory() -> Metric:
        def value(scores: list[SampleScore]) -> float:  # Inspect needs this annotation for set-level metrics
            return compute(scores)

        return value

    return factory


def make_metrics(functions: Mapping[str, Callable[[list[SampleScore]], float]]) -> dict[str, Callable[[], Metric]]:
    """One registered `@metric` per (name, compute function over all sample scores)."""
    return {name: metric(name=name)(_metric_factory(compute)) for name, compute in functions.items()}


def read_finished_log(path: str | Path) -> EvalLog:
    """An Inspect log (`.eval` or `.json`) of a completed eval that kept its samples."""
    log = read_eval_log(str(path))
    if log.status != "success":
        reason = f": {log.error.message.strip().splitlines()[-1]}" if log.error else ""
        raise ValueError(f"{path}: the eval did not complete (status {log.status}{reason})")
    if not log.samples:
        raise ValueError(f"{path}: the log holds no samples (was it written with --no-log-samples?)")
    return log


def reduced_sample_scores(path: str | Path, scorer: str) -> list[SampleScore]:
    """One `scorer` score per sample of a finished log, with the sample's metadata.

    With several epochs the log holds every epoch's score; these are the epoch-reduced scores,
    as the task's metrics saw them."""
    log = read_finished_log(path)
    metadata = {s.id: s.metadata for s in log.samples or []}
    reduced = next((r.samples for r in log.reductions or [] if r.scorer == scorer), None)
    if reduced is not None:
        return [SampleScore(score=s, sample_id=s.sample_id, sample_metadata=metadata[s.sample_id]) for s in reduced]
    return [SampleScore(score=s.scores[scorer], sample_id=s.id, sample_metadata=s.metadata) for s in log.samples or [] if s.scores]
