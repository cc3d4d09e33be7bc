"""Inspect's entry point (`[project.entry-points.inspect_ai]`): importing this module registers
every biasmonkey task as `biasmonkey/<name>`: each family's Inspect adapter
(`tasks/<family>/inspect_task.py`) registers its tasks with Inspect's `@task` when imported, so
`inspect eval biasmonkey/acquiescence` works from any directory."""

from biasmonkey.tasks.families import FAMILIES, family_module

ADAPTERS = {name: family_module(name, "inspect_task") for name in FAMILIES}
