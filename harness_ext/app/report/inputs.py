"""Find harness outputs and rebuild their per-item records, per model and task.

A results path is an lm-eval `--output_path` folder, an Inspect log folder, or a single Inspect
log (`biasmonkey.harness_ext.logs`). Per model, settings and task the newest output wins. Every
number of the report is recomputed from the records read here, never from the aggregates a harness
printed.

Models and settings are never mixed. A model is one entry of the report (its rows, its leaderboard
folder) when each suite of it was run with one setting (e.g. response biases in sample mode, yes-no
with its defaults); when a suite has outputs of several settings, the model has one entry per
setting, named with the settings that differ, e.g. "smollm2 (mode=sample)". A task of one model
and setting run through both harnesses gives one entry per harness, side by side: "smollm2 (inspect)"
and "smollm2 (lm-eval)".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.logs import Settings, TaskOutput, describe, newest, scan, short_name
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

    name: str  # the short name used in tables (with the settings that tell it from the model's other entries)
    model: str  # the full model name or path the harness recorded
    sources: dict[str, TaskOutput] = field(default_factory=dict)  # lm-eval task name -> its output
    records: dict[str, dict[str, list]] = field(default_factory=lambda: {s: {} for s in SUITES})
    config: dict[str, Any] = field(default_factory=dict)  # lm-eval's config block or Inspect's model info

    def tasks(self, suite: str) -> dict[str, list]:
        return self.records[suite]

    @property
    def slug(self) -> str:
        """The name as a file or folder name ("smollm2 (mode=sample)" → "smollm2_mode_sample")."""
        return re.sub(r"[^A-Za-z0-9._-]+", "_", self.name).strip("_") or "model"


def parse_names(pairs: Iterable[str]) -> dict[str, str]:
    """--name MODEL=NAME options → {MODEL: NAME}; MODEL is the full or the short model name."""
    names = {}
    for pair in pairs:
        model, sep, name = pair.partition("=")
        if not sep or not model or not name:
            raise ValueError(f"--name {pair!r}: expected MODEL=NAME")
        names[model] = name
    return names


def _check_once(model: str, outputs: Sequence[TaskOutput]) -> None:
    """One task of a model twice from one harness with one setting (two folders) is ambiguous."""
    seen: dict[tuple[str, str, Settings], TaskOutput] = {}
    for out in outputs:
        prev = seen.setdefault((out.task, out.harness, out.settings), out)
        if prev is not out:
            raise ValueError(
                f"{lm_eval_task_name(out.task)} of model {model!r} found twice: {prev.path} ({prev.harness}) and "
                f"{out.path} ({out.harness}); give one of them"
            )


def _by_harness(outputs: Sequence[TaskOutput]) -> list[tuple[str, list[TaskOutput]]]:
    """Outputs of one setting: one group, or one per harness when a task was run through both
    (their rows then stand side by side, named by harness, never averaged into one)."""
    harnesses = {}
    for out in outputs:
        harnesses.setdefault(out.task, set()).add(out.harness)
    if all(len(h) == 1 for h in harnesses.values()):
        return [("", list(outputs))]
    groups: dict[str, list[TaskOutput]] = {}
    for out in outputs:
        groups.setdefault(out.harness, []).append(out)
    return sorted(groups.items())


def _entries(outputs: Sequence[TaskOutput]) -> list[tuple[str, list[TaskOutput]]]:
    """A model's outputs as report entries, each with the text that tells it from the others (the
    settings that differ, and the harness where a task was run through both): one entry when every
    suite has one setting and each task one harness."""
    per_suite: dict[str, set[Settings]] = {}
    for out in outputs:
        per_suite.setdefault(out.suite, set()).add(out.settings)
    if all(len(s) == 1 for s in per_suite.values()):
        groups: dict[Settings, list[TaskOutput]] = {(): list(outputs)}
        differing: set[str] = set()
    else:
        groups = {}
        for out in outputs:
            groups.setdefault(out.settings, []).append(out)
        values = [dict(settings) for settings in groups]
        differing = {k for v in values for k in v if len({w.get(k) for w in values}) > 1}
    entries = []
    for settings, group in sorted(groups.items()):
        own = tuple(kv for kv in settings if kv[0] in differing)
        shown = describe(own) if own else ""
        for harness, part in _by_harness(group):
            entries.append((", ".join(t for t in (harness, shown) if t), part))
    return entries


def discover(paths: Sequence[str | Path], names: Mapping[str, str] | None = None) -> list[ModelResults]:
    """Every model's newest biasmonkey outputs per setting under the given paths, records read, in name order.

    Errors name the path: a path that does not exist or holds no biasmonkey output, a file that
    cannot be read, the same task of one model found twice in one harness (in two folders with one
    setting)."""
    names = dict(names or {})
    by_model: dict[str, list[TaskOutput]] = {}
    for raw in paths:
        found = newest(scan(raw))
        if not found:
            raise ValueError(
                f"{raw}: no biasmonkey outputs (lm-eval samples_biasmonkey_*.jsonl written with --log_samples, "
                "or Inspect logs of biasmonkey/ tasks)"
            )
        for out in found:
            by_model.setdefault(out.model, []).append(out)
    models: dict[str, ModelResults] = {}
    named: dict[str, str] = {}
    for model, outputs in by_model.items():
        name = names.get(model) or names.get(short_name(model)) or short_name(model)
        if (other := named.setdefault(name, model)) != model:
            raise ValueError(
                f"models {other!r} and {model!r} both have the short name {name!r}; "
                f"tell them apart with --name {model}=OTHER_NAME"
            )
        _check_once(model, outputs)
        for suffix, group in _entries(outputs):
            label = f"{name} ({suffix})" if suffix else name
            entry = models[label] = ModelResults(name=label, model=model, config=dict(group[0].config))
            entry.sources = {lm_eval_task_name(out.task): out for out in group}
    from rich.progress import track

    outputs = [(entry, task, out) for entry in models.values() for task, out in sorted(entry.sources.items())]
    for entry, task, out in track(outputs, description="Reading per-item records", transient=True):
        entry.records[out.suite][task] = out.read_records()
    return [models[name] for name in sorted(models)]
