"""The report's headline figure: one panel per family with results, stacked. Each panel is a
matrix of models (the user's, then the published reference models under a line) × the family's
headline cells, coloured by effect size on the family's diverging scale and marked where the
effect is significant (after the report's multiple-comparison correction for the user's models).
Each family gives its panel through its report module's `headline(tables) -> Panel | None`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from biasmonkey.harness_ext.app.report.figures import colour_bar, effect_cells, save, subplots


@dataclass
class Panel:
    title: str
    values: pd.DataFrame  # rows = models, columns = the family's headline cells (NaN: not run)
    significant: pd.DataFrame  # same shape: True where marked
    vmax: float  # |value| at the darkest colour
    unit: str  # the colour bar's label
    fmt: str = "{:+.1f}"
    references: int = 0  # the last rows that are published models, not the user's


CELL_WIDTH, ROW_HEIGHT, LABEL_WIDTH = 0.62, 0.3, 2.6  # inches


def headline_figure(panels: Sequence[Panel], path: Path) -> Path | None:
    """The panels stacked in one figure (None without panels)."""
    if not panels:
        return None
    width = LABEL_WIDTH + CELL_WIDTH * max(p.values.shape[1] for p in panels) + 1.2
    heights = [ROW_HEIGHT * p.values.shape[0] + 1.3 for p in panels]
    fig, axes = subplots(len(panels), 1, figsize=(width, sum(heights)), gridspec_kw={"height_ratios": heights})
    for ax, panel in zip(axes if len(panels) > 1 else [axes], panels):
        norm = effect_cells(ax, panel.values, panel.significant, panel.vmax, panel.fmt, fontsize=7)
        if panel.values.shape[1] > 6:
            ax.tick_params(axis="x", labelrotation=60)
            for label in ax.get_xticklabels():
                label.set_horizontalalignment("right")
        if panel.references and panel.references < panel.values.shape[0]:
            ax.axhline(panel.references, color="black", linewidth=1.2)  # rows are drawn from the bottom
        ax.set_title(panel.title, fontsize=8.5, loc="left")
        colour_bar(fig, ax, norm, panel.unit)
    fig.tight_layout()
    return save(fig, path)
