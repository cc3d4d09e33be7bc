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
and "smollm2 (lm-eval)". A model run with one setting in two places (two `--output_path` folders or
log folders, given as two paths or found under one) gives one entry per place: "smollm2 [runs/a]".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.logs import Settings, TaskOutput, describe, newest, scan, short_name, variants_note
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
    distinct: str = ""  # what tells the entry from the model's others: "(mode=sample)", "(lm-eval)", "[runs/a]"

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


def place_of(out: TaskOutput) -> str:
    """Where an output was found: an lm-eval run's `--output_path` (above the model's folder), an
    Inspect log's folder."""
    return str(out.path.parent.parent if out.harness == "lm-eval" else out.path.parent)


def _by_place(outputs: Sequence[TaskOutput]) -> list[tuple[str, list[TaskOutput]]]:
    """A model's outputs: one group, or one per place where a task of one harness and setting was
    found in two places (two runs of the same model, e.g. `runs/a` and `runs/b`), named by the place."""
    places: dict[tuple[str, str, Settings], set[str]] = {}
    for out in outputs:
        places.setdefault((out.task, out.harness, out.settings), set()).add(place_of(out))
    if all(len(p) == 1 for p in places.values()):
        return [("", list(outputs))]
    groups: dict[str, list[TaskOutput]] = {}
    for out in outputs:
        groups.setdefault(place_of(out), []).append(out)
    return sorted(groups.items())


def _given_once(found: Sequence[tuple[int, str | Path, TaskOutput]]) -> None:
    """The same output read under two of the given paths (one path twice, a folder and a folder or
    file in it) would stand twice in the report, as two runs that agree."""
    seen: dict[Path, tuple[int, str | Path]] = {}
    for i, raw, out in found:
        first = seen.setdefault(out.path.resolve(), (i, raw))
        if first[0] != i:
            raise ValueError(f"{out.path} is found under both {first[1]} and {raw}: give each results path once")


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


def discover(
    paths: Sequence[str | Path], names: Mapping[str, str] | None = None, left_out: list[TaskOutput] | None = None
) -> list[ModelResults]:
    """Every model's newest biasmonkey outputs per setting under the given paths, records read, in name order.

    Errors name the path: a path that does not exist or holds no biasmonkey output, a file that
    cannot be read, one output under two of the given paths. A model run with one setting in two
    places (two output folders) gives an entry per place, named by it ("tiny [runs/a]"). `left_out`
    gets the variants found (outside their family's suite), which no report reads."""
    names = dict(names or {})
    found: list[tuple[int, str | Path, TaskOutput]] = []
    for i, raw in enumerate(paths):
        variants: list[TaskOutput] = []
        outputs = newest(scan(raw, variants))
        if not outputs:
            only = f"; {note}" if (note := variants_note(variants)) else ""
            raise ValueError(
                f"{raw}: no biasmonkey outputs (lm-eval samples_biasmonkey_*.jsonl written with --log_samples, "
                f"or Inspect logs of biasmonkey/ tasks){only}"
            )
        if left_out is not None:
            left_out += variants
        found += [(i, raw, out) for out in outputs]
    _given_once(found)
    by_model: dict[str, list[TaskOutput]] = {}
    for _, _, out in found:
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
        for place, in_place in _by_place(outputs):
            for suffix, group in _entries(in_place):
                distinct = " ".join(t for t in (f"({suffix})" if suffix else "", f"[{place}]" if place else "") if t)
                label = f"{name} {distinct}" if distinct else name
                entry = models[label] = ModelResults(
                    name=label, model=model, config=dict(group[0].config), distinct=distinct
                )
                entry.sources = {lm_eval_task_name(out.task): out for out in group}
    from rich.progress import track

    outputs = [(entry, task, out) for entry in models.values() for task, out in sorted(entry.sources.items())]
    for entry, task, out in track(outputs, description="Reading per-item records", transient=True):
        entry.records[out.suite][task] = out.read_records()
    return [models[name] for name in sorted(models)]
