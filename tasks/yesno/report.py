"""The yes-no family's part of the report (`biasmonkey report`): its table, warnings, summary
columns and section. `harness_ext/app/report` calls these hooks for every family that has them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasmonkey.harness_ext.app.report.figures import from_cache, legend_below, save, subplots
from biasmonkey.harness_ext.app.report.headline import Panel
from biasmonkey.harness_ext.app.report.render import Figure, Section, Table
from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.yesno import baselines
from biasmonkey.tasks.yesno.family import FAMILY
from biasmonkey.tasks.yesno.scoring import SMALL_CLASS, caveats, summarize

CORRECTIONS = ("base", "generic", "specific")
COLUMNS = ["model", "task", "correction", "n", "bias", "accuracy"]
SUMMARY_COLUMNS = ("yesno_tasks", "yesno_items", "yesno_ties", "yesno_bias_base", "yesno_bias_specific")
AUTHORS = "Bhatt & Ivanova (2025)"
AUTHORS_COLUMNS = ["task", *baselines.COLUMNS]


def authors_table(tasks: Sequence[str]) -> pd.DataFrame:
    """The authors' 16 models on those of `tasks` that they report (`baselines.authors_results`)."""
    parts = []
    for task in tasks:
        fixed = FAMILY.tasks[task]
        found = baselines.authors_results(fixed["prompt"], fixed["dataset"], fixed["domain"])
        if len(found):
            parts.append(found.assign(task=task)[AUTHORS_COLUMNS])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=AUTHORS_COLUMNS)


