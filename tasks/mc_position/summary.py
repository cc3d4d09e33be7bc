"""The wrapped multiple-choice family's table in `biasmonkey summarize` (`Family.summary_table`), and
the rows the report's table shares with it (`condition_rows`).

One row per wrapped task and condition (`raw`: the answers as given; `pride`, `contextual`,
`specific`: after each correction), every number from `scoring.summarize` of the task's records:
the items scored, accuracy in the original order and over all asked orders, RStd of the recalls
per position over all orders and over the original order only, the share of items whose chosen
option changes under permutation, each with its 95% percentile bootstrap CI over items
(`<measure>_ci_low`, `<measure>_ci_high`), Δ% against raw (summary.csv), and the items a
correction left out. A condition the data do not allow has no numbers and its reason, in the
notes under the table; so has a number or CI of a computed condition that is n/a (an RStd where a
position never holds the correct option, CIs over fewer than 2 items), and a CI that left some
resamples out says how many (`PositionMetrics.notes`), as do recalls and RStds over the items of
one option count where the items' counts differ. An item asked in fewer orders than the run asks
(a run cut short by `--limit`) is scored on the orders it has, and the notes count it
(`items_cut_short`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from biasmonkey.metrics.position_bias import CONDITIONS, SCALARS, PositionSummary
from biasmonkey.tasks.contract import SummaryTable, base_task_name
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.scoring import (
    PositionRecord,
    document_order,
    items_without_original,
    position_items,
    summarize,
    unasked_original,
)

# How the report and the notes name each condition.
LABELS = {"raw": "raw", "pride": "PriDe", "contextual": "contextual", "specific": "Specific"}
# What each measure is, in the notes and the report.
MEASURE_NAMES = {
    "accuracy": "accuracy (original order)",
    "accuracy_permuted": "accuracy over all orders",
    "rstd": "RStd (all orders)",
    "rstd_original": "RStd (original order)",
    "changed": "changed share",
}
DELTAS = ("accuracy", "accuracy_permuted", "rstd", "rstd_original")  # PositionSummary.delta_pct's measures
ROW_KEYS = (
    "task",
    "condition",
    "n_items",
    "n_rows",
    *(k for m in SCALARS for k in (m, f"{m}_ci_low", f"{m}_ci_high")),
    *(f"delta_pct_{m}" for m in DELTAS),
    "left_out",
    "left_out_by_reason",
    "reason",
    "notes",
)
COLUMNS = (
    "task",
    "condition",
    "n_items",
    *(k for m in SCALARS for k in (m, f"{m}_ci_low", f"{m}_ci_high")),
    "left_out",
)
NOTE = (
    "One row per wrapped task and condition: raw = the answers as given; pride, contextual, specific = after "
    "PriDe (Zheng et al., ICLR 2024), contextual calibration (Zhao et al., ICML 2021) and the Specific correction "
    "(Bhatt & Ivanova, 2025). n_items: items scored; accuracy in the original order, accuracy_permuted over every "
    "asked order; rstd: population SD of the recalls per answer position over all orders (rstd_original: the "
    "original order only; 0 = every position recalled alike; n/a where a position the items have never holds the "
    "correct option, a recall that does not exist); changed: share of the items whose chosen option changes under "
    "permutation. _ci_low/_ci_high: 95% percentile bootstrap CI over items (the corrections estimated once on all "
    "items; none over fewer than 2 items). left_out: items a correction did not score (PriDe's calibration items "
    "among them); Δ% against raw is in summary.csv (delta_pct_*). Why a number is n/a: the notes above."
)


def task_of(records: Sequence[PositionRecord]) -> str:
    """The wrapped task's name, `position_<inner>`, from its item ids (`<inner>-<index>`)."""
    from biasmonkey.tasks.mc_position.family import NAME, task_name  # family.py imports this module

    for r in records:
        if r.kind == "item":
            inner, index = document_order(r.id)
            return task_name(inner) if index >= 0 else task_name(r.id)
    return NAME  # only content-free records: no item to name it by


def items_cut_short(records: Sequence[PositionRecord], options: PositionOptions) -> dict[str, tuple[int, int]]:
    """The scored items asked in fewer orders than the run asks (n, or `permutations` of them): item
    id → (orders asked, orders the run asks), in document order."""
    items, _ = position_items(records)
    wanted = {it.id: it.n if options.permutations == 0 else min(options.permutations, it.n) for it in items}
    return {it.id: (len(it.shifts), wanted[it.id]) for it in items if len(it.shifts) < wanted[it.id]}


