"""What `biasmonkey compare` prints and writes: a markdown table, CSV, JSON and one forest plot."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.app.compare import ALPHA, Comparison
from biasmonkey.metrics.paired import MIN_VALID
from biasmonkey.tasks.atomic_write import atomic_open, make_folder, write_text
from biasmonkey.tasks.families import FAMILIES

NAMES = {"holm": "Holm", "bh": "Benjamini–Hochberg"}
ITEM_COLUMNS = {
    "family": "family",
    "task": "task",
    "measure": "measure",
    "n": "n",
    "value_a": "A",
    "value_b": "B",
    "difference": "B − A",
    "ci": "95% CI",
    "test": "test",
    "resamples": "resamples",
    "p": "p",
    "p_adjusted": "p adj.",
    "d_z": "d_z",
    "p_wilcoxon": "p Wilcoxon",
}
PAIR_COLUMNS = {
    "family": "family",
    "task": "task",
    "n": "units",
    "undefined_units": "units n/a",
    "mean_abs_base": "\\|b\\| A",
    "mean_abs_instruct": "\\|b\\| B",
    "mean_difference": "mean diff",
    "percent_reduction": "% reduction",
    "cohens_d": "d",
    "p_value": "p",
    "p_adjusted": "p adj.",
}


def plain(value: Any) -> Any:
    """JSON-ready: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _number(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, float):
        return f"{x:.3g}" if x != 0 and abs(x) < 1e-3 else f"{x:.3f}"
    return str(x)


def _cell(row: Mapping[str, Any], key: str) -> str:
    if key == "ci":
        low, high = row.get("ci_low", math.nan), row.get("ci_high", math.nan)
        return "n/a" if math.isnan(low) else f"[{_number(low)}, {_number(high)}]"
    if key == "resamples":  # bootstrap: valid / drawn (none drawn, or no bootstrap: n/a)
        return f"{row['resamples_valid']}/{row['resamples']}" if row.get("resamples") else "n/a"
    if key == "p_adjusted" and row.get("significant"):
        return _number(row[key]) + " *"
    return _number(row.get(key, math.nan))