def tables(models: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """`yesno`: bias and accuracy per model × task × correction (base, generic, specific);
    `yesno_authors`: the authors' 16 models on the tasks run, where their released results are at
    hand (`$BIASMONKEY_DATA_DIR/yesno/reference/`). What qualifies these numbers (ties, …) is in
    `warnings`."""
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
    yesno = pd.DataFrame(rows, columns=COLUMNS)
    if not baselines.available():
        return {"yesno": yesno}
    return {"yesno": yesno, "yesno_authors": authors_table(list(dict.fromkeys(yesno["task"])))}


def warnings(models: Sequence[Any], tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Imputed continuations, counted as the tasks' `imputed_continuations` metric: per item, plus
    the one no-context measurement; and what qualifies a task's numbers (`scoring.caveats`:
    exact ties, items without a Specific answer, why Specific is undefined)."""
    rows = []
    for m in models:
        for task, records in m.tasks("yesno").items():
            imputed = sum(r.n_imputed for r in records) + max((r.n_imputed_null for r in records), default=0)
            if imputed:
                detail = f"{imputed:g} yes/no continuations imputed (not in the top-k) over {len(records)} items"
                rows.append({"model": m.name, "task": task, "warning": "imputed log-probabilities", "detail": detail})
            # small gold classes (nearly every --limit run has them) are noted in `summarize`, not warned of here
            for warning, detail in caveats(summarize(records)):
                if warning != SMALL_CLASS:
                    rows.append({"model": m.name, "task": task, "warning": warning, "detail": detail})
    return rows


def summary(model: Any, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """A model's entries in the report's summary: its tasks, items, exact ties and mean bias before and after Specific."""
    mine = tables["yesno"][tables["yesno"]["model"] == model.name]
    base = mine[mine["correction"] == "base"]
    return {
        "yesno_tasks": mine["task"].nunique(),
        "yesno_items": int(base["n"].sum()),
        "yesno_ties": sum(r.yes == r.no for records in model.tasks("yesno").values() for r in records),  # n_ties
        "yesno_bias_base": float(base["bias"].mean()),
        # NaN where a task's Specific bias is undefined (its warning says why), not a mean of the others
        "yesno_bias_specific": float(mine.loc[mine["correction"] == "specific", "bias"].mean(skipna=False)),
    }


def _beside_authors(model: str, tables: Mapping[str, pd.DataFrame]) -> str:
    """How the model's base bias, over the tasks the authors report, compares with their 16 models'."""
    authors = tables.get("yesno_authors")
    if authors is None or not len(authors):
        return ""
    yesno = tables["yesno"]
    mine = yesno[(yesno["model"] == model) & (yesno["correction"] == "base") & yesno["task"].isin(authors["task"])]
    if not len(mine):
        return ""
    theirs = authors[authors["task"].isin(mine["task"])].groupby("model", sort=False)["bias"].mean()
    bias = float(mine["bias"].mean())
    smaller = int((theirs.abs() < abs(bias)).sum())
    on = "the same task" if len(mine) == 1 else f"the same {len(mine)} tasks"
    return (
        f"; the authors' {len(theirs)} models on {on}: {theirs.min():+.2f} to {theirs.max():+.2f} before correction "
        f"({smaller} less biased, |bias| {abs(bias):.2f})"
    )


def summary_sentence(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame] | None = None) -> str | None:
    """The summary paragraph's sentence on a model's yes-no results (a row of the summary table),
    beside the authors' models where their results are at hand."""
    if pd.isna(row.get("yesno_tasks", float("nan"))):
        return None
    tasks = int(row["yesno_tasks"])
    beside = _beside_authors(row["model"], tables or {})
    return (
        f"Yes-no bias (mean over {tasks} task{'s' * (tasks != 1)}, 0 = unbiased): {_signed(row['yesno_bias_base'])}, "
        f"{_signed(row['yesno_bias_specific'])} after the Specific correction{_items(row, bool(beside))}{beside}."
    )


def _signed(x: float) -> str:
    return "n/a" if pd.isna(x) else f"{x:+.2f}"


def _items(row: Mapping[str, Any], with_authors: bool) -> str:
    """Over how many items each side was computed, and how many of them were exact ties, where the
    summary row counts them. The authors released per-task numbers over every item only, so a
    --limit run cannot be matched item by item."""
    items = row.get("yesno_items")
    if items is None or pd.isna(items):
        return ""
    ties = row.get("yesno_ties")
    tied = "" if ties is None or pd.isna(ties) or not ties else f", {int(ties)} of them exact ties scored as coin flips"
    authors = "; the authors': every item of each task" if with_authors else ""
    return f" (this run: {int(items)} item{'s' * (int(items) != 1)}{tied}{authors})"


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    """The summary table's yes-no column, as shown."""
    if "yesno_tasks" not in summary:
        return {}
    pairs = zip(summary["yesno_bias_base"], summary["yesno_bias_specific"])
    return {"yes-no bias base → specific": ["–" if pd.isna(b) else f"{b:+.2f} → {_signed(sp)}" for b, sp in pairs]}


def headline(tables: Mapping[str, pd.DataFrame]) -> Panel | None:
    """Yes-no bias per task before any correction (no test: no marks): the user's models, then the
    authors' on the tasks they report."""
    base = tables["yesno"][tables["yesno"]["correction"] == "base"]
    if not len(base):
        return None
    authors = tables.get("yesno_authors", pd.DataFrame(columns=AUTHORS_COLUMNS))
    rows = pd.concat(
        [
            base[["model", "task", "bias"]],
            authors.assign(model=authors["model"] + " (authors)")[["model", "task", "bias"]],
        ],
        ignore_index=True,
    )
    values = rows.pivot(index="model", columns="task", values="bias").reindex(list(dict.fromkeys(rows["model"])))
    values = values[list(dict.fromkeys(base["task"]))]
    return Panel(
        "Yes-no bias (Bhatt & Ivanova, 2025): (#yes − #no)/N per task, before correction (0 = unbiased)",
        values,
        vmax=1.0,
        unit="bias",
        fmt="{:+.2f}",
        references=authors["model"].nunique(),
    )


def bars(yesno: pd.DataFrame, path: Path) -> Path:
    """Bias and accuracy before and after each correction, per task × model."""
    if from_cache(path, "yesno_bars", yesno):
        return path
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
    authors = tables.get("yesno_authors")
    if authors is not None and len(authors):
        s.blocks.append(
            f"The authors' 16 models ({AUTHORS}; their released results, `yesno/reference/summary_jsons/`) on the "
            "tasks run that they report (per EWoK domain, not pooled): plain and k-fold (Specific) bias and accuracy "
            "as they computed them (their k-fold bias divides by the items of a fold)."
        )
        s.blocks.append(Table("The authors' models: bias and accuracy per task", authors))
    return s
