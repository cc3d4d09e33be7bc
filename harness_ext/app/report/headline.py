"""The report's headline figure: one panel per family with results, stacked. Each panel is a
matrix of models (the user's, then the published reference models under a line) × the family's
headline cells, coloured by effect size on the family's diverging scale and marked where the
effect is significant (after the report's multiple-comparison correction for the user's models).
Each family gives its panel through its report module's `headline(tables) -> Panel | None`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from biasmonkey.harness_ext.app.report.figures import colour_bar, effect_cells, save


@dataclass
class Panel:
    title: str
    values: pd.DataFrame  # rows = models, columns = the family's headline cells (NaN: not run)
    vmax: float  # |value| at the darkest colour
    unit: str  # the colour bar's label
    significant: pd.DataFrame | None = None  # same shape: True where marked (None: the family has no test)
    fmt: str = "{:+.1f}"
    references: int = 0  # the last rows that are published models, not the user's


CELL, ROW, LABELS, TITLE, BAR = 0.62, 0.3, 2.6, 0.35, 0.12  # inches: cell width and height, margins
ROTATE_FROM = 7  # columns: from this many on, the column labels are turned


def _tick_height(panel: Panel) -> float:
    """Inches under a panel for its column labels (turned ones take their length)."""
    if panel.values.shape[1] < ROTATE_FROM:
        return 0.5  # two lines
    longest = max(len(str(c)) for c in panel.values.columns)
    return 0.2 + 0.055 * longest


def headline_figure(panels: Sequence[Panel], path: Path) -> Path | None:
    """The panels stacked in one figure (None without panels); every cell the same size, each
    panel's colour bar at its right."""
    if not panels:
        return None
    width = LABELS + CELL * max(p.values.shape[1] for p in panels) + 1.2
    heights = [TITLE + ROW * p.values.shape[0] + _tick_height(p) for p in panels]
    fig = plt.figure(figsize=(width, sum(heights)))
    top = sum(heights)
    for panel, height in zip(panels, heights):
        n_rows, n_cols = panel.values.shape
        bottom = top - TITLE - ROW * n_rows
        box = (LABELS / width, bottom / sum(heights), CELL * n_cols / width, ROW * n_rows / sum(heights))
        ax = fig.add_axes(box)
        turned = n_cols >= ROTATE_FROM
        norm = effect_cells(
            ax, panel.values, panel.significant, panel.vmax, panel.fmt, fontsize=7, wrap=None if turned else 10
        )
        if turned:
            ax.tick_params(axis="x", labelrotation=60)
            for label in ax.get_xticklabels():
                label.set_horizontalalignment("right")
                label.set_rotation_mode("anchor")
        if panel.references and panel.references < n_rows:
            ax.axhline(panel.references, color="black", linewidth=1.2)  # rows are drawn from the bottom
        ax.set_title(panel.title, fontsize=8.5, loc="left")
        bar = fig.add_axes(((LABELS + CELL * n_cols + 0.15) / width, box[1], BAR / width, box[3]))
        colour_bar(fig, bar, norm, panel.unit, cax=True)
        top -= height
    return save(fig, path)
