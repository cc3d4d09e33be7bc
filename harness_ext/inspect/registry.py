"""Inspect's entry point (`[project.entry-points.inspect_ai]`): importing this module registers
every biasmonkey task as `biasmonkey/<name>`: each family's Inspect adapter
(`tasks/<family>/inspect_task.py`) registers its tasks with Inspect's `@task` when imported, so
`inspect eval biasmonkey/acquiescence` works from any directory.

It also makes every name a biasmonkey log refers to resolvable, so that `inspect score LOG`
re-scores it: the tasks' metric tables (`biasmonkey/<family>_metrics`, registered with the tasks)
and the scorers. Inspect logs a package's scorer by its unqualified name (`pair_scorer`) and
looks unqualified names up among its own objects only, so each scorer is also registered under
that name; `inspect score` loads every entry point before it resolves the log's scorers."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from inspect_ai.scorer import Scorer
from inspect_ai.scorer._scorer import scorer_register  # registers a name as given, without the package prefix
from inspect_ai.util import registry_info

from biasmonkey.harness_ext import short_errors
from biasmonkey.tasks.families import FAMILIES, family_module

short_errors.install()  # inspect eval: an error in a task's options or data is one line

ADAPTERS = {name: family_module(name, "inspect_task") for name in FAMILIES}


def register_unqualified_scorer(factory: Callable[..., Scorer], name: str) -> Callable[..., Scorer]:
    """`factory` (registered as `biasmonkey/<name>`) also under `name`, the name the log keeps.

    The alias calls the factory, so its scorers are the same (their scores keep the key `name`)."""

    @functools.wraps(factory)
    def alias(*args: Any, **kwargs: Any) -> Scorer:
        return factory(*args, **kwargs)

    return scorer_register(alias, name=name, metadata=registry_info(factory).metadata)


SCORER_ALIASES = {
    name: register_unqualified_scorer(getattr(module, FAMILIES[name].scorer), FAMILIES[name].scorer)
    for name, module in ADAPTERS.items()
    if module is not None
}