def cut_short_note(short: Mapping[str, tuple[int, int]]) -> str:
    """The note on the items `items_cut_short` found."""
    n = len(short)
    shown = ", ".join(f"{i}: {k} of {w}" for i, (k, w) in list(short.items())[:3]) + (", …" if n > 3 else "")
    return (
        f"{n} item{'s' * (n != 1)} asked in fewer orders than the run asks ({shown}; a run cut short, e.g. by "
        "--limit, which counts orders): scored on the orders asked, in accuracy over orders, the recalls, RStd "
        "and changed"
    )


def _finite(value: float | None) -> float:
    return math.nan if value is None else float(value)


def condition_rows(task: str, summary: PositionSummary) -> list[dict[str, Any]]:
    """One row per condition of a task's summary (`ROW_KEYS`): its numbers with their CIs, Δ% against
    raw (NaN on the raw row), what the condition left out and, where it has no numbers, why."""
    rows = []
    for condition in CONDITIONS:
        c = summary.conditions[condition]
        row: dict[str, Any] = {"task": task, "condition": condition, "n_items": c.n_items, "n_rows": c.n_rows}
        for m in SCALARS:
            low, high = c.ci[m]
            row |= {m: _finite(getattr(c, m)), f"{m}_ci_low": _finite(low), f"{m}_ci_high": _finite(high)}
        deltas = summary.delta_pct.get(condition, {})
        row |= {f"delta_pct_{m}": _finite(deltas.get(m, math.nan)) for m in DELTAS}
        row["left_out"] = int(sum(c.left_out.values()))
        row["left_out_by_reason"] = "; ".join(f"{k}: {v}" for k, v in c.left_out.items() if v)
        row["reason"] = c.reason or ""
        row["notes"] = "; ".join(c.notes.values())
        rows.append(row)
    return rows


def condition_note(row: Mapping[str, Any]) -> str | None:
    """A row's note: why the condition has no numbers; else the items it left out and why some of
    its numbers or CIs are n/a (`notes`); None where none of these."""
    label = LABELS.get(row["condition"], row["condition"])
    if row.get("reason"):
        return f"{row['task']}, {label}: no numbers: {row['reason']}."
    parts = []
    if row.get("left_out"):
        n = int(row["left_out"])
        parts.append(f"{n} item{'s' * (n != 1)} left out ({row['left_out_by_reason']})")
    if row.get("notes"):
        parts.append(row["notes"])
    return f"{row['task']}, {label}: {'; '.join(parts)}." if parts else None


def _options_of(run_options: Sequence[Any] | None, i: int) -> PositionOptions:
    """The run options of the i-th task, where `biasmonkey summarize` passes them; the defaults otherwise."""
    if run_options is not None and i < len(run_options) and isinstance(run_options[i], PositionOptions):
        return run_options[i]
    return PositionOptions()


def summary_table(
    records_per_task: Iterable[Sequence[PositionRecord]],
    run_options: Sequence[Any] | None = None,
    tasks: Sequence[str] | None = None,
    **_: Any,
) -> SummaryTable:
    """The family's table in `biasmonkey summarize`: one row per wrapped task and condition.

    `run_options`, where given: each task's `PositionOptions` (the run's resamples, PriDe share and
    seed, Specific folds and seed), in the order of `records_per_task`; otherwise the defaults.
    `tasks`: each task's name (default: from its item ids)."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    imputed: list[str] = []
    for i, records in enumerate(records_per_task):
        records = list(records)
        name = tasks[i] if tasks is not None and i < len(tasks) else task_of(records)
        name = base_task_name(name) or name
        options = _options_of(run_options, i)
        task_rows = condition_rows(name, summarize(records, options))
        rows += task_rows
        notes += [note for row in task_rows if (note := condition_note(row))]
        if n := sum(r.n_imputed for r in records):
            imputed.append(f"{name}: {n:g} letter spellings imputed (not in the top-k log-probabilities)")
        if missing := items_without_original(records):
            notes.append(f"{name}: {unasked_original(missing)}")
        if short := items_cut_short(records, options):
            notes.append(f"{name}: {cut_short_note(short)}")
    return SummaryTable(rows, list(COLUMNS), [*notes, *imputed, NOTE])
