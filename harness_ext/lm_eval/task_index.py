"""lm-eval's task index without its ~15,000 built-in task files when a run does not need them.

lm-eval's `TaskManager` reads every YAML file under `lm_eval/tasks` each time one is built: 10-20 s on
2 cores, more than a short run of biasmonkey's tasks takes in all. When every task a run names resolves
in the `--include_path` folders alone, the index over those folders gives the same task objects (an
include path's task overrides a built-in one of the same name anyway), so the launcher builds only that.
A name that does not resolve there (a built-in task, a glob, a file path, a group with a member outside
the folders, a tag that is not biasmonkey's and that built-in tasks may also carry) keeps the full index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

OWN_PREFIX = "biasmonkey"  # biasmonkey's task, group and tag names; no built-in lm-eval task has them


def resolves_within(index: Mapping[str, Any], names: Iterable[str]) -> bool:
    """Whether `names`, with every group's members, resolve in `index` (lm-eval's `TaskManager.task_index`)."""
    from lm_eval.tasks._index import Kind

    pending, seen = list(names), set()
    if not pending:
        return False
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        entry = index.get(name)
        if entry is None or (entry.kind is Kind.TAG and not name.startswith(OWN_PREFIX)):
            return False
        if entry.kind is Kind.GROUP:
            for member in entry.cfg.get("task") or []:
                if not isinstance(member, str):  # an inline task configuration: let lm-eval resolve it
                    return False
                pending.append(member)
    return True


def index_only_what_runs(tasks: str | Iterable[str]) -> None:
    """From now on in this process, lm-eval's `TaskManager` leaves out its built-in tasks whenever
    `tasks` (the run's `--tasks`: comma-separated, or a list of such) resolve in the include path
    alone (`resolves_within`)."""
    import lm_eval.tasks

    given = [tasks] if isinstance(tasks, str) else list(tasks)
    requested = [name.strip() for value in given for name in value.split(",") if name.strip()]
    stock = lm_eval.tasks.TaskManager

    class IncludePathFirst(stock):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, include_path: Any = None, include_defaults: bool = True, **kwargs: Any) -> None:
            if include_defaults and include_path:
                super().__init__(*args, include_path=include_path, include_defaults=False, **kwargs)
                if resolves_within(self.task_index, requested):
                    return
            super().__init__(*args, include_path=include_path, include_defaults=include_defaults, **kwargs)

    lm_eval.tasks.TaskManager = IncludePathFirst
