"""The wrapped multiple-choice family's part of the report (`biasmonkey report` calls `tables`,
`section`, `warnings`, `summary`, `summary_sentence`, `summary_display` and `headline`; see
`harness_ext/app/report/families.py`).

Every number comes from `scoring.summarize` of a task's records under the options its run was
given (resamples, PriDe's share and seed, the Specific folds), once per report entry and task:
- `position`: one row per model × wrapped task × condition (raw, then PriDe, contextual
  calibration, Specific), the rows of `biasmonkey summarize` (`summary.condition_rows`) with the
  model, its settings and the items it was scored on;
- `position_recalls`: the recall per answer position (letter) with its 95% CI, over all asked orders
  and over the original order only, per model × task × condition.

The section: per wrapped task a table raw vs each correction (accuracy, accuracy over orders,
RStd before and after, changed share, 95% CIs, Δ%) and a figure of the recalls per position (raw and
corrected, CI error bars); one figure of RStd per task and condition across the wrapped tasks.
Models are never mixed: each report entry (a model, or a model and the settings that tell its runs
apart) has its own rows; where two entries ran one task over different items or settings, the
section says so under the task's table.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasmonkey.metrics.position_bias import CONDITIONS, option_counts_note, recall_option_count
from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.mc_position.family import FAMILY, PREFIX
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.prompts import LETTERS
from biasmonkey.tasks.mc_position.scoring import items_without_original, position_items, summarize, unasked_original
from biasmonkey.tasks.mc_position.summary import LABELS, ROW_KEYS, condition_rows, cut_short_note, items_cut_short

NAME = FAMILY.name
COLUMNS = ("model", *ROW_KEYS, "settings", "items_key")
RECALL_COLUMNS = (
    "model",
    "task",
    "condition",
    "position",
    "letter",
    "recall",
    "recall_ci_low",
    "recall_ci_high",
    "recall_original",
    "recall_original_ci_low",
    "recall_original_ci_high",
)
SUMMARY_COLUMNS = (
    "position_tasks",
    "position_items",
    "position_rstd",
    *(f"position_rstd_{c}" for c in CONDITIONS if c != "raw"),
    *(f"position_items_{c}" for c in CONDITIONS if c != "raw"),
    "position_changed",
)
COLOURS = {"raw": "#555555", "pride": "#1f77b4", "contextual": "#2ca02c", "specific": "#d62728"}
SOURCES = {
    "pride": "Zheng et al., ICLR 2024",
    "contextual": "Zhao et al., ICML 2021",
    "specific": "Bhatt & Ivanova, 2025",
}
TITLE = "Answer-position bias on wrapped multiple-choice tasks"
INTRO = (
    "How much a model's multiple-choice answers depend on where the options stand: each item of a wrapped task "
    "(`position_<task>`, lm-eval `biasmonkey_position_<task>`) is asked lettered in its original order and in its "
    "cyclic orders (option p moved to position p − s), the answer being the letter with the highest "
    "log-probability. **Accuracy** is over the original order, **accuracy over orders** over every asked order "
    "(item-weighted); the **recall** of a position is the share of the asked rows whose correct option stands "
    "there that the model answers with that position's letter; **RStd** is the population SD of the recalls "
    "(0 = every position recalled alike; none where a position never holds the correct option), over all orders "
    "and over the original order only; **changed** is the "
    "share of items whose chosen option (mapped back from positions to options) is not the same in all their "
    "orders. Brackets: 95% percentile bootstrap CI over items (all of an item's orders together; a correction is "
    "estimated once on all items and held fixed; none over fewer than 2 items). Δ% = 100 · (corrected − raw) / raw."
)
CORRECTIONS = (
    "- **PriDe** (Zheng et al., ICLR 2024): the prior over answer positions is estimated from a few calibration items "
    "asked in all their cyclic orders (5% of the items by default) and divided out of every other item's answer "
    "probabilities; its calibration items are not scored, so its numbers are over the other items.",
    "- **Contextual calibration** (Zhao et al., ICML 2021): each letter's probability is divided by its probability "
    'after a content-free prompt ("N/A" as the question and every option) of the same number of options.',
    "- **Specific** (Bhatt & Ivanova, 2025): each letter's mean log-probability over calibration items balanced "
    "across correct letters (k folds) is subtracted from the original order's letters, the same offset applied to "
    "every order; it needs at least k − 1 items per correct letter and option count.",
)


# ---------------------------------------------------------------------------- tables


def _items_key(records: Sequence[Any]) -> str:
    """A short fingerprint of the (item, order) rows a task's records hold: equal keys, same rows asked."""
    rows = sorted((r.id, r.shift) for r in records if r.kind == "item")
    return hashlib.sha1(repr(rows).encode()).hexdigest()[:10]


