"""Find harness outputs and rebuild their per-item records, per model and task.

A results path is an lm-eval `--output_path` folder, an Inspect log folder, or a single Inspect
log (`biasmonkey.harness_ext.logs`). Per model and task the newest output wins. Every number of
the report is recomputed from the records read here, never from the aggregates a harness printed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.logs import TaskOutput, newest, scan
from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.families import FAMILIES, family_of

SUITES = tuple(FAMILIES)


def suite_of(task: str) -> str | None:
    """The suite of a task name (biasmonkey_…, biasmonkey/… or bare), or None for any other task."""
    family = family_of(task)
    return None if family is None else family.name


@dataclass
class ModelResults:
    """Everything found for one model: its records per suite and task, and run metadata."""

    name: str  # the short name used in tables
    model: str  # the full model name or path the harness recorded
    sources: dict[str, TaskOutput] = field(default_factory=dict)  # lm-eval task name -> its output
    records: dict[str, dict[str, list]] = field(default_factory=lambda: {s: {} for s in SUITES})
    config: dict[str, Any] = field(default_factory=dict)  # lm-eval's config block or Inspect's model info

    def tasks(self, suite: str) -> dict[str, list]:
        return self.records[suite]


def short_name(model: str) -> str:
    """A readable name: the last path component (hf/org/name, /models/name → name)."""
    return Path(model.rstrip("/")).name or model


def parse_names(pairs: Iterable[str]) -> dict[str, str]:
    """--name MODEL=NAME options → {MODEL: NAME}; MODEL is the full or the short model name."""
    names = {}
    for pair in pairs:
        model, sep, name = pair.partition("=")
        if not sep or not model or not name:
            raise ValueError(f"--name {pair!r}: expected MODEL=NAME")
        names[model] = name
    return names


def discover(paths: Sequence[str | Path], names: Mapping[str, str] | None = None) -> list[ModelResults]:
    """Every model's newest biasmonkey outputs under the given paths, records read, in name order.

    Errors name the path: a path that does not exist or holds no biasmonkey output, a file that
    cannot be read, the same task of one model found twice (in two harnesses or two folders)."""
    names = dict(names or {})
    models: dict[str, ModelResults] = {}
    for raw in paths:
        found = newest(scan(raw))
        if not found:
            raise ValueError(
                f"{raw}: no biasmonkey outputs (lm-eval samples_biasmonkey_*.jsonl written with --log_samples, "
                "or Inspect logs of biasmonkey/ tasks)"
            )
        for out in found:
            name = names.get(out.model) or names.get(short_name(out.model)) or short_name(out.model)
            entry = models.setdefault(name, ModelResults(name=name, model=out.model, config=dict(out.config)))
            if entry.model != out.model:
                raise ValueError(
                    f"{raw}: models {entry.model!r} and {out.model!r} both have the short name {name!r}; "
                    f"tell them apart with --name {out.model}=OTHER_NAME"
                )
            task = lm_eval_task_name(out.task)
            if (prev := entry.sources.get(task)) is not None:
                raise ValueError(
                    f"{task} of model {out.model!r} found twice: {prev.path} ({prev.harness}) and {out.path} "
                    f"({out.harness}); give one of them"
                )
            entry.sources[task] = out
    from rich.progress import track

    outputs = [(entry, task, out) for entry in models.values() for task, out in sorted(entry.sources.items())]
    for entry, task, out in track(outputs, description="Reading per-item records", transient=True):
        entry.records[out.suite][task] = out.read_records()
    return [models[name] for name in sorted(models)]
