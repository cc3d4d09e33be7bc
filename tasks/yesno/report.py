"""The yes-no family's part of the report (`biasmonkey report`): its table, warnings, summary
columns and section. `harness_ext/app/report` calls these hooks for every family that has them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasmonkey.harness_ext.app.report.figures import legend_below, save, subplots
from biasmonkey.harness_ext.app.report.headline import Panel
from biasmonkey.harness_ext.app.report.render import Figure, Section, Table
from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.yesno.scoring import summarize

CORRECTIONS = ("base", "generic", "specific")
COLUMNS = ["model", "task", "correction", "n", "bias", "accuracy"]
SUMMARY_COLUMNS = ("yesno_tasks", "yesno_bias_base", "yesno_bias_specific")


def tables(models: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """`yesno`: bias and accuracy per model × task × correction (base, generic, specific)."""
    rows = []
    for m in models:
        for task, records in m.tasks("yesno").items():
            s = summarize(records)
            for correction in CORRECTIONS:
                suffix = "" if correction == "base" else f"_{correction}"
                rows.append(
                    {
                        "model": m.name,
                        "task": base_task_name(task) or task,
                        "correction": correction,
                        "n": s.n,
                        "bias": getattr(s, f"bias{suffix}"),
                        "accuracy": getattr(s, f"accuracy{suffix}"),
                    }
                )
    return {"yesno": pd.DataFrame(rows, columns=COLUMNS)}


def warnings(models: Sequence[Any], tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Imputed continuations, counted as the tasks' `imputed_continuations` metric: per item, plus
    the one no-context measurement."""
    rows = []
    for m in models:
        for task, records in m.tasks("yesno").items():
            imputed = sum(r.n_imputed for r in records) + max((r.n_imputed_null for r in records), default=0)
            if imputed:
                detail = f"{imputed:g} yes/no continuations imputed (not in the top-k) over {len(records)} items"
                rows.append({"model": m.name, "task": task, "warning": "imputed log-probabilities", "detail": detail})
    return rows


def summary(model: Any, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """A model's entries in the report's summary: its tasks and mean bias before and after Specific."""
    mine = tables["yesno"][tables["yesno"]["model"] == model.name]
    return {
        "yesno_tasks": mine["task"].nunique(),
        "yesno_bias_base": float(mine.loc[mine["correction"] == "base", "bias"].mean()),
        "yesno_bias_specific": float(mine.loc[mine["correction"] == "specific", "bias"].mean()),
    }


def summary_sentence(row: Mapping[str, Any]) -> str | None:
    """The summary paragraph's sentence on a model's yes-no results (a row of the summary table)."""
    if pd.isna(row.get("yesno_tasks", float("nan"))):
        return None
    tasks = int(row["yesno_tasks"])
    return (
        f"Yes-no bias (mean over {tasks} task{'s' * (tasks != 1)}, 0 = unbiased): {row['yesno_bias_base']:+.2f}, "
        f"{row['yesno_bias_specific']:+.2f} after the Specific correction."
    )


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    """The summary table's yes-no column, as shown."""
    if "yesno_tasks" not in summary:
        return {}
    pairs = zip(summary["yesno_bias_base"], summary["yesno_bias_specific"])
    return {"yes-no bias base → specific": ["–" if pd.isna(b) else f"{b:+.2f} → {sp:+.2f}" for b, sp in pairs]}


def headline(tables: Mapping[str, pd.DataFrame]) -> Panel | None:
    """Yes-no bias per task before any correction (no test: no marks)."""
    base = tables["yesno"][tables["yesno"]["correction"] == "base"]
    if not len(base):
        return None
    models = list(dict.fromkeys(base["model"]))
    values = base.pivot(index="model", columns="task", values="bias").reindex(models)
    return Panel(
        "Yes-no bias (Bhatt & Ivanova, 2025): (#yes − #no)/N per task, before correction (0 = unbiased)",
        values,
        values.notna() & False,
        vmax=1.0,
        unit="bias",
        fmt="{:+.2f}",
    )


def bars(yesno: pd.DataFrame, path: Path) -> Path:
    """Bias and accuracy before and after each correction, per task × model."""
    groups = list(dict.fromkeys(zip(yesno["task"], yesno["model"])))
    fig, axes = subplots(1, 2, figsize=(max(7, 1.6 * len(groups) + 3), 3.6))
    width = 0.8 / len(CORRECTIONS)
    for ax, column in zip(axes, ("bias", "accuracy")):
        for k, correction in enumerate(CORRECTIONS):
            sel = yesno[yesno["correction"] == correction].set_index(["task", "model"]).reindex(groups)
            ax.bar(np.arange(len(groups)) + k * width, sel[column], width, label=correction)
        ax.axhline(0 if column == "bias" else 0.5, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, [f"{t}\n{m}" for t, m in groups], fontsize=7)
        ax.set_title(column)
    axes[0].set_ylim(-1.05, 1.05)
    axes[1].set_ylim(0, 1)
    legend_below(axes[0], ncol=len(CORRECTIONS))
    fig.tight_layout()
    return save(fig, path)


def section(tables: Mapping[str, pd.DataFrame], fig_dir: Path) -> Section:
    s = Section("Yes-no bias (Bhatt & Ivanova, CogSci 2025)")
    s.blocks.append(
        "bias = (#yes − #no)/N ∈ [−1, 1] (0 unbiased) and accuracy, before (`base`) and after the Generic (no-context) "
        "and Specific (5-fold) log-probability corrections."
    )
    s.blocks.append(Table("Bias and accuracy per model, task and correction", tables["yesno"]))
    s.blocks.append(
        Figure("Bias and accuracy before and after each correction", bars(tables["yesno"], fig_dir / "yesno.png"))
    )
    return s