def _settings(model: Any, task: str) -> str:
    from biasmonkey.harness_ext.logs import describe

    source = getattr(model, "sources", {}).get(task)
    return describe(source.settings) if source is not None else ""


def recall_rows(model: str, task: str, summary: Any) -> list[dict[str, Any]]:
    """One row per condition and answer position: the recall over all orders and over the original order, with CIs."""
    rows = []
    for condition in CONDITIONS:
        c = summary.conditions[condition]
        for p, (recall, (low, high), original, (olow, ohigh)) in enumerate(
            zip(c.recalls, c.recalls_ci, c.recalls_original, c.recalls_original_ci)
        ):
            rows.append(
                dict(
                    zip(
                        RECALL_COLUMNS,
                        (model, task, condition, p, LETTERS[p], recall, low, high, original, olow, ohigh),
                    )
                )
            )
    return rows


def tables(models: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """`position` (per model × wrapped task × condition) and `position_recalls` (per position too),
    recomputed from each task's records under its run's options."""
    rows, recalls = [], []
    for m in models:
        for task, records in m.tasks(NAME).items():
            name = base_task_name(task) or task
            s = summarize(records, PositionOptions.of_run(m, task))
            extra = {"settings": _settings(m, task), "items_key": _items_key(records)}
            rows += [{"model": m.name, **row, **extra} for row in condition_rows(name, s)]
            recalls += recall_rows(m.name, name, s)
    return {
        "position": pd.DataFrame(rows, columns=list(COLUMNS)),
        "position_recalls": pd.DataFrame(recalls, columns=list(RECALL_COLUMNS)),
    }


def warnings(models: Sequence[Any], tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Letter spellings imputed from a served model's top log-probabilities (the `imputed_continuations` metric),
    items left out because their original order has no answer, items asked in fewer orders than the run asks
    (cut short by --limit) and items of other option counts than the recalls and RStd are over."""
    rows = []
    for m in models:
        for task, records in m.tasks(NAME).items():
            found = []
            if imputed := sum(r.n_imputed for r in records):
                detail = f"{imputed:g} letter spellings imputed (not in the top-k) over {len(records)} documents"
                found.append(("imputed log-probabilities", detail))
            if missing := items_without_original(records):
                found.append(("items left out", unasked_original(missing)))
            if short := items_cut_short(records, PositionOptions.of_run(m, task)):
                found.append(("items cut short", cut_short_note(short)))
            items, _ = position_items(records)
            if counts := option_counts_note(items, recall_option_count(items)):
                found.append(("option counts differ", counts))
            rows += [{"model": m.name, "task": task, "warning": w, "detail": d} for w, d in found]
    return rows


# ---------------------------------------------------------------------------- summary and verdict


def _mean(values: pd.Series) -> float:
    """The mean over the model's tasks; NaN where a task has no number (never over fewer tasks unsaid)."""
    return float(values.astype(float).mean(skipna=False)) if len(values) else math.nan


def summary(model: Any, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """A model's entries in the report's summary: its wrapped tasks, their items, and the mean over
    them of RStd raw and after each correction, and of the changed share."""
    table = tables["position"]
    mine = table[table["model"] == model.name]
    raw = mine[mine["condition"] == "raw"]
    out: dict[str, Any] = {
        "position_tasks": int(raw["task"].nunique()),
        "position_items": int(raw["n_items"].sum()),
        "position_rstd": _mean(raw["rstd"]),
    }
    for c in CONDITIONS[1:]:
        out[f"position_rstd_{c}"] = _mean(mine.loc[mine["condition"] == c, "rstd"])
        out[f"position_items_{c}"] = int(mine.loc[mine["condition"] == c, "n_items"].sum())
    out["position_changed"] = _mean(raw["changed"])
    return out


def _number(value: Any, fmt: str = "{:.3f}") -> str:
    return "n/a" if value is None or pd.isna(value) else fmt.format(float(value))


def _items(n: int) -> str:
    return f"{n} item{'s' * (n != 1)}"


def _corrected(row: Mapping[str, Any], condition: str, items: int) -> str:
    """A correction's RStd in the verdict, with its items where they are not the raw number's."""
    n = row.get(f"position_items_{condition}", items)
    shown = f"{LABELS[condition]} {_number(row.get(f'position_rstd_{condition}'))}"
    if pd.isna(n) or int(n) == items:
        return shown
    return shown + (f" (over {_items(int(n))})" if int(n) else " (no item scored)")


def summary_sentence(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame] | None = None) -> str | None:
    """The verdict's sentence on a model's wrapped tasks (a row of the summary table); a correction
    scored on other items than raw (PriDe without its calibration items) says over how many."""
    if pd.isna(row.get("position_tasks", math.nan)):
        return None
    tasks, items = int(row["position_tasks"]), int(row["position_items"])
    corrected = ", ".join(_corrected(row, c, items) for c in CONDITIONS[1:])
    mean = "" if tasks == 1 else f", mean over {tasks} wrapped tasks"
    changed = row.get("position_changed")
    moved = "" if pd.isna(changed) else f"; {100 * float(changed):.0f}% of the items change answer under permutation"
    return (
        f"Answer-position bias on wrapped multiple-choice tasks (RStd of the recalls per position over the cyclic "
        f"orders, 0 = none{mean}): {_number(row['position_rstd'])} raw; after correction {corrected}{moved} "
        f"(this run: {_items(items)})."
    )


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    """The summary table's column, as shown: RStd raw → PriDe / contextual / Specific."""
    if "position_rstd" not in summary:
        return {}
    shown = []
    for _, row in summary.iterrows():
        if pd.isna(row.get("position_tasks", math.nan)):
            shown.append("–")
            continue
        after = " / ".join(_number(row[f"position_rstd_{c}"]) for c in CONDITIONS[1:])
        shown.append(f"{_number(row['position_rstd'])} → {after}")
    return {"position RStd raw → PriDe / contextual / Specific": shown}


def _inner(task: str) -> str:
    return task.removeprefix(PREFIX)


def _entry_items(rows: pd.DataFrame) -> str:
    """An entry's raw items: "15 items", or per task where it ran several."""
    if len(rows) == 1:
        return _items(int(rows["n_items"].iloc[0]))
    return ", ".join(f"{_items(int(n))} of {_inner(t)}" for t, n in zip(rows["task"], rows["n_items"]))


def basis(table: pd.DataFrame) -> str:
    """What each report entry's raw numbers are over, e.g. "tiny: 15 items; tiny1: 10 items; items or
    settings differ between entries (the section's notes say how)"."""
    raw = table[table["condition"] == "raw"]
    per_model = {m: _entry_items(rows) for m, rows in raw.groupby("model", sort=False)}
    if len(set(per_model.values())) == 1:
        text = next(iter(per_model.values()))
    else:
        text = "; ".join(f"{m}: {items}" for m, items in per_model.items())
    by_task = raw.groupby("task")
    if (by_task["items_key"].nunique() > 1).any() or (by_task["settings"].nunique() > 1).any():
        text += "; items or settings differ between entries (the section's notes say how)"
    return text


def headline(tables: Mapping[str, pd.DataFrame]) -> Any:
    """RStd per wrapped task, raw and after each correction that has numbers (no test: no marks)."""
    from biasmonkey.harness_ext.app.report.headline import Panel

    table = tables.get("position")
    if table is None or not len(table):
        return None
    cells = table.assign(cell=[f"{_inner(t)} · {LABELS[c]}" for t, c in zip(table["task"], table["condition"])])
    kept = cells.groupby("cell", sort=False)["rstd"].transform(lambda v: v.notna().any())
    cells = cells[kept.astype(bool)]
    values = cells.pivot(index="model", columns="cell", values="rstd")
    values = values.reindex(index=list(dict.fromkeys(cells["model"])), columns=list(dict.fromkeys(cells["cell"])))
    return Panel(
        "Answer position on wrapped multiple-choice tasks: RStd of the recalls per position over the cyclic orders, "
        "raw and after each correction that has numbers (PriDe, contextual calibration, Specific; 0 = none); "
        f"over {basis(table)}",
        values.astype(float),
        vmax=0.25,
        unit="RStd",
        fmt="{:.3f}",
    )


# ---------------------------------------------------------------------------- figures


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "task"


def _errors(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Error bar lengths below and above each value (0 where the CI is undefined)."""
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(np.clip(np.vstack([values - low, high - values]), 0, None))


def _computed(frame: pd.DataFrame, column: str) -> list[str]:
    """The conditions of `frame` with some number in `column`, in order."""
    present = set(frame.loc[frame[column].notna(), "condition"])
    return [c for c in CONDITIONS if c in present]


def _grouped_bars(ax: Any, frame: pd.DataFrame, groups: list[Any], key: str, value: str) -> None:
    """One bar per condition that has numbers, per group (frame[key]), with its CI as error bars."""
    conditions = _computed(frame, value)
    width = 0.8 / max(1, len(conditions))
    x = np.arange(len(groups))
    for k, condition in enumerate(conditions):
        sel = frame[frame["condition"] == condition].set_index(key).reindex(groups)
        values = sel[value].to_numpy(dtype=float)
        errors = _errors(values, sel[f"{value}_ci_low"].to_numpy(float), sel[f"{value}_ci_high"].to_numpy(float))
        ax.bar(
            x + (k - (len(conditions) - 1) / 2) * width,
            np.nan_to_num(values),
            width,
            yerr=errors,
            capsize=2,
            color=COLOURS[condition],
            label=LABELS[condition],
            error_kw={"linewidth": 0.8},
        )


def recall_figure(recalls: pd.DataFrame, task: str, path: Path) -> Path:
    """Recall per answer position (all orders), raw and after each correction, CI error bars; one panel per model."""
    from biasmonkey.harness_ext.app.report.figures import legend_below, save, subplots

    mine = recalls[recalls["task"] == task]
    models = list(dict.fromkeys(mine["model"]))
    fig, axes = subplots(1, len(models), figsize=(max(4.5, 3.6 * len(models)), 3.4), squeeze=False, sharey=True)
    for ax, model in zip(axes[0], models):
        frame = mine[mine["model"] == model]
        letters = list(dict.fromkeys(frame["letter"]))
        _grouped_bars(ax, frame, letters, "letter", "recall")
        ax.set_xticks(np.arange(len(letters)), letters)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("answer position (letter)")
        ax.set_title(model, fontsize=9)
        legend_below(ax, ncol=4)
    axes[0][0].set_ylabel("recall")
    fig.tight_layout()
    return save(fig, path)


def rstd_figure(table: pd.DataFrame, path: Path) -> Path:
    """RStd (all orders) per wrapped task, raw and after each correction, CI error bars; one panel per model."""
    from biasmonkey.harness_ext.app.report.figures import legend_below, save, subplots

    models = list(dict.fromkeys(table["model"]))
    tasks = list(dict.fromkeys(table["task"]))
    fig, axes = subplots(
        len(models), 1, figsize=(max(5.0, 1.4 * len(tasks) + 2.5), 3.0 * len(models)), squeeze=False, sharex=True
    )
    for ax, model in zip(axes[:, 0], models):
        frame = table[table["model"] == model]
        _grouped_bars(ax, frame, tasks, "task", "rstd")
        ax.set_ylabel("RStd (all orders)")
        ax.set_ylim(bottom=0)
        ax.set_title(model, fontsize=9)
    axes[-1][0].set_xticks(np.arange(len(tasks)), [_inner(t) for t in tasks], fontsize=7)
    legend_below(axes[-1][0], ncol=4)
    fig.tight_layout()
    return save(fig, path)


# ---------------------------------------------------------------------------- the section


def _with_ci(row: Mapping[str, Any], measure: str) -> str:
    value, low, high = row[measure], row[f"{measure}_ci_low"], row[f"{measure}_ci_high"]
    if pd.isna(value):
        return "–"
    if pd.isna(low) or pd.isna(high):
        return f"{value:.3f}"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def _delta(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):+.1f}%"


LEFT_OUT = {  # why a correction left an item out (`left_out_by_reason`'s keys), in words
    "calibration": "used for PriDe's calibration",
    "unpriored": "without a PriDe prior for their option count",
    "no_content_free": "without a content-free prompt",
    "unbalanced": "unbalanced across correct letters",
}


def left_out_words(by_reason: str) -> str:
    """`left_out_by_reason` ("unbalanced: 15; calibration: 1") in words: "15 items unbalanced across correct
    letters, 1 item used for PriDe's calibration"."""
    parts = (part.rsplit(": ", 1) for part in by_reason.split("; ") if part)
    return ", ".join(f"{_items(int(n))} {LEFT_OUT.get(reason, reason)}" for reason, n in parts)


def _why(row: Mapping[str, Any]) -> str:
    """The condition's note in the table: why it has no numbers, or what it left out and why some of
    its numbers or CIs are n/a; the items left out in words."""
    left_out = f"left out: {left_out_words(row['left_out_by_reason'])}" if row["left_out"] else ""
    if row["reason"]:
        # the metrics' reason may end in the left-out counts ("(left out: unbalanced: 15)"): shown in words instead
        reason = re.sub(r"\s*\(left out: [^()]*\)$", "", row["reason"])
        return f"no numbers: {reason}" + (f" ({left_out})" if left_out else "")
    parts = [left_out] if left_out else []
    if isinstance(row.get("notes"), str) and row["notes"]:  # a CSV's empty cell reads as NaN
        parts.append(row["notes"])
    return "; ".join(parts)


def shown_table(rows: pd.DataFrame) -> pd.DataFrame:
    """A task's rows as the section shows them: raw, then each correction; CIs in brackets, Δ% against raw."""
    shown = []
    for row in rows.to_dict("records"):
        raw = row["condition"] == "raw"
        shown.append(
            {
                "model": row["model"],
                "condition": LABELS[row["condition"]],
                "items": row["n_items"],
                "accuracy": _with_ci(row, "accuracy"),
                "Δ% acc.": "" if raw else _delta(row["delta_pct_accuracy"]),
                "accuracy over orders": _with_ci(row, "accuracy_permuted"),
                "Δ% acc. orders": "" if raw else _delta(row["delta_pct_accuracy_permuted"]),
                "RStd (all orders)": _with_ci(row, "rstd"),
                "Δ% RStd": "" if raw else _delta(row["delta_pct_rstd"]),
                "RStd (original order)": _with_ci(row, "rstd_original"),
                "Δ% RStd orig.": "" if raw else _delta(row["delta_pct_rstd_original"]),
                "changed": _with_ci(row, "changed"),
                "left out / why": _why(row),
            }
        )
    return pd.DataFrame(shown)


def like_with_like(rows: pd.DataFrame) -> str | None:
    """Where a task's report entries were scored on different items or run with different settings: which."""
    raw = rows[rows["condition"] == "raw"]
    if raw["model"].nunique() < 2:
        return None
    parts = []
    if raw["items_key"].nunique() > 1:
        counts = ", ".join(f"{m}: {int(n)} items" for m, n in zip(raw["model"], raw["n_items"]))
        parts.append(f"the entries were asked different items or orders ({counts}), so their numbers are not paired")
    if raw["settings"].nunique() > 1:
        settings = "; ".join(f"{m}: {s}" for m, s in zip(raw["model"], raw["settings"]))
        parts.append(f"their settings differ ({settings})")
    if not parts:
        return None
    return f"{rows['task'].iloc[0]}: " + "; ".join(parts) + "."


def section(tables: Mapping[str, pd.DataFrame], fig_dir: Path) -> Any:
    from biasmonkey.harness_ext.app.report.render import Figure, Section, Table

    table, recalls = tables["position"], tables["position_recalls"]
    s = Section(TITLE)
    s.blocks += [INTRO, *CORRECTIONS]
    s.blocks.append(
        "PriDe leaves its calibration items out, and a correction the data do not allow (e.g. Specific with too few "
        "items per correct letter, PriDe when a calibration item lacks some orders, contextual calibration without "
        "the content-free prompt) has no numbers; its row says why. Where a correction scores fewer items than raw, "
        "its Δ% compares numbers over different item sets. The full tables: `tables/position.csv` (every number, its CI and Δ%) and `tables/position_recalls.csv` "
        "(the recall per position, all orders and original order)."
    )
    if not len(table):
        return s
    s.blocks.append(
        Figure(
            "RStd of the recalls per position (all orders) per wrapped task, raw and after each correction that has "
            "numbers; error bars: 95% bootstrap CI over items",
            rstd_figure(table, fig_dir / "position_rstd.png"),
        )
    )
    for task in dict.fromkeys(table["task"]):
        rows = table[table["task"] == task]
        s.blocks.append(
            Table(
                f"{task}: raw vs each correction",
                shown_table(rows),
                legend="Brackets: 95% percentile bootstrap CI over items; Δ%: relative change against the raw row "
                "of the same model; – : no number; a number without brackets has no CI; the last column says why.",
            )
        )
        if note := like_with_like(rows):
            s.blocks.append(note)
        if not (recalls["task"] == task).any():
            continue  # no item scored (e.g. --limit below an item's orders): the table says why
        s.blocks.append(
            Figure(
                f"{task}: recall per answer position over all orders, raw and after each correction that has numbers; "
                "error bars: 95% bootstrap CI over items",
                recall_figure(recalls, task, fig_dir / f"position_recalls_{_slug(_inner(task))}.png"),
            )
        )
    return s
