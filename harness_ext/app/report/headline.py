"""The report's headline figure: one panel per family with results, stacked. Each panel is a
matrix of models (the user's, then the published reference models under a line) × the family's
headline cells, coloured by effect size on the family's diverging scale and marked where the
effect is significant (after the report's multiple-comparison correction for the user's models).
Each family gives its panel through its report module's `headline(tables) -> Panel | None`."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from biasmonkey.harness_ext.app.report.figures import colour_bar, effect_cells, from_cache, save


@dataclass
class Panel:
    title: str
    values: pd.DataFrame  # rows = models, columns = the family's headline cells (NaN: not run)
    vmax: float  # |value| at the darkest colour
    unit: str  # the colour bar's label
    # same shape: True where marked (None: the family has no test); NaN or None (an undefined test) is unmarked
    significant: pd.DataFrame | None = None
    fmt: str = "{:+.1f}"
    references: int = 0  # the last rows that are published models, not the user's

    def __post_init__(self) -> None:
        if self.significant is not None:  # only True marks: bool(NaN) is True, an undefined test is not
            self.significant = self.significant.eq(True)


CELL, ROW, LABELS, TITLE, BAR = 0.62, 0.3, 2.6, 0.35, 0.12  # inches: cell width and height, margins
ROTATE_FROM = 7  # columns: from this many on, the column labels are turned
TITLE_SIZE = 8.5  # points
TITLE_LINE = 0.17  # inches per title line
CHAR_WIDTH = 0.56  # em per character, a little above DejaVu Sans's average: wrapping errs on the short side
MARGIN = 0.08  # inches left and right of a title


def _tick_height(panel: Panel) -> float:
    """Inches under a panel for its column labels (turned ones take their length)."""
    if panel.values.shape[1] < ROTATE_FROM:
        return 0.5  # two lines
    longest = max(len(str(c)) for c in panel.values.columns)
    return 0.2 + 0.055 * longest


def wrap_title(title: str, width: float, fontsize: float = TITLE_SIZE) -> str:
    """`title` in lines that fit `width` inches at `fontsize` points (by a generous character width)."""
    chars = max(20, int((width - 2 * MARGIN) * 72 / (fontsize * CHAR_WIDTH)))
    return textwrap.fill(title, chars, break_long_words=False)


def headline_figure(panels: Sequence[Panel], path: Path) -> Path | None:
    """The panels stacked in one figure (None without panels); every cell the same size, each
    panel's colour bar at its right."""
    if panels and from_cache(path, "headline", list(panels)):
        return path
    fig = draw_headline(panels)
    return None if fig is None else save(fig, path)


def draw_headline(panels: Sequence[Panel]) -> plt.Figure | None:
    """The headline figure (see `headline_figure`). Each panel's title starts at the figure's left
    edge and is wrapped to the figure's width, so it never reaches past the grid and colour bars."""
    if not panels:
        return None
    width = LABELS + CELL * max(p.values.shape[1] for p in panels) + 1.2
    titles = [wrap_title(p.title, width) for p in panels]
    title_heights = [TITLE + TITLE_LINE * t.count("\n") for t in titles]
    heights = [th + ROW * p.values.shape[0] + _tick_height(p) for p, th in zip(panels, title_heights)]
    fig = plt.figure(figsize=(width, sum(heights)))
    top = sum(heights)
    for panel, height, title, title_height in zip(panels, heights, titles, title_heights):
        n_rows, n_cols = panel.values.shape
        bottom = top - title_height - ROW * n_rows
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
        title_y = (bottom + ROW * n_rows + 0.08) / sum(heights)
        fig.text(MARGIN / width, title_y, title, fontsize=TITLE_SIZE, ha="left", va="bottom")
        bar = fig.add_axes(((LABELS + CELL * n_cols + 0.15) / width, box[1], BAR / width, box[3]))
        colour_bar(fig, bar, norm, panel.unit, cax=True)
        top -= height
    return fig
