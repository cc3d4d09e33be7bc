"""The families' parts of the report: `tasks/<family>/report.py`, where a family has one.

Such a module gives `tables(models) -> {name: DataFrame}` and `section(tables, fig_dir) -> Section`,
and may give `warnings(models, tables) -> [{model, task, warning, detail}]`, `summary(model, tables)
-> {column: value}` with the `SUMMARY_COLUMNS` it fills. The report calls them for the families
that have results, in the registry's order."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from biasmonkey.tasks.families import FAMILIES, family_module


def family_reports(models: Sequence[Any] | None = None) -> dict[str, ModuleType]:
    """Each family's report module, by family name; with `models`, only the families they have results of."""
    found = {}
    for name in FAMILIES:
        if (models is None or any(m.tasks(name) for m in models)) and (module := family_module(name, "report")):
            found[name] = module
    return found
