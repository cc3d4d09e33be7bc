"""The launcher's checks of biasmonkey's tasks, made before lm-eval creates the model.

lm-eval creates (loads) the model first and the tasks after, so a bad `--metadata` value or a
`--num_fewshot` that a task refuses would fail only once the weights are in memory. Here, from
lm-eval's own parsed configuration:

- the task options (`--metadata`, merged with the model arguments as lm-eval merges them) are
  read by each chosen family's options class, which raises for a wrong type or value;
- with `--num_fewshot N > 0`, one task of each chosen family builds its first document's
  requests with N shots, as lm-eval will: a family that refuses few-shot says so here.

Task names, groups and tags that are not biasmonkey's are left to lm-eval.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

from biasmonkey.tasks.contract import Family, lm_eval_group_name
from biasmonkey.tasks.families import FAMILIES, family_of


def _named_sets() -> dict[str, tuple[Family, str]]:
    """Each family's lm-eval groups, tags and suite → (the family, its first task's lm-eval name)."""
    found: dict[str, tuple[Family, str]] = {}
    for family in FAMILIES.values():
        if not family.lm_eval_tasks():  # open task tables (the wrapped tasks) have no suite
            continue
        first = family.lm_eval_tasks()[0]
        found[family.suite] = (family, first)
        for tag, members in family.lm_eval_tags.items():
            found[lm_eval_group_name(tag)] = (family, "biasmonkey_" + members[0] if members else first)
        for group in family.lm_eval_groups:
            found[lm_eval_group_name(group.name)] = (family, "biasmonkey_" + group.tasks[0] if group.tasks else first)
    return found


def chosen_families(spec: str | Iterable[Any]) -> dict[str, str]:
    """The biasmonkey families an lm-eval `--tasks` value chooses → one chosen task of each."""
    names = (
        spec.split(",")
        if isinstance(spec, str)
        else [n for item in spec if isinstance(item, str) for n in item.split(",")]
    )
    sets = _named_sets()
    chosen: dict[str, str] = {}
    for name in (n.strip() for n in names if n.strip()):
        if name in sets:
            family, task = sets[name]
            chosen.setdefault(family.name, task)
        elif (family := family_of(name)) is not None:
            chosen.setdefault(family.name, name)
        elif any(c in name for c in "*?["):  # a glob, as lm-eval matches it
            for family in FAMILIES.values():
                matched = fnmatch.filter(family.lm_eval_tasks(), name)
                if matched:
                    chosen.setdefault(family.name, matched[0])
    return chosen


def check_options(metadata: dict[str, Any], families: Iterable[str]) -> None:
    """Each chosen family reads the options, as its tasks will (a `ValueError` names a bad one)."""
    for name in families:
        FAMILIES[name].options_type.from_mapping(metadata)


def check_fewshot(
    num_fewshot: int, tasks: Iterable[str], metadata: dict[str, Any], include_path: str | None = None
) -> None:
    """One document of each task with `num_fewshot` shots, as lm-eval builds it (no model);
    `include_path`: the run's (default: biasmonkey's tasks)."""
    from lm_eval.tasks import TaskManager

    from biasmonkey.harness_ext.app.plan import tasks_dir

    names = list(tasks)
    manager = TaskManager(include_path=include_path or str(tasks_dir()), include_defaults=False, metadata=metadata)
    for task in manager.load(names)["tasks"].values():
        task.set_config(key="num_fewshot", value=num_fewshot)
        task.set_fewshot_seed(seed=1234)
        task.build_all_requests(limit=1, rank=0, world_size=1)


def check_run(config: Any, options_checked: bool = False) -> None:
    """lm-eval's parsed run configuration (`EvaluatorConfig`): biasmonkey's tasks among it, their
    options and few-shot setting; `options_checked`: `biasmonkey run` has already read the options."""
    families = chosen_families(config.tasks or "")
    if not families:
        return
    metadata = dict(config.metadata or {})
    if not options_checked:
        check_options(metadata, families)
    if config.num_fewshot:
        check_fewshot(int(config.num_fewshot), families.values(), metadata, getattr(config, "include_path", None))
