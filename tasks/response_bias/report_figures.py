"""The response-bias family's report figures: Δ per bias × setting grids (colour = Δ, * =
significant), Δb per ATP topic, and |Δb| against answer uncertainty. Saved through the report's
`figures.save` (PNG at 150 dpi plus SVG); legends and colour bars sit outside the data."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasmonkey.harness_ext.app.report.figures import (
    colour_bar,
    effect_cells,
    from_cache,
    legend_below,
    save,
    subplots,
)
from biasmonkey.metrics import BIASES, SIGNIFICANCE
from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.response_bias.report_tables import FAMILY, grid
from biasmonkey.tasks.response_bias.summary import TEST_NOTE
from biasmonkey.tasks.response_bias.uncertainty import question_points

DELTA_SCALE = 30.0  # Δ (points) at the darkest colour; larger effects keep that colour and print their value
SIGNIFICANCE_TEXT = (
    f"* = p < {SIGNIFICANCE} after Holm over the report's tests (the paper's models: raw p, outside that family)"
)


def significant(response_bias: pd.DataFrame) -> pd.Series:
    """Per row: Holm-adjusted p < 0.05 where the row is one of the report's tests, else (the paper's
    models, reference values without p_holm) raw p < 0.05."""
    p = response_bias["p"].astype(float)
    if "p_holm" in response_bias.columns:
        holm = response_bias["p_holm"].astype(float)
        p = holm.where(holm.notna(), p)
    return p < SIGNIFICANCE


def _cells(response_bias: pd.DataFrame, model: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = response_bias.assign(significant=significant(response_bias))
    return grid(frame, model, "delta"), grid(frame, model, "significant").fillna(False)


def bias_grid(response_bias: pd.DataFrame, model: str, path: Path) -> Path:
    """One model's Δ per bias × setting: colour = Δ (points, ±DELTA_SCALE), * = significant."""
    cells = _cells(response_bias, model)
    if from_cache(path, "bias_grid", *cells, model):
        return path
    fig, ax = subplots(figsize=(6.4, 3.4))
    norm = effect_cells(ax, *cells, DELTA_SCALE)
    ax.set_title(f"{model}: Δ (points) per bias and setting", fontsize=10)
    colour_bar(fig, ax, norm, "Δ (points)")
    ax.set_xlabel(SIGNIFICANCE_TEXT, fontsize=7)
    return save(fig, path)


def bias_grids(response_bias: pd.DataFrame, models: Sequence[str], path: Path, title: str) -> Path:
    """The grid of several models (e.g. the paper's nine) in one figure, three panels per row."""
    cells = [_cells(response_bias, model) for model in models]
    if from_cache(path, "bias_grids", cells, list(models), title):
        return path
    ncols = min(3, len(models))
    nrows = -(-len(models) // ncols)
    fig, axes = subplots(nrows, ncols, figsize=(4.3 * ncols, 2.7 * nrows + 0.8), squeeze=False)
    for ax in axes.flat[len(models) :]:
        ax.set_visible(False)
    for k, (ax, model, model_cells) in enumerate(zip(axes.flat, models, cells)):
        norm = effect_cells(ax, *model_cells, DELTA_SCALE, fontsize=6.5)
        ax.set_title(model, fontsize=9)
        if k % ncols:
            ax.set_yticks([])
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    colour_bar(fig, list(axes.flat), norm, "Δ (points)")
    fig.text(0.5, 0.01, SIGNIFICANCE_TEXT, ha="center", fontsize=7)
    return save(fig, path)


NO_STDERR = "n/a"  # printed over a bar whose stderr is undefined (one pair): no error bar
NO_STDERR_LABEL = f"{NO_STDERR} over a bar: stderr undefined (1 pair), no error bar"


def topic_bars(topics: pd.DataFrame, path: Path) -> Path:
    """Δb per bias and ATP topic, one panel per model (error bars: stderr; NO_STDERR over a bar whose
    stderr is undefined, named in the legend); legend below."""
    if from_cache(path, "topic_bars", topics):
        return path
    tested = topics.dropna(subset=["delta"])
    models = list(dict.fromkeys(tested["model"]))
    names = list(dict.fromkeys(tested["topic"]))
    fig, axes = subplots(len(models), 1, figsize=(7, 2.9 * len(models) + 0.5), squeeze=False)
    for ax, model in zip(axes[:, 0], models):
        rows = tested[tested["model"] == model]
        biases = [b for b in BIASES if b in set(rows["bias"])]
        width = 0.8 / max(len(names), 1)
        for k, topic in enumerate(names):
            sel = rows[rows["topic"] == topic].set_index("bias").reindex(biases)
            x = np.arange(len(biases)) + k * width
            ax.bar(x, sel["delta"], width, yerr=sel["delta_stderr"].fillna(0), label=topic)
            for xi, delta in zip(x[no_stderr(sel)], sel.loc[no_stderr(sel), "delta"]):
                ax.annotate(NO_STDERR, (xi, delta), ha="center", va="bottom" if delta >= 0 else "top", fontsize=6)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(biases)) + 0.4 - width / 2, [b.replace("_", " ") for b in biases])
        ax.set_ylabel("Δb (points)")
        ax.set_title(model)
    if no_stderr(tested).any():
        axes[-1, 0].plot([], [], linestyle="none", marker="$n/a$", markersize=12, color="black", label=NO_STDERR_LABEL)
    legend_below(axes[-1, 0], ncol=2)
    fig.tight_layout()
    return save(fig, path)