def cells(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> list[list[str]]:
    """The rows as shown: one text per column (CI as "[low, high]", resamples as "valid/drawn", * after a
    significant adjusted p)."""
    return [[_cell(r, k) for k in columns] for r in rows]


def table(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> list[str]:
    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    return lines + ["| " + " | ".join(row) + " |" for row in cells(rows, columns)]


def adjustment_text(result: Comparison) -> str:
    """Which adjustment, over how many tests, and what * means."""
    tested = sum(
        1 for r in result.rows if not math.isnan(r.get("p_value" if result.mode == "pairs" else "p", math.nan))
    )
    return (
        f"p adjusted by {NAMES[result.correction]} over the {tested} tests of this comparison; "
        f"* significant after adjustment (α = {ALPHA})."
    )


ITEMS_TEXT = (
    "Items matched by id; B − A per measure. Tests: paired t (Δ, cognitive scores; 95% CI from t, Cohen's d_z), "
    "McNemar (accuracy; CI from a paired bootstrap), paired bootstrap (|bias|, RStd). Bootstrap resamples: valid "
    f"(the statistic defined in both runs) / drawn; CI and p are n/a under {MIN_VALID:.0%} valid, with fewer than "
    "2 items (or one per stratum) and without spread (the notes say why). "
)


def pair_rows(result: Comparison, pair: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of one pair of runs (A, B)."""
    return [r for r in result.rows if (r["a"], r["b"]) == (pair["a"], pair["b"])]


def markdown(result: Comparison) -> str:
    """The comparison as markdown: what the numbers mean, then one table per pair (or the pairs' table)."""
    how = adjustment_text(result)
    lines = ["# Paired comparison", ""]
    if result.mode == "pairs":
        pairs = ", ".join(f"{p['a']} → {p['b']}" for p in result.pairs)
        lines += [
            f"Model pairs (A → B): {pairs}. Per task, one unit per pair (and unit of the family's bias measure); "
            "mean diff = mean(|b_B| − |b_A|) (< 0: B less biased), % reduction = 100 · (1 − mean |b_B| / mean |b_A|), "
            "d = Cohen's d_z (> 0: B less biased), "
            "p: paired t-test; units n/a: units left out, a run's bias n/a. " + how,
            "",
        ]
        differ = [f"{p['a']} → {p['b']}: {p['differing_settings']}" for p in result.pairs if p["differing_settings"]]
        if differ:
            lines += [f"Settings that differ (A vs B): {'; '.join(differ)}.", ""]
        lines += table(result.rows, PAIR_COLUMNS)
        row_notes = [f"{r['family']} {r['task']}: {r['note']}" for r in result.rows if r.get("note")]
        return "\n".join(lines + notes_section([*result.notes, *row_notes])) + "\n"
    lines += [ITEMS_TEXT + how]
    for pair in result.pairs:
        rows = pair_rows(result, pair)
        lines += ["", f"## {pair['a']} vs {pair['b']}", ""]
        if pair["differing_settings"]:
            lines += [f"Settings that differ (A vs B): {pair['differing_settings']}.", ""]
        lines += table(rows, ITEM_COLUMNS) if rows else ["No task in common: nothing compared for this pair."]
    return "\n".join(lines + notes_section(result.notes)) + "\n"


def notes_section(notes: Sequence[str]) -> list[str]:
    """What was dropped, and why a CI or p is n/a: a "Notes" section (none without notes)."""
    return ["", "## Notes", "", *(f"- {note}" for note in notes)] if notes else []


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """The rows as CSV; a missing value (no such key, None or NaN) is an empty cell."""
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with atomic_open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows({k: "" if plain(v) is None else v for k, v in r.items()} for r in rows)


def forest_rows(result: Comparison) -> list[dict[str, Any]]:
    """The rows the forest plot shows: each task's bias measure (model pairs: every row)."""
    if result.mode == "pairs":
        return [r | {"difference": r.get("mean_difference", math.nan)} for r in result.rows]
    return [r for r in result.rows if r.get("headline")]


def forest_plot(result: Comparison, path: Path) -> None:
    """forest.png: `forest_figure`, at 120 dpi."""
    import matplotlib.pyplot as plt

    fig = forest_figure(result)
    with atomic_open(path, "wb") as f:
        fig.savefig(f, format="png", dpi=120)
    plt.close(fig)


def forest_figure(result: Comparison) -> Any:
    """Difference and CI per task, one panel per family; filled: significant after the adjustment."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = forest_rows(result)
    families = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    counts = [sum(r["family"] == f for r in rows) for f in families]
    fig, axes = plt.subplots(
        len(families) or 1,
        1,
        figsize=(8, 1.2 + 0.28 * max(sum(counts), 1) + 0.6 * len(families)),
        gridspec_kw={"height_ratios": counts or [1]},
        squeeze=False,
    )
    several = len(result.pairs) > 1
    for ax, family in zip(axes[:, 0], families):
        mine = [r for r in rows if r["family"] == family]
        for y, r in enumerate(mine):
            low, high = r.get("ci_low", math.nan), r.get("ci_high", math.nan)
            if not math.isnan(low):
                ax.plot([low, high], [y, y], color="0.35", lw=1.2)
            ax.plot(r["difference"], y, "o", color="C0", mfc="C0" if r.get("significant") else "white")
        labels = [r["task"] + (f" ({r['b']} vs {r['a']})" if several and "a" in r else "") for r in mine]
        ax.set_yticks(range(len(mine)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.axvline(0, color="0.6", lw=0.8, ls="--")
        measure = (
            "mean |bias| change" if result.mode == "pairs" else ", ".join(dict.fromkeys(r["measure"] for r in mine))
        )
        ax.set_title(f"{FAMILIES[family].title}: {measure}", fontsize=9, loc="left")
    axes[-1, 0].set_xlabel(f"B − A (filled: significant after {NAMES[result.correction]}, α = {ALPHA})")
    fig.tight_layout()
    return fig


def write_outputs(result: Comparison, out: Path) -> list[Path]:
    """compare.md, compare.csv, compare.json and forest.png in `out`."""
    out = make_folder(out)
    paths = [out / "compare.md", out / "compare.csv", out / "compare.json", out / "forest.png"]
    write_text(paths[0], markdown(result))
    write_csv(paths[1], result.rows)
    write_text(paths[2], json.dumps(plain(result.as_dict()), indent=2) + "\n")
    forest_plot(result, paths[3])
    return paths
