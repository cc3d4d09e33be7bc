"""Prompts cut to fit the model's context, recorded beside the results they qualify.

With `biasmonkey run --allow-truncation`, lm-eval cuts the prompts longer than the model's context
from the left (`app/context_check.py` counts them before the run). At the end of the run, the count
of each task whose prompts were cut goes into the results folder of the samples file the run wrote
(`TRUNCATION_FILE`: {samples file name: `TaskCuts`}, earlier runs' entries kept), so that every later
reader of the folder (summarize, report, its tables and exports) says so for that run's outputs
(`truncation_of`), however long after the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from biasmonkey.tasks.atomic_write import write_text
from biasmonkey.tasks.samples_check import SAMPLES_FILE

TRUNCATION_FILE = "biasmonkey_truncation.json"


@dataclass(frozen=True)
class TaskCuts:
    """One task's distinct prompts that do not fit the model's context of `limit` tokens: how many,
    the most tokens one needs, and the tokens cut (the most from one prompt, and in all)."""

    limit: int
    prompts: int
    longest: int
    most_cut: int
    total_cut: int

    def sentence(self) -> str:
        """E.g. "3 prompt(s) truncated to the model's context of 48 tokens (by up to 32 tokens, 70 in all)"."""
        return (
            f"{self.prompts:,} prompt(s) truncated to the model's context of {self.limit:,} tokens "
            f"(by up to {self.most_cut:,} tokens, {self.total_cut:,} in all)"
        )


def cut_sentence(cuts: Mapping[str, TaskCuts]) -> str:
    """The cut prompts of several tasks in words ("" when none)."""
    if not cuts:
        return ""
    limits = " or ".join(f"{limit:,}" for limit in sorted({c.limit for c in cuts.values()}))
    prompts = sum(c.prompts for c in cuts.values())
    most = max(c.most_cut for c in cuts.values())
    total = sum(c.total_cut for c in cuts.values())
    return (
        f"{prompts:,} distinct prompt(s) of {len(cuts)} task(s) cut from the left to fit the model's context of "
        f"{limits} tokens (by up to {most:,} tokens, {total:,} in all)"
    )


def summary_lines(cuts: Mapping[str, TaskCuts]) -> list[str]:
    """For summary.md: the cut prompts, per task (none when nothing is cut)."""
    if not cuts:
        return []
    per_task = ", ".join(f"{task} {c.prompts:,} (up to {c.most_cut:,} tokens)" for task, c in sorted(cuts.items()))
    return [
        f"**Truncated prompts** (--allow-truncation): {cut_sentence(cuts)}; the numbers of these tasks come from "
        f"prompts that lost their beginning. Per task: {per_task}."
    ]


def _read(path: Path) -> dict[str, TaskCuts]:
    """The entries of a truncation file ({} when there is none); an error naming it when it is damaged."""
    if not path.is_file():
        return {}
    names = [f.name for f in fields(TaskCuts)]
    try:
        entries = json.loads(path.read_text())
        return {name: TaskCuts(**{k: int(entry[k]) for k in names}) for name, entry in entries.items()}
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise ValueError(
            f"{path}: not a readable truncation record ({type(err).__name__}: {err}); it says which prompts "
            "`biasmonkey run --allow-truncation` cut: restore it, or rerun the run"
        ) from None


def record_truncation(written: Iterable[Path], cuts: Mapping[str, TaskCuts]) -> list[Path]:
    """Record the cuts of each task (lm-eval name) among the samples files a run `written`, in the
    truncation file of each one's folder; returns the files written."""
    by_folder: dict[Path, dict[str, TaskCuts]] = {}
    for path in written:
        m = SAMPLES_FILE.match(path.name)
        if m and m.group(1) in cuts:
            by_folder.setdefault(path.parent, {})[path.name] = cuts[m.group(1)]
    for folder, entries in by_folder.items():
        merged = {**_read(folder / TRUNCATION_FILE), **entries}
        text = json.dumps({name: asdict(c) for name, c in sorted(merged.items())}, indent=1)
        write_text(folder / TRUNCATION_FILE, text + "\n")
    return [folder / TRUNCATION_FILE for folder in by_folder]


def truncation_of(samples: Path) -> TaskCuts | None:
    """The recorded cuts of an lm-eval samples file's prompts (None: nothing was cut)."""
    return _read(samples.parent / TRUNCATION_FILE).get(samples.name)
