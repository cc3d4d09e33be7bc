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
from biasmonkey.metrics.yesno import K_FOLDS, SEED
from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.yesno import baselines
from biasmonkey.tasks.yesno.family import FAMILY
from biasmonkey.tasks.yesno.options import YesNoOptions
from biasmonkey.tasks.yesno.scoring import SMALL_CLASS, caveats, summarize

CORRECTIONS = ("base", "generic", "specific")
# k, seed: the Specific folds the run was given; settings: its settings (`logs.describe`); chat_template: the
# value of its `apply_chat_template` setting, "" for the raw prompt (as the authors prompted their models)
COLUMNS = ["model", "task", "correction", "n", "bias", "accuracy", "k", "seed", "settings", "chat_template"]
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


def check_inputs(tasks: Sequence[str]) -> None:
    """The authors' results the report compares `tasks` with, read and checked now (where the shared
    data folder has them): a damaged file stops `biasmonkey run` before the model runs."""
    if baselines.available():
        authors_table([task for task in tasks if task in FAMILY.tasks])


def _summary(model: Any, task: str, records: Sequence[Any]) -> Any:
    """`summarize` of a task's records under its run's Specific folds (k, seed)."""
    options = YesNoOptions.of_run(model, task)
    return summarize(records, options.k, options.seed)


def _settings(model: Any, task: str) -> dict[str, str]:
    """The run's settings as the table holds them: all of them as text, and its chat template ("" for none)."""
    from biasmonkey.harness_ext.logs import describe

    source = getattr(model, "sources", {}).get(task)
    settings = tuple(source.settings) if source is not None else ()
    chat = dict(settings).get("apply_chat_template", "")
    return {
        "settings": describe(settings),
        "chat_template": "" if chat in ("", "false") else f"apply_chat_template={chat}",
    }


