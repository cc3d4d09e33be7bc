"""The families' parts of the report: `tasks/<family>/report.py`, where a family has one.

Such a module gives `tables(models, **options) -> {name: DataFrame}` and `section(tables, fig_dir,
**options) -> Section`; it may give
- `warnings(models, tables) -> [{model, task, warning, detail}]`;
- `summary(model, tables) -> {column: value}` with the `SUMMARY_COLUMNS` it fills,
  `summary_sentence(row, tables)` (its part of a model's verdict), `summary_display(summary)`
  (its columns of the summary table as shown) and `summary_notes(tables)` (lines after the verdicts);
- `headline(tables) -> headline.Panel | None` (its panel of the headline figure);
- `reference_rows(name, table) -> bool Series | None` (rows outside the multiple-comparison family:
  published models' rows, and count-only rows such as response bias's `not coded` topics) and `TEST_NAMES` ({table: how the summary names its tests});
- `inputs_notes(tables)` (lines of the Inputs section) and `leaderboard_entries(model, tables)`
  (extra results of the lm-eval results file: {name: {results, higher_is_better, n_samples}}).
- `check_inputs(tasks)`: reads what the report will compare the tasks (unprefixed names) with, the
  authors' released results, so that `biasmonkey run` stops on a damaged file before the model runs.

`**options` are the report options the family's `commands.report_options` reads (e.g. the
response-bias `baselines`, `uncertainty_side`); each hook is passed those of its own keyword
parameters that are given (`call`), and `models` where it takes it. The report calls the hooks of
the families that have results, in the registry's order."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.families import FAMILIES, family_module, family_of


def family_reports(models: Sequence[Any] | None = None) -> dict[str, ModuleType]:
    """Each family's report module, by family name; with `models`, only the families they have results of."""
    found = {}
    for name in FAMILIES:
        if (models is None or any(m.tasks(name) for m in models)) and (module := family_module(name, "report")):
            found[name] = module
    return found


def accepted(hook: Callable[..., Any], available: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of `available` that `hook` takes as keyword parameters."""
    parameters = inspect.signature(hook).parameters
    return {key: value for key, value in available.items() if key in parameters}


def call(module: ModuleType, name: str, *args: Any, default: Any = None, **available: Any) -> Any:
    """`module.<name>(*args, **the available keywords it takes)`, or `default` where it has no such hook."""
    hook = getattr(module, name, None)
    return default if hook is None else hook(*args, **accepted(hook, available))


def check_options(options: Mapping[str, Any]) -> None:
    """Every report option must be one that a family's `tables` or `section` takes."""
    known = {
        key
        for module in family_reports().values()
        for hook in (getattr(module, "tables", None), getattr(module, "section", None))
        if hook is not None
        for key in inspect.signature(hook).parameters
    }
    if unknown := sorted(set(options) - known):
        raise TypeError(
            f"unknown report option(s) {unknown}; the families take {sorted(known - {'models', 'tables', 'fig_dir'})}"
        )


def check_report_inputs(tasks: Sequence[str]) -> None:
    """Each family's `check_inputs` on its tasks of a run (lm-eval or unprefixed names): the report's
    reference files read before the model runs; a DataError names the file and the fix."""
    by_family: dict[str, list[str]] = {}
    for task in tasks:
        if (family := family_of(task)) is not None:
            by_family.setdefault(family.name, []).append(base_task_name(task) or task)
    for name, mine in by_family.items():
        if module := family_module(name, "report"):
            call(module, "check_inputs", mine)
