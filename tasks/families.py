"""The task families, and which family a harness task name belongs to."""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from types import ModuleType

from biasmonkey.tasks.answer_position.family import FAMILY as ANSWER_POSITION
from biasmonkey.tasks.cognitive.family import FAMILY as COGNITIVE
from biasmonkey.tasks.contract import Family, base_task_name
from biasmonkey.tasks.mc_position.family import FAMILY as POSITION
from biasmonkey.tasks.response_bias.family import FAMILY as RESPONSE_BIAS
from biasmonkey.tasks.yesno.family import FAMILY as YESNO

__all__ = [
    "ANSWER_POSITION",
    "COGNITIVE",
    "FAMILIES",
    "POSITION",
    "RESPONSE_BIAS",
    "YESNO",
    "family_module",
    "family_of",
]

FAMILIES: dict[str, Family] = {f.name: f for f in (RESPONSE_BIAS, YESNO, COGNITIVE, ANSWER_POSITION, POSITION)}
_BY_TASK = {task: family for family in FAMILIES.values() for task in family.tasks}


def family_of(task: str) -> Family | None:
    """The family of a task, named without prefix or as lm-eval (`biasmonkey_…`) or Inspect
    (`biasmonkey/…`) names it; None for a task that is not ours."""
    name = base_task_name(task) or task
    found = _BY_TASK.get(task) or _BY_TASK.get(name)
    # families whose tasks are open (the wrapped tasks: any `position_<task>`) list none
    return found or next((f for f in FAMILIES.values() if not f.tasks and name in f.tasks), None)


def family_module(family: str, part: str) -> ModuleType | None:
    """A family's module `tasks/<family>/<part>.py` (its `inspect_task`, `commands`, `report`, `compare`), or
    None where the family has none: how the adapters and the application find a family's parts."""
    name = f"biasmonkey.tasks.{family}.{part}"
    return import_module(name) if find_spec(name) is not None else None
