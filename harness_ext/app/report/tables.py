"""The report's tables (pandas DataFrames), each computed from per-item records by the families'
report modules (`families.py`), plus what is shared: the multiple-comparison adjustment over
every test in the report, the warnings, and the summary (one row per model).

Every table has a `model` column and one row per (model, …) cell. Tables that hold a test's
p-value (each family's `Family.tested`) get Holm and Benjamini–Hochberg adjusted columns over
the family of ALL tests in the report (`adjust_all`); published reference rows (a family's
`reference_rows`) stay outside that family, with empty adjusted columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from biasmonkey.harness_ext.app.report.families import call, family_reports
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.metrics import benjamini_hochberg, holm
from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.families import FAMILIES

# Which column holds each table's raw p-value (the tests of the report's family).
TESTED = {table: column for family in FAMILIES.values() for table, column in family.tested.items()}
TEST_KEYS = ("model", "bias", "setting", "topic")
TRUNCATED = "truncated prompts (--allow-truncation): its numbers come from prompts that lost their beginning"


def _frame(rows: list[dict], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(dict.fromkeys([*columns, *(k for r in rows for k in r)])))


def _tested_rows(name: str, table: pd.DataFrame) -> np.ndarray:
    """Which rows of a tested table are tests of the user's models (not published references)."""
    for module in family_reports().values():
        if (reference := call(module, "reference_rows", name, table)) is not None:
            return ~reference.to_numpy(dtype=bool)
    return np.ones(len(table), dtype=bool)


def adjust_all(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Holm and BH over every test in `tables` (those named in TESTED, less reference rows): adds
    `<p>_holm` and `<p>_bh` beside each raw p column, in place, and returns the list of all tests."""
    parts, masks = [], {}
    for name, column in TESTED.items():
        table = tables.get(name)
        if table is not None and len(table):
            masks[name] = _tested_rows(name, table)
            part = table.loc[masks[name], [c for c in TEST_KEYS if c in table.columns]].copy()
            part.insert(0, "table", name)
            part["p"] = table.loc[masks[name], column].astype(float).to_numpy()
            parts.append(part)
    if not parts:
        return pd.DataFrame(columns=["table", "model", "p", "p_holm", "p_bh"])
    tests = pd.concat(parts, ignore_index=True)
    tests = tests[[c for c in ("table", *TEST_KEYS, "p") if c in tests.columns]]
    tests["p_holm"] = holm(tests["p"].to_numpy())
    tests["p_bh"] = benjamini_hochberg(tests["p"].to_numpy())
    start = 0
    for name, mask in masks.items():
        table, column = tables[name], TESTED[name]
        block = tests.iloc[start : start + int(mask.sum())]
        at = table.columns.get_loc(column) + 1
        for offset, (suffix, values) in enumerate((("holm", block["p_holm"]), ("bh", block["p_bh"]))):
            full = np.full(len(table), np.nan)
            full[mask] = values.to_numpy()
            table.insert(at + offset, f"{column}_{suffix}", full)
        start += int(mask.sum())
    return tests


def _task(name: str) -> str:
    """A task's name without the harness prefix."""
    return base_task_name(name) or name


def warnings_table(models: Sequence[ModelResults], tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """What a reader must know before quoting a number, per model and task, only where it occurs:
    each family's own (its report module's `warnings`: invalid answers, imputed log-probabilities, …),
    and prompts cut to fit the model's context (`biasmonkey run --allow-truncation`, as recorded beside
    the results: `harness_ext/truncation.py`)."""
    rows = [
        {"suite": name, **row, "task": _task(row["task"])}
        for name, module in family_reports(models).items()
        for row in call(module, "warnings", models, tables, default=[])
    ]
    rows += [
        {"suite": out.suite, "model": m.name, "task": _task(task), "warning": TRUNCATED, "detail": cuts.sentence()}
        for m in models
        for task, out in sorted(m.sources.items())
        if (cuts := out.truncation)
    ]
    return _frame(rows, ["model", "suite", "task", "warning", "detail"])


def summary_columns(models: Sequence[ModelResults] | None = None) -> list[str]:
    """The summary table's columns: the model, each family's, then the number of warnings."""
    families = [c for module in family_reports(models).values() for c in getattr(module, "SUMMARY_COLUMNS", ())]
    return ["model", *families, "warnings"]


def summary_table(models: Sequence[ModelResults], tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per model (the user's, not the published baselines): each family's summary entries
    (its report module's `summary`) and the number of warnings."""
    warns = tables.get("warnings")
    rows = []
    for m in models:
        row: dict[str, Any] = {"model": m.name}
        for name, module in family_reports(models).items():
            if m.tasks(name):
                row |= call(module, "summary", m, tables, default={})
        row["warnings"] = 0 if warns is None else int((warns["model"] == m.name).sum())
        rows.append(row)
    present = {k for r in rows for k in r}
    return _frame(rows, [c for c in summary_columns(models) if c in present])


def build_tables(models: Sequence[ModelResults], **options: Any) -> dict[str, pd.DataFrame]:
    """Every table of the report for the families present: each family's (its `tables` hook, given
    the report `options` it takes), `all_tests` (the multiple-comparison family), `warnings` and
    `summary`."""
    tables: dict[str, pd.DataFrame] = {}
    for module in family_reports(models).values():
        tables |= call(module, "tables", models, **options)
    tables["all_tests"] = adjust_all(tables)
    tables["warnings"] = warnings_table(models, tables)
    tables["summary"] = summary_table(models, tables)
    return tables