def tables(models: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """`yesno`: bias and accuracy per model × task × correction (base, generic, specific);
    `yesno_authors`: the authors' 16 models on the tasks run, where their released results are at
    hand (`$BIASMONKEY_DATA_DIR/yesno/reference/`). What qualifies these numbers (ties, …) is in
    `warnings`. Each task is scored under its run's options (k, seed) and carries its settings."""
    rows = []
    for m in models:
        for task, records in m.tasks("yesno").items():
            s = _summary(m, task, records)
            options = {
                "k": YesNoOptions.of_run(m, task).k,
                "seed": YesNoOptions.of_run(m, task).seed,
                **_settings(m, task),
            }
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
                        **options,
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
            for warning, detail in caveats(_summary(m, task, records)):
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


def _compared(model: str, tables: Mapping[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The model's base rows on the tasks the authors report and the authors' rows on those tasks (None: none)."""
    authors, yesno = tables.get("yesno_authors"), tables.get("yesno")
    if authors is None or yesno is None:
        return None
    mine = yesno[(yesno["model"] == model) & (yesno["correction"] == "base") & yesno["task"].isin(authors["task"])]
    return (mine, authors[authors["task"].isin(mine["task"])]) if len(mine) else None


def _chat_templates(rows: pd.DataFrame) -> list[str]:
    """The chat templates of `rows` (their `chat_template` column), none for raw prompts."""
    return [c for c in dict.fromkeys(rows["chat_template"]) if c]


def _beside_authors(mine: pd.DataFrame, theirs: pd.DataFrame) -> str:
    """How the model's base bias (`mine`: its rows on the tasks the authors report) compares with the
    authors' models' (`theirs`, on the same tasks): mean |bias| per task on both sides (a signed mean
    would let a +0.5 and a −1.0 cancel), and the prompts where the model's were a chat template."""
    own = float(mine["bias"].abs().mean())
    their = theirs.assign(bias=theirs["bias"].abs()).groupby("model", sort=False)["bias"].mean()
    smaller = int((their < own).sum())
    on = "the same task" if len(mine) == 1 else f"the same {len(mine)} tasks"
    chats = _chat_templates(mine)
    prompts = f" (their raw prompts; this run: a chat template, {' / '.join(chats)})" if chats else ""
    what = "|bias|" if len(mine) == 1 else "mean |bias| per task"
    return (
        f"; the authors' {_count(len(their), 'model')} on {on}{prompts}: {what} {their.min():.2f} to {their.max():.2f} "
        f"before correction ({smaller} less biased than this run's {own:.2f})"
    )


def summary_sentence(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame] | None = None) -> str | None:
    """The summary paragraph's sentence on a model's yes-no results (a row of the summary table),
    beside the authors' models where their results are at hand."""
    if pd.isna(row.get("yesno_tasks", float("nan"))):
        return None
    tasks = int(row["yesno_tasks"])
    compared = _compared(row["model"], tables or {})
    beside = _beside_authors(*compared) if compared else ""
    return (
        f"Yes-no bias (mean over {tasks} task{'s' * (tasks != 1)}, 0 = unbiased): {_signed(row['yesno_bias_base'])}, "
        f"{_signed(row['yesno_bias_specific'])} after the Specific correction"
        f"{_items(row, compared[0] if compared else None)}{beside}."
    )


def _signed(x: float) -> str:
    return "n/a" if pd.isna(x) else f"{x:+.2f}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' * (n != 1)}"


def _items(row: Mapping[str, Any], compared: pd.DataFrame | None) -> str:
    """Over how many items each side was computed, and how many of them were exact ties, where the
    summary row counts them; with the authors (`compared`: the model's rows on the tasks they report),
    how many of the items are on those tasks. The authors released per-task numbers over every item
    only, so a --limit run cannot be matched item by item."""
    items = row.get("yesno_items")
    if items is None or pd.isna(items):
        return ""
    ties = row.get("yesno_ties")
    tied = "" if ties is None or pd.isna(ties) or not ties else f", {int(ties)} of them exact ties scored as coin flips"
    authors = ""
    if compared is not None:
        on = int(compared["n"].sum())
        if on != int(items):
            authors = f"; {on} of them on the {_count(len(compared), 'task')} the authors report"
        authors += "; the authors': every item of each task"
    return f" (this run: {_count(int(items), 'item')}{tied}{authors})"


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    """The summary table's yes-no column, as shown."""
    if "yesno_tasks" not in summary:
        return {}
    pairs = zip(summary["yesno_bias_base"], summary["yesno_bias_specific"])
    return {"yes-no bias base → specific": ["–" if pd.isna(b) else f"{b:+.2f} → {_signed(sp)}" for b, sp in pairs]}


def _basis(base: pd.DataFrame) -> str:
    """Per model, the items per task and the settings of its base rows: "m1: 4 items per task (limit=4)"."""
    parts = []
    for model, rows in base.groupby("model", sort=False):
        low, high = int(rows["n"].min()), int(rows["n"].max())
        items = f"{low} items" if low == high else f"{low}–{high} items"
        parts.append(f"{model}: {items} per task ({' / '.join(dict.fromkeys(rows['settings']))})")
    return "; ".join(parts)


def headline(tables: Mapping[str, pd.DataFrame]) -> Panel | None:
    """Yes-no bias per task before any correction (no test: no marks): the user's models, then the
    authors' on the tasks they report; the title says on what items and settings each side stands."""
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
    title = f"Yes-no bias (Bhatt & Ivanova, 2025): (#yes − #no)/N per task, before correction (0 = unbiased); {_basis(base)}"
    if len(authors):
        title += "; the authors' models: every item of each task, raw prompts"
        if chats := list(dict.fromkeys(base.loc[base["chat_template"] != "", "model"])):
            title += f" (not the chat template of {', '.join(chats)})"
    return Panel(title, values, vmax=1.0, unit="bias", fmt="{:+.2f}", references=authors["model"].nunique())


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


def _folds(base: pd.DataFrame) -> list[tuple[int, int, str]]:
    """The Specific folds (k, seed) of the base rows, each with the model × task rows that used them."""
    groups = base.groupby(["k", "seed"], sort=False)
    return [
        (int(k), int(seed), ", ".join(f"{m} {t}" for m, t in zip(g["model"], g["task"]))) for (k, seed), g in groups
    ]


def _folds_text(base: pd.DataFrame) -> str:
    """`5-fold, seed 42`, or the folds of each model × task where they differ."""
    folds = _folds(base)
    if len(folds) == 1:
        k, seed, _ = folds[0]
        return f"{k}-fold, seed {seed}"
    return "k-fold; the runs differ in k or seed: " + "; ".join(f"k = {k}, seed {s} for {who}" for k, s, who in folds)


def section(tables: Mapping[str, pd.DataFrame], fig_dir: Path) -> Section:
    s = Section("Yes-no bias (Bhatt & Ivanova, CogSci 2025)")
    base = tables["yesno"][tables["yesno"]["correction"] == "base"]
    s.blocks.append(
        "bias = (#yes − #no)/N ∈ [−1, 1] (0 unbiased) and accuracy, before (`base`) and after the Generic (no-context) "
        f"and Specific ({_folds_text(base)}) log-probability corrections, with each run's k and seed (the seed shuffles "
        "the folds of COMPS, Arith and bAbI; EWoK's folds are consecutive blocks) and settings."
    )
    s.blocks.append(Table("Bias and accuracy per model, task and correction", tables["yesno"]))
    s.blocks.append(
        Figure("Bias and accuracy before and after each correction", bars(tables["yesno"], fig_dir / "yesno.png"))
    )
    authors = tables.get("yesno_authors")
    if authors is not None and len(authors):
        mine = base[base["task"].isin(authors["task"])]
        other = [(k, seed, who) for k, seed, who in _folds(mine) if (k, seed) != (K_FOLDS, SEED)]
        folds = "".join(f"; unlike k = {k}, seed {seed} of {who}" for k, seed, who in other)
        chats = [
            f"{m} ran with a chat template ({', '.join(_chat_templates(rows))})"
            for m, rows in mine.groupby("model", sort=False)
            if _chat_templates(rows)
        ]
        prompts = (
            f" {'; '.join(chats)}: its prompts are not theirs, so the rows compare different prompts." if chats else ""
        )
        s.blocks.append(
            f"The authors' 16 models ({AUTHORS}; their released results, `yesno/reference/summary_jsons/`) on the "
            "tasks run that they report (per EWoK domain, not pooled), on every item of each task with the raw prompt: "
            f"plain and k-fold (Specific; k = {K_FOLDS}, seed {SEED}{folds}) bias and accuracy as they computed them "
            f"(their k-fold bias divides by the items of a fold). This report's rows: {_basis(mine)}.{prompts}"
        )
        s.blocks.append(Table("The authors' models: bias and accuracy per task", authors))
    return s
