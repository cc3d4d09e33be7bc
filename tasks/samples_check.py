"""An lm-eval samples file against what its run said it wrote, for every reader of one.

A samples file (`samples_<task>_<stamp>.jsonl`, lm-eval's `--log_samples`) holds each doc_id once
per filter and, beside the results file written with it (`results_<stamp>.json`, same stamp), as
many documents as that file's `n-samples` says: doc_ids 0…n−1, unless lm-eval's `--samples` picked
them. Anything else (a line repeated, lost or edited after the run) is an error naming the file, the
task and the counts (`check_samples`), so that no number stands on other items than the run's.

Pure (json and the file system only), so that both the harness readers (`harness_ext/logs.py`) and
the tasks that read an earlier run's samples (the cognitive two-step protocol) use this one check.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biasmonkey.tasks.contract import LM_EVAL_PREFIX

__all__ = ["REWRITTEN", "SAMPLES_FILE", "LoggedDoc", "RunCount", "check_samples", "read_results", "run_count", "times"]

SAMPLES_FILE = re.compile(rf"^samples_({LM_EVAL_PREFIX}[a-z0-9_]+)_(\d{{4}}-\d\d-\d\dT[\d\-.]+)\.jsonl$")
REWRITTEN = "the file was changed after the run (a line repeated, lost or edited): rerun the task"


@dataclass(frozen=True)
class LoggedDoc:
    """Where one document stands in a samples file: its line, lm-eval's doc_id and filter."""

    line: int
    doc_id: Any  # an int in lm-eval's files; None in a hand-made file without doc ids
    filter: str = ""

    @classmethod
    def of(cls, line: int, sample: dict[str, Any]) -> LoggedDoc:
        """The document of one parsed line of a samples file."""
        return cls(line, sample.get("doc_id"), str(sample.get("filter", "")))


@dataclass(frozen=True)
class RunCount:
    """How many documents of one task an lm-eval run said it wrote (its results file's n-samples)."""

    results: Path
    effective: int  # after --limit or a --samples selection
    ids: frozenset[int] | None  # the doc_ids 0…effective−1; None after a --samples selection (any ids)


# The parts of a results file that readers look into, each an object when present (per task: `configs`
# and `n-samples` by task name, a task's `metadata` its run options).
RESULTS_OBJECTS = ("config", "configs", "results", "n-samples", "n-shot")
TASK_OBJECTS = ("configs", "n-samples")


def read_results(path: Path) -> dict[str, Any]:
    """An lm-eval results file; an error naming it when it is not one (not JSON, or JSON of
    another shape: a top level, or a part readers look into, that is not an object)."""
    try:
        results = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not a readable lm-eval results file ({err})") from err
    if (problem := _shape_problem(results)) is not None:
        raise ValueError(
            f"{path}: not an lm-eval results file ({problem}); restore the file the run wrote, or rerun the task"
        )
    return results


def _shape_problem(results: Any) -> str | None:
    def kind(value: Any) -> str:
        return "null" if value is None else type(value).__name__

    if not isinstance(results, dict):
        return f"its top level is {kind(results)}, not an object"
    for key in RESULTS_OBJECTS:
        if key in results and results[key] is not None and not isinstance(results[key], dict):
            return f"{key!r} is {kind(results[key])}, not an object"
    for key in TASK_OBJECTS:
        for task, value in (results.get(key) or {}).items():
            if not isinstance(value, dict):
                return f"{key}[{task!r}] is {kind(value)}, not an object"
            if key == "configs" and value.get("metadata") is not None and not isinstance(value["metadata"], dict):
                return f"configs[{task!r}]['metadata'] is {kind(value['metadata'])}, not an object"
    return None


def check_samples(path: Path, logged: list[LoggedDoc]) -> None:
    """The documents of a samples file against what its run said it wrote: each doc_id once per filter
    and, where the results file written with it (same stamp) is beside it, its count and doc_ids."""
    m = SAMPLES_FILE.match(path.name)
    task = m.group(1) if m else "its task"
    count = run_count(path.parent / f"results_{m.group(2)}.json", task) if m else None
    for filter_key in sorted({doc.filter for doc in logged}):
        docs = [doc for doc in logged if doc.filter == filter_key]
        problems = _id_problems(docs, count.ids if count else None)
        if count is not None and len(docs) != count.effective:
            detail = f": {'; '.join(problems)}" if problems else ""
            raise ValueError(
                f"{path}: {len(docs)} samples for {task} but its results file {count.results.name} says "
                f"{count.effective}{detail}; {REWRITTEN}, or restore the samples file written with it"
            )
        if problems:
            said = f"as its results file {count.results.name} says, " if count else ""
            raise ValueError(
                f"{path}: {len(docs)} samples for {task} {said}but {'; '.join(problems)}; lm-eval writes each "
                f"document once: {REWRITTEN}, or restore the samples file as lm-eval wrote it"
            )


def run_count(results_path: Path, task: str) -> RunCount | None:
    """What the results file of a run says it wrote of `task` (None: no such file, or no n-samples in it)."""
    if not results_path.is_file():
        return None
    results = read_results(results_path)
    n = ((results.get("n-samples") or {}).get(task)) or {}
    effective, original = n.get("effective"), n.get("original")
    if not isinstance(effective, int) or not isinstance(original, int):
        return None  # an older lm-eval, or a hand-made file
    # --limit takes the first documents, and no selection takes them all; --samples picks any (unrecorded)
    limited = (results.get("config") or {}).get("limit") is not None
    ids = frozenset(range(effective)) if limited or effective == original else None
    return RunCount(results_path, effective, ids)


def _id_problems(docs: list[LoggedDoc], expected: frozenset[int] | None) -> list[str]:
    """What is wrong with the doc_ids of one filter's samples, e.g. ["doc_id 0 twice (lines 1, 4)"]."""
    if any(doc.doc_id is None for doc in docs):
        return []  # a hand-made file: nothing to check by id
    lines: dict[Any, list[int]] = {}
    for doc in docs:
        lines.setdefault(doc.doc_id, []).append(doc.line)
    repeats = [
        f"doc_id {doc_id} {times(len(at))} (lines {', '.join(map(str, at))})"
        for doc_id, at in lines.items()
        if len(at) > 1
    ]
    problems = repeats[:3] + ([f"… ({len(repeats)} doc_ids repeated in all)"] if len(repeats) > 3 else [])
    if expected is not None:
        got = set(lines)
        if missing := sorted(expected - got):
            problems.append(f"doc_id {_listed(missing)} missing")
        if unexpected := sorted(got - expected, key=str):
            problems.append(f"doc_id {_listed(unexpected)} not among the run's 0…{len(expected) - 1}")
    return problems


def times(n: int) -> str:
    """2 → "twice", 3 → "three times", n → "n times"."""
    return {2: "twice", 3: "three times"}.get(n, f"{n} times")


def _listed(ids: list[Any], most: int = 5) -> str:
    """A few ids as text: "1, 2" or "1, 2, 3, 4, 5, … (9 in all)"."""
    shown = ", ".join(map(str, ids[:most]))
    return shown if len(ids) <= most else f"{shown}, … ({len(ids)} in all)"