def no_stderr(rows: pd.DataFrame) -> pd.Series:
    """The rows with a Δ but no stderr (one pair): drawn without an error bar, marked NO_STDERR."""
    return rows["delta"].notna() & rows["delta_stderr"].isna()


SIDE_NAMES = {"q": "q", "qp": "q'"}  # r_side → how the figures name it


def uncertainty_scatter(models: Sequence[Any], uncertainty: pd.DataFrame, path: Path) -> Path:
    """|Δb| against the normalised entropy of the side each bias's correlation uses (the uncertainty
    table's `r_side`: q or q'), one panel per model (three per row), one colour per bias (legend
    below each panel: the side, Pearson r and its p from the uncertainty table, "r n/a" with why where
    r is undefined). Each question is one point, as in the table's r."""
    panels = [(m.name, _scatter_series(m, uncertainty)) for m in models]
    if from_cache(path, "uncertainty_scatter", panels):
        return path
    ncols = min(3, len(models))
    nrows = -(-len(models) // ncols)
    fig, axes = subplots(nrows, ncols, figsize=(4.4 * ncols, 4.6 * nrows), squeeze=False)
    for ax in axes.flat[len(models) :]:
        ax.set_visible(False)
    for ax, (name, series) in zip(axes.flat, panels):
        sides = {side for _, side, _ in series}
        for label, _, points in series:
            ax.scatter(*zip(*points), s=10, alpha=0.6, label=label)
        named = " or ".join(SIDE_NAMES[s] for s in sorted(sides)) or "q"
        ax.set_xlabel(f"normalised entropy of {named}" + (" (per bias: legend)" if len(sides) > 1 else ""))
        ax.set_ylabel("|Δb| (points)")
        ax.set_title(name)
        if sides:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, fontsize=7, frameon=False)
    fig.tight_layout()
    return save(fig, path)


def _scatter_series(m: Any, uncertainty: pd.DataFrame) -> list[tuple[str, str, list[tuple[float, float]]]]:
    """One model's scatter series, per bias in BIASES order with points: its legend label, the side
    (q or qp) of its uncertainty and its (uncertainty, |Δ|) points."""
    series = []
    for bias in BIASES:
        rows = uncertainty[
            (uncertainty["model"] == m.name) & (uncertainty["bias"] == bias) & (uncertainty["setting"] == "bias")
        ]
        if rows.empty:
            continue
        row = rows.iloc[0]
        side = row["r_side"]
        records = m.tasks(FAMILY).get(lm_eval_task_name(bias), [])
        points = [(u, d) for d, u in question_points(records, side)]
        if points:
            r = f"r n/a ({row[TEST_NOTE]})" if pd.isna(row["r"]) else f"r {row['r']:+.2f} (p {row['r_p']:.2g})"
            series.append((f"{bias.replace('_', ' ')} ({SIDE_NAMES[side]}): {r}", side, points))
    return series
