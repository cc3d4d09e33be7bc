"""The report's figures (matplotlib, Agg backend): what every family's figures share — saving at
print quality (PNG at 150 dpi plus SVG), the effect-size colour scale with significance marks, and
the model dendrogram. Each family draws its own figures in `tasks/<family>/report*.py`; the
headline figure is `headline.py`."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from biasmonkey.tasks.atomic_write import atomic_open, make_folder  # noqa: E402

EFFECT_CMAP = plt.get_cmap("RdBu_r")  # diverging: blue < 0 < red, white at 0
MISSING = "#eeeeee"  # no data
MARK = "*"  # significant (after the multiple-comparison correction, unless a caption says otherwise)
DPI = 150
MIN_MODELS_FOR_TREE = 3


def subplots(*args, **kwargs):
    """`plt.subplots` on the Agg backend (for the families' figures)."""
    return plt.subplots(*args, **kwargs)


def save(fig: plt.Figure, path: Path) -> Path:
    """Write `path` (PNG, DPI) and the same figure as SVG beside it; return the PNG's path."""
    make_folder(path.parent)
    try:
        with atomic_open(path, "wb") as f:
            fig.savefig(f, format="png", dpi=DPI, bbox_inches="tight")
        with atomic_open(path.with_suffix(".svg"), "wb") as f:
            fig.savefig(f, format="svg", bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def legend_below(ax: plt.Axes, ncol: int = 3, **kwargs) -> None:
    """The axes' legend under the plot, outside the data."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=ncol, fontsize=7, frameon=False, **kwargs)


def effect_cells(
    ax: plt.Axes,
    values: pd.DataFrame,
    significant: pd.DataFrame | None,
    vmax: float,
    fmt: str = "{:+.1f}",
    fontsize: float = 8,
    wrap: int | None = 10,
) -> Normalize:
    """A matrix of effects on `ax` (row 0 at the top): each cell coloured by its value on the
    diverging scale ±vmax (clipped beyond), annotated with the value, MARK where `significant` (None: no marks),
    grey with "–" where missing; column labels wrapped at `wrap` characters (None: one line).
    Returns the colour scale (for a colour bar)."""
    norm = Normalize(-vmax, vmax, clip=True)
    n_rows, n_cols = values.shape
    for i in range(n_rows):
        for j in range(n_cols):
            value, y = values.iat[i, j], n_rows - 1 - i
            if pd.isna(value):
                ax.add_patch(Rectangle((j, y), 1, 1, facecolor=MISSING, edgecolor="white"))
                ax.text(j + 0.5, y + 0.5, "–", ha="center", va="center", color="#999999", fontsize=fontsize)
                continue
            colour = EFFECT_CMAP(norm(float(value)))
            ax.add_patch(Rectangle((j, y), 1, 1, facecolor=colour, edgecolor="white"))
            dark = abs(norm(float(value)) - 0.5) > 0.33  # white text on the darkest cells
            mark = MARK if significant is not None and bool(significant.iat[i, j]) else ""
            ax.text(
                j + 0.5,
                y + 0.5,
                fmt.format(value) + mark,
                ha="center",
                va="center",
                fontsize=fontsize,
                color="white" if dark else "black",
                fontweight="bold" if mark else "normal",
            )
    ax.set_xlim(0, n_cols)
    ax.set_ylim(0, n_rows)
    columns = [str(c).replace("_", " ") for c in values.columns]
    if wrap:
        columns = [textwrap.fill(c, wrap, break_long_words=False) for c in columns]
    ax.set_xticks(np.arange(n_cols) + 0.5, columns, fontsize=fontsize)
    ax.set_yticks(
        np.arange(n_rows) + 0.5, [str(r).replace("_", " ") for r in reversed(values.index)], fontsize=fontsize
    )
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    return norm


def colour_bar(
    fig: plt.Figure, ax: plt.Axes | Sequence[plt.Axes], norm: Normalize, label: str, cax: bool = False
) -> None:
    """The effect scale of `ax` (one axes or several), to its right (outside the data); with `cax`,
    drawn in `ax` itself (an axes placed for it)."""
    mappable = plt.cm.ScalarMappable(norm=norm, cmap=EFFECT_CMAP)
    bar = fig.colorbar(mappable, cax=ax) if cax else fig.colorbar(mappable, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label(label, fontsize=7)
    bar.ax.tick_params(labelsize=7)


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
