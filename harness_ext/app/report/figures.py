"""The report's figures (matplotlib, Agg backend), drawn from the report's tables and written as PNG."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from biasmonkey.harness_ext.app.report.inputs import ModelResults  # noqa: E402
from biasmonkey.harness_ext.app.report.tables import grid  # noqa: E402
from biasmonkey.metrics import BIASES, SETTINGS, SIGNIFICANCE  # noqa: E402
from biasmonkey.tasks.contract import lm_eval_task_name  # noqa: E402
from biasmonkey.tasks.response_bias.uncertainty import side_uncertainty  # noqa: E402

POSITIVE = "#d6604d"  # significant Δ > 0
NEGATIVE = "#4393c3"  # significant Δ < 0
HATCH_EDGE = "#888888"  # not significant: white cell hatched in grey
MISSING = "#eeeeee"  # no data
DPI = 100
MIN_MODELS_FOR_TREE = 3


def subplots(*args, **kwargs):
    """`plt.subplots` on the Agg backend (for the families' figures)."""
    return plt.subplots(*args, **kwargs)


def save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


GRID_LEGEND = [
    Patch(facecolor=POSITIVE, label=f"Δ > 0, p < {SIGNIFICANCE}"),
    Patch(facecolor=NEGATIVE, label=f"Δ < 0, p < {SIGNIFICANCE}"),
    Patch(facecolor="white", edgecolor=HATCH_EDGE, hatch="///", label="not significant"),
]


def _draw_grid(ax: plt.Axes, response_bias: pd.DataFrame, model: str, title: str, fontsize: float = 10) -> None:
    """One model's bias × setting cells on `ax`: coloured by the sign of Δ where p < 0.05,
    hatched where not significant, grey where absent; each cell annotated with Δ."""
    delta, p = grid(response_bias, model, "delta"), grid(response_bias, model, "p")
    for i, bias in enumerate(BIASES):
        for j, setting in enumerate(SETTINGS):
            d, pv = delta.loc[bias, setting], p.loc[bias, setting]
            y = len(BIASES) - 1 - i
            if np.isnan(d):
                ax.add_patch(Rectangle((j, y), 1, 1, facecolor=MISSING, edgecolor="white"))
                ax.text(j + 0.5, y + 0.5, "–", ha="center", va="center", color="#999999")
                continue
            if pv < SIGNIFICANCE:
                ax.add_patch(Rectangle((j, y), 1, 1, facecolor=POSITIVE if d > 0 else NEGATIVE, edgecolor="white"))
            else:
                ax.add_patch(Rectangle((j, y), 1, 1, facecolor="white", edgecolor=HATCH_EDGE, hatch="///", linewidth=0))
            ax.text(
                j + 0.5,
                y + 0.5,
                f"{d:+.1f}",
                ha="center",
                va="center",
                fontsize=fontsize,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
            )
    ax.set_xlim(0, len(SETTINGS))
    ax.set_ylim(0, len(BIASES))
    ax.set_xticks(np.arange(len(SETTINGS)) + 0.5, [s.replace("_", " ") for s in SETTINGS], fontsize=fontsize)
    ax.set_yticks(np.arange(len(BIASES)) + 0.5, [b.replace("_", " ") for b in reversed(BIASES)], fontsize=fontsize)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(title, fontsize=fontsize + 2)


def bias_grid(response_bias: pd.DataFrame, model: str, path: Path) -> Path:
    """Bias × setting grid of one model: cells coloured by the sign of Δ where p < 0.05,
    hatched where not significant, grey where absent; each cell annotated with Δ."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    _draw_grid(ax, response_bias, model, f"{model}: Δ (points) per bias and perturbation")
    ax.legend(
        handles=GRID_LEGEND,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12),
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    return save(fig, path)


def bias_grids(response_bias: pd.DataFrame, models: Sequence[str], path: Path, title: str) -> Path:
    """The grid of several models (e.g. the paper's nine) in one figure, three panels per row."""
    ncols = min(3, len(models))
    nrows = -(-len(models) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.3 * ncols, 2.7 * nrows + 0.6), squeeze=False)
    for ax in axes.flat[len(models) :]:
        ax.set_visible(False)
    for k, (ax, model) in enumerate(zip(axes.flat, models)):
        _draw_grid(ax, response_bias, model, model, fontsize=7)
        if k % ncols:
            ax.set_yticks([])
    fig.suptitle(title, fontsize=11)
    fig.legend(handles=GRID_LEGEND, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return save(fig, path)


def topic_bars(topics: pd.DataFrame, path: Path) -> Path:
    """Δb per bias and ATP topic, one panel per model (error bars: stderr)."""
    tested = topics.dropna(subset=["delta"])
    models = list(dict.fromkeys(tested["model"]))
    names = list(dict.fromkeys(tested["topic"]))
    fig, axes = plt.subplots(len(models), 1, figsize=(7, 2.6 * len(models)), squeeze=False)
    for ax, model in zip(axes[:, 0], models):
        rows = tested[tested["model"] == model]
        biases = [b for b in BIASES if b in set(rows["bias"])]
        width = 0.8 / max(len(names), 1)
        for k, topic in enumerate(names):
            sel = rows[rows["topic"] == topic].set_index("bias").reindex(biases)
            ax.bar(
                np.arange(len(biases)) + k * width, sel["delta"], width, yerr=sel["delta_stderr"].fillna(0), label=topic
            )
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(biases)) + 0.4 - width / 2, [b.replace("_", " ") for b in biases])
        ax.set_ylabel("Δb (points)")
        ax.set_title(model)
    axes[0, 0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return save(fig, path)


SIDE_NAMES = {"q": "q", "qp": "q'"}  # r_side → how the figures name it


def uncertainty_scatter(models: Sequence[ModelResults], uncertainty: pd.DataFrame, path: Path) -> Path:
    """|Δb| against the normalised entropy of the side each bias's correlation uses (the uncertainty
    table's `r_side`: q or q'), one panel per model (three per row), one colour per bias (legend: the
    side, Pearson r and its p from the uncertainty table)."""
    ncols = min(3, len(models))
    nrows = -(-len(models) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.6 * nrows), squeeze=False)
    for ax in axes.flat[len(models) :]:
        ax.set_visible(False)
    for ax, m in zip(axes.flat, models):
        sides: set[str] = set()
        for bias in BIASES:
            rows = uncertainty[
                (uncertainty["model"] == m.name) & (uncertainty["bias"] == bias) & (uncertainty["setting"] == "bias")
            ]
            if rows.empty:
                continue
            row = rows.iloc[0]
            side = row["r_side"]
            points = [
                (u, abs(r.delta))
                for r in m.tasks("response_bias").get(lm_eval_task_name(bias), [])
                if r.delta is not None and (u := side_uncertainty(r, side)) is not None
            ]
            if not points:
                continue
            sides.add(side)
            label = f"{bias.replace('_', ' ')} ({SIDE_NAMES[side]}): r {row['r']:+.2f} (p {row['r_p']:.2g})"
            ax.scatter(*zip(*points), s=10, alpha=0.6, label=label)
        named = " or ".join(SIDE_NAMES[s] for s in sorted(sides)) or "q"
        ax.set_xlabel(f"normalised entropy of {named}" + (" (per bias: legend)" if len(sides) > 1 else ""))
        ax.set_ylabel("|Δb| (points)")
        ax.set_title(m.name)
        if sides:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, path)


