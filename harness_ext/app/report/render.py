"""Render the report's sections to `report.md` (figures linked) and a self-contained `report.html`
(figures embedded as base64 data URIs, no external files)."""

from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.harness_ext.app.summary import format_value

STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;font-size:13px;margin:0.5em 0 1.5em}"
    "th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}"
    "td:first-child,th:first-child{text-align:left}td.text,th.text{text-align:left}img{max-width:100%}"
    ".caption{font-style:italic;color:#555}li{margin:0.3em 0}"
)
BULLET = "- "  # a paragraph starting so is a list item; consecutive items form one list


@dataclass
class Table:
    caption: str
    frame: pd.DataFrame  # what is shown (the CSV/JSON files hold the full table)
    bold: pd.Series | None = None  # rows to show in bold (e.g. significant after Holm)


@dataclass
class Figure:
    caption: str
    path: Path  # a PNG


@dataclass
class Section:
    """A titled list of blocks, rendered in order: paragraphs (plain text, `code` and **bold**
    spans allowed), tables and figures."""

    title: str
    blocks: list[str | Table | Figure] = field(default_factory=list)


def cell(value: Any) -> str:
    if value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return format_value(value.item() if hasattr(value, "item") else value)  # numpy scalars as Python numbers


def markdown_table(table: Table) -> str:
    columns = list(table.frame.columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for i, (_, row) in enumerate(table.frame.iterrows()):
        cells = [cell(v) for v in row]
        if table.bold is not None and bool(table.bold.iloc[i]):
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _is_item(block: object) -> bool:
    return isinstance(block, str) and block.startswith(BULLET)


def to_markdown(title: str, sections: list[Section], out_dir: Path) -> str:
    parts = [f"# {title}"]
    for s in sections:
        parts.append(f"## {s.title}")
        previous = None
        for block in s.blocks:
            if isinstance(block, Table):
                parts += [f"*{block.caption}*", markdown_table(block)]
            elif isinstance(block, Figure):
                parts.append(f"![{block.caption}]({block.path.relative_to(out_dir).as_posix()})\n\n*{block.caption}*")
            elif _is_item(block) and _is_item(previous):
                parts[-1] += "\n" + block  # one tight list
            else:
                parts.append(block)
            previous = block
    return "\n\n".join(parts) + "\n"


def _inline(text: str) -> str:
    """Escape text for HTML, keeping `code` and **bold** spans."""
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text)


def html_table(table: Table) -> str:
    """A table; text columns (every value a string or missing) are left-aligned, numbers right-aligned."""
    frame = table.frame
    text = [all(isinstance(v, str) or v is None or v is pd.NA or v != v for v in frame[c]) for c in frame.columns]
    left = [" class='text'" if t else "" for t in text]
    head = "".join(f"<th{a}>{html.escape(str(c))}</th>" for c, a in zip(frame.columns, left))
    rows = []
    for i, (_, row) in enumerate(frame.iterrows()):
        cells = "".join(f"<td{a}>{html.escape(cell(v))}</td>" for v, a in zip(row, left))
        bold = table.bold is not None and bool(table.bold.iloc[i])
        rows.append(f"<tr style='font-weight:bold'>{cells}</tr>" if bold else f"<tr>{cells}</tr>")
    return f"<p class='caption'>{_inline(table.caption)}</p><table><tr>{head}</tr>{''.join(rows)}</table>"


def data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def to_html(title: str, sections: list[Section]) -> str:
    body = [f"<h1>{html.escape(title)}</h1>"]
    for s in sections:
        body.append(f"<h2>{html.escape(s.title)}</h2>")
        for block in s.blocks:
            if isinstance(block, Table):
                body.append(html_table(block))
            elif isinstance(block, Figure):
                body.append(
                    f"<figure><img src='{data_uri(block.path)}' alt='{html.escape(block.caption)}'>"
                    f"<figcaption class='caption'>{_inline(block.caption)}</figcaption></figure>"
                )
            elif _is_item(block):
                item = f"<li>{_inline(block.removeprefix(BULLET))}</li>"
                if body[-1].endswith("</ul>"):
                    body[-1] = body[-1].removesuffix("</ul>") + item + "</ul>"
                else:
                    body.append(f"<ul>{item}</ul>")
            else:
                body.append(f"<p>{_inline(block)}</p>")
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n"
