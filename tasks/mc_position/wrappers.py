"""lm-eval wrapper task files: `biasmonkey_position_<task>.yaml`, one per wrapped task, in a folder
that `lm_eval --include_path` (or `biasmonkey run --position-of`) reads.

Each file includes the wrapped task's own YAML (so lm-eval loads its data, templates and few-shot
settings as it always does) and names `PositionTask` as its class. The wrapped task is found in
lm-eval's task index, the built-in tasks and the folders given as `include_path`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from biasmonkey.tasks.atomic_write import write_text
from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.mc_position.family import task_name

CLASS = "biasmonkey.tasks.mc_position.lm_eval_task.PositionTask"


class WrapError(ValueError):
    """A task that cannot be wrapped: the message names it and the fix."""


def wrapper_text(name: str, yaml_path: Path) -> str:
    return (
        f"# Written by biasmonkey: lm-eval's task {name} asked lettered, in its original and cyclic orders\n"
        "# (answer-position bias, docs/mc_position.md). Regenerate with `biasmonkey position-tasks`.\n"
        f"include: {yaml_path.resolve()}\n"
        f"task: {lm_eval_task_name(task_name(name))}\n"
        f"class: !function {CLASS}\n"
    )


def _entry(index: dict, name: str):
    from lm_eval.tasks._index import Kind

    entry = index.get(name)
    if entry is None:
        raise WrapError(
            f"lm-eval task {name}: not found; list the tasks with `lm_eval ls tasks`, or give the folder of your "
            "own task files with --include-path"
        )
    if entry.kind in (Kind.GROUP, Kind.TAG):
        raise WrapError(
            f"lm-eval task {name}: it is an lm-eval {entry.kind.name.lower()}; name its tasks one by one "
            "(answer-position bias is measured per task)"
        )
    config = entry.cfg or {}
    if entry.kind is not Kind.TASK or entry.yaml_path is None or config.get("task") not in (None, name):
        raise WrapError(f"lm-eval task {name}: only a task defined by its own YAML file can be wrapped")
    if config.get("output_type") != "multiple_choice":
        raise WrapError(
            f"lm-eval task {name}: its output_type is {config.get('output_type')!r}; answer-position bias wraps "
            "multiple_choice tasks only"
        )
    return entry


def write_wrappers(names: Sequence[str], folder: Path, include_path: Sequence[str] = ()) -> list[str]:
    """Write the wrapper file of each task into `folder`; the wrapper tasks' lm-eval names."""
    from lm_eval.tasks import TaskManager

    # the given folders first (quick); lm-eval's own tasks only when a name is not among them (slow)
    index = TaskManager(include_path=list(include_path), include_defaults=False).task_index if include_path else {}
    if any(name not in index for name in names):
        index = TaskManager(include_path=list(include_path) or None).task_index
    entries = [_entry(index, name) for name in names]  # every name checked before anything is written
    folder.mkdir(parents=True, exist_ok=True)
    for name, entry in zip(names, entries):
        write_text(folder / f"{lm_eval_task_name(task_name(name))}.yaml", wrapper_text(name, entry.yaml_path))
    return [lm_eval_task_name(task_name(name)) for name in names]
