"""Render the report to `report.md` (figures linked) and a self-contained `report.html` (figures
embedded as base64 data URIs) from the Jinja2 templates in `templates/`.

Both open with the verdict (its first paragraph, the headline figure, then a few sentences per
model), then a table of contents, then the sections. Paragraphs may hold `code` and **bold** spans; a paragraph starting
with "- " is a list item, and consecutive items form one list."""

from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup

from biasmonkey.harness_ext.app.summary import format_value

TEMPLATES = Path(__file__).parent / "templates"
BULLET = "- "
# The report's marking convention: **bold** rows = raw p < 0.05 (the row's own test); * (figures, comparison
# tables) = p < 0.05 after Holm over the report's tests. A table with bold rows and no legend of its own gets this.
DEFAULT_BOLD_LEGEND = "**Bold** rows: raw p < 0.05 (before the multiple-comparison correction; see the `_holm` column)."


@dataclass
class Table:
    caption: str
    frame: pd.DataFrame  # what is shown (the CSV/JSON files hold the full table)
    bold: pd.Series | None = None  # rows to show in bold (e.g. significant)
    legend: str | None = None  # what the marks mean (bold rows, *, †), shown under the table

    def __post_init__(self) -> None:
        if self.bold is not None and self.legend is None:  # no mark without its meaning
            self.legend = DEFAULT_BOLD_LEGEND


@dataclass
class Figure:
    caption: str
    path: Path  # a PNG (an SVG of the same name beside it)


@dataclass
class Section:
    """A titled list of blocks, rendered in order: paragraphs, tables and figures."""

    title: str
    blocks: list[str | Table | Figure] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


@dataclass
class Page:
    title: str
    verdict: list[str]  # paragraphs and list items; the headline figure follows the first
    headline: Figure | None
    sections: list[Section]


def cell(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return format_value(value.item() if hasattr(value, "item") else value)  # numpy scalars as Python numbers


def groups(blocks: list[str | Table | Figure]) -> list[tuple[str, Any]]:
    """Blocks as the templates take them: ("p", text), ("ul", [items]), ("table", Table), ("figure", Figure)."""
    out: list[tuple[str, Any]] = []
    for block in blocks:
        if isinstance(block, Table):
            out.append(("table", block))
        elif isinstance(block, Figure):
            out.append(("figure", block))
        elif block.startswith(BULLET):
            if out and out[-1][0] == "ul":
                out[-1][1].append(block.removeprefix(BULLET))
            else:
                out.append(("ul", [block.removeprefix(BULLET)]))
        else:
            out.append(("p", block))
    return out


def header(table: Table) -> list[str]:
    return [str(c) for c in table.frame.columns]


def rows(table: Table) -> list[tuple[bool, list[str]]]:
    """(bold, formatted cells) per row."""
    return [
        (table.bold is not None and bool(table.bold.iloc[i]), [cell(v) for v in row])
        for i, row in enumerate(table.frame.itertuples(index=False))
    ]


def text_columns(frame: pd.DataFrame) -> list[bool]:
    """Per column: every value a string or missing (left-aligned in HTML; numbers right-aligned)."""
    return [all(isinstance(v, str) or v is None or v is pd.NA or v != v for v in frame[c]) for c in frame.columns]


def inline_html(text: str) -> Markup:
    """Escape text for HTML, keeping `code` and **bold** spans."""
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))
    return Markup(re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text))


def data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters |= {"inline": inline_html, "data_uri": data_uri, "md_cell": lambda s: s.replace("|", "\\|")}
    env.globals |= {"groups": groups, "header": header, "rows": rows, "text_columns": text_columns}
    return env


def to_markdown(page: Page, out_dir: Path) -> str:
    def link(path: Path) -> str:
        return path.relative_to(out_dir).as_posix()

    text = _environment(autoescape=False).get_template("report.md.j2").render(page=page, link=link)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"  # one blank line between blocks


def to_html(page: Page) -> str:
    return _environment(autoescape=True).get_template("report.html.j2").render(page=page)