LINKAGE = "complete"  # Malberg et al. (2025) cluster models with complete linkage on Euclidean distances


def feature_matrix(table: pd.DataFrame, value: str, features: Sequence[str]) -> pd.DataFrame:
    """One row per model, one column per feature cell (e.g. bias, or bias × setting) holding `value`;
    only the cells every model has (a model's vector must be comparable with the others')."""
    matrix = table.pivot_table(index="model", columns=list(features), values=value, aggfunc="first", sort=False)
    return matrix.dropna(axis=1)


def linkage_matrix(matrix: pd.DataFrame) -> np.ndarray:
    """scipy's linkage of the model vectors: complete linkage, Euclidean distance."""
    from scipy.cluster.hierarchy import linkage

    return linkage(matrix.to_numpy(dtype=float), method=LINKAGE, metric="euclidean")


def model_dendrogram(matrix: pd.DataFrame, path: Path, xlabel: str) -> Path | None:
    """Tree of the models (rows of `feature_matrix`) by complete linkage on the Euclidean distance
    between their vectors; None with fewer than MIN_MODELS_FOR_TREE models or no common cell."""
    from scipy.cluster.hierarchy import dendrogram

    if matrix.shape[0] < MIN_MODELS_FOR_TREE or matrix.shape[1] == 0:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 1.5 + 0.35 * matrix.shape[0]))
    dendrogram(linkage_matrix(matrix), labels=list(matrix.index), orientation="right", ax=ax)
    ax.set_xlabel(xlabel)
    fig.tight_layout()
    return save(fig, path)
