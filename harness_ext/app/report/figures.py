"""The report's figures (matplotlib, Agg backend): what every family's figures share — saving at
print quality (PNG at 150 dpi plus SVG), the effect-size colour scale with significance marks, and
the model dendrogram. Each family draws its own figures in `tasks/<family>/report*.py`; the
headline figure is `headline.py`.

Drawing is most of a report's time (each figure is laid out and rendered twice, PNG and SVG), and
many figures repeat from one report to the next (the paper's models' grid always; every figure when
the same results are reported again). Within `write_report` (`figure_cache`), a figure function
first asks `from_cache(path, name, *data)`, with the data it draws: the files drawn before from the
same data, by the same code (every biasmonkey source file) and the same matplotlib and settings,
are copied from `cache_root()/figures` instead. A figure function called on its own draws."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import textwrap
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from biasmonkey.tasks.atomic_write import make_folder, write_bytes  # noqa: E402

EFFECT_CMAP = plt.get_cmap("RdBu_r")  # diverging: blue < 0 < red, white at 0
MISSING = "#eeeeee"  # no data
MARK = "*"  # significant (after the multiple-comparison correction, unless a caption says otherwise)
DPI = 150
MIN_MODELS_FOR_TREE = 3


def subplots(*args, **kwargs):
    """`plt.subplots` on the Agg backend (for the families' figures)."""
    return plt.subplots(*args, **kwargs)


def save(fig: plt.Figure, path: Path) -> Path:
    """Write `path` (PNG, DPI) and the same figure as SVG beside it; return the PNG's path. Where
    `from_cache` missed this path, the files are kept in the figure cache too."""
    make_folder(path.parent)
    try:
        files = {}
        for suffix, options in ((".png", {"format": "png", "dpi": DPI}), (".svg", {"format": "svg"})):
            buffer = io.BytesIO()
            fig.savefig(buffer, bbox_inches="tight", **options)
            files[suffix] = buffer.getvalue()
            write_bytes(path.with_suffix(suffix), files[suffix])
    finally:
        plt.close(fig)
    if _cache.folder is not None and (key := _cache.pending.pop(path, None)):
        _store(_cache.folder, key, files)
    return path


# ---------------------------------------------------------------------------- figure cache

CACHE_ENTRIES = 400  # figures kept (PNG + SVG each); the least recently used go first
SUFFIXES = (".png", ".svg")


@dataclasses.dataclass
class _Cache:
    folder: Path | None = None  # None: off (outside `figure_cache`)
    pending: dict[Path, str] = dataclasses.field(default_factory=dict)  # path drawn on a miss → its key


_cache = _Cache()


@contextlib.contextmanager
def figure_cache(folder: Path | None) -> Iterator[None]:
    """Within the block, `from_cache` reads and `save` fills the figure cache in `folder` (None: off)."""
    previous = _cache.folder, _cache.pending
    _cache.folder, _cache.pending = folder, {}
    try:
        yield
    finally:
        _cache.folder, _cache.pending = previous


PACKAGES = ("harness_ext", "metrics", "tasks")  # biasmonkey's code, beside its configs, docs and tests


@cache
def _code_version() -> str:
    """biasmonkey's source files, matplotlib's version and DPI: what draws a figure besides its data and settings."""
    root = Path(__file__).resolve().parents[3]
    digest = hashlib.sha256(f"{matplotlib.__version__} {DPI}".encode())
    for source in sorted(p for package in PACKAGES for p in (root / package).rglob("*.py")):
        digest.update(str(source.relative_to(root)).encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


class _Unkeyable(TypeError):
    pass


def _canonical(value: Any) -> Any:
    """`value` as plain, exactly comparable data (frames with their index, columns and dtypes)."""
    if isinstance(value, (pd.DataFrame, pd.Series)):
        frame = value.to_frame() if isinstance(value, pd.Series) else value
        return ("frame", frame.to_dict("split"), [str(t) for t in frame.dtypes], list(frame.index.names))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, [(f.name, _canonical(getattr(value, f.name))) for f in dataclasses.fields(value)])
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        return ("array", str(value.dtype), value.tolist())
    if isinstance(value, (str, int, float, bool, type(None), np.generic)):
        return value
    raise _Unkeyable(type(value).__name__)


def figure_key(name: str, *data: Any) -> str | None:
    """The cache key of figure `name` drawn from `data`; None where the data holds something
    without an exact, stable text (no cache then)."""
    settings = sorted((k, repr(v)) for k, v in matplotlib.rcParams.items())
    try:
        text = repr((_code_version(), settings, name, _canonical(list(data))))
    except (_Unkeyable, OSError):
        return None
    if " at 0x" in text:  # an object's repr with its address (frames of objects): not stable
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def from_cache(path: Path, name: str, *data: Any) -> bool:
    """Inside `figure_cache`: write `path` and its SVG from the cache where figure `name` was drawn
    from the same `data` before (True); else False, and the `save` of `path` fills the cache."""
    folder = _cache.folder
    if folder is None:
        return False
    key = figure_key(name, *data)
    if key is None:
        return False
    cached = [folder / f"{key}{suffix}" for suffix in SUFFIXES]
    try:
        files = [file.read_bytes() for file in cached]
    except OSError:
        _cache.pending[path] = key
        return False
    make_folder(path.parent)
    for suffix, content in zip(SUFFIXES, files):
        write_bytes(path.with_suffix(suffix), content)
    with contextlib.suppress(OSError):
        for file in cached:
            os.utime(file)  # recently used
    return True


def _store(folder: Path, key: str, files: dict[str, bytes]) -> None:
    """Keep the files of a figure under its key (the SVG last: a key with both is complete); a cache
    that cannot be written is no error. Beyond CACHE_ENTRIES figures, the least recently used go."""
    with contextlib.suppress(OSError, ValueError):
        folder.mkdir(parents=True, exist_ok=True)
        for suffix in SUFFIXES:
            write_bytes(folder / f"{key}{suffix}", files[suffix])
        kept = sorted(folder.glob("*.svg"), key=_mtime, reverse=True)
        for old in kept[CACHE_ENTRIES:]:
            for suffix in SUFFIXES:
                old.with_suffix(suffix).unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


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
    if from_cache(path, "model_dendrogram", matrix, xlabel):
        return path
    fig, ax = plt.subplots(figsize=(6.4, 1.5 + 0.35 * matrix.shape[0]))
    dendrogram(linkage_matrix(matrix), labels=list(matrix.index), orientation="right", ax=ax)
    ax.set_xlabel(xlabel)
    fig.tight_layout()
    return save(fig, path)
