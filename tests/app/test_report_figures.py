"""The report's figures, rendered to PNG and checked by looking at their pixels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import colors
from matplotlib.image import imread

from biasmonkey.harness_ext.app.report import figures
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.tasks.cognitive import report as cognitive_report
from biasmonkey.tasks.response_bias import report_figures
from biasmonkey.tasks.response_bias.report_tables import uncertainty_table
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.yesno import report as yesno_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def pixels(path: Path) -> np.ndarray:
    """RGB array of a PNG, after checking it is one."""
    assert path.read_bytes()[:8] == PNG_MAGIC
    return imread(path)[..., :3]


def count_colour(image: np.ndarray, colour: str, tol: float = 0.02) -> int:
    return int(np.all(np.abs(image - np.array(colors.to_rgb(colour))) < tol, axis=-1).sum())


def assert_non_trivial(image: np.ndarray, min_colours: int = 20) -> None:
    height, width, _ = image.shape
    assert height > 150 and width > 250
    assert image.std() > 0.05  # not a blank page
    assert len(np.unique(image.reshape(-1, 3), axis=0)) >= min_colours


def rb_rows(cells: dict[tuple[str, str], tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"model": "m", "bias": b, "setting": s, "delta": d, "p": p} for (b, s), (d, p) in cells.items()]
    )


DARKEST_RED, DARKEST_BLUE = colors.to_hex(figures.EFFECT_CMAP(1.0)), colors.to_hex(figures.EFFECT_CMAP(0.0))


def test_bias_grid_colours_cells_by_effect_size(tmp_path: Path) -> None:
    strong = report_figures.bias_grid(
        rb_rows(
            {
                ("acquiescence", "bias"): (61.0, 1e-20),  # beyond the scale: the darkest red
                ("allow_forbid", "bias"): (-88.5, 1e-30),  # the darkest blue
                ("response_order", "key_typo"): (-30.0, 1e-5),  # at the scale: the darkest blue too
            }
        ),
        "m",
        tmp_path / "strong.png",
    )
    weak = report_figures.bias_grid(
        rb_rows(
            {
                ("acquiescence", "bias"): (0.5, 0.6),
                ("allow_forbid", "bias"): (-0.2, 0.9),
                ("response_order", "key_typo"): (0.1, 0.3),
            }
        ),
        "m",
        tmp_path / "weak.png",
    )
    big, small = pixels(strong), pixels(weak)
    assert_non_trivial(big)
    assert_non_trivial(small)
    # The colour bar holds a thin band of each end colour in both; a filled cell holds thousands of pixels.
    assert count_colour(small, DARKEST_RED) < 800 and count_colour(small, DARKEST_BLUE) < 800
    assert count_colour(big, DARKEST_RED) > count_colour(small, DARKEST_RED) + 4000  # one cell
    assert count_colour(big, DARKEST_BLUE) > count_colour(small, DARKEST_BLUE) + 2 * 4000  # two cells
    # Absent cells are light grey, and there are 17 of them in both.
    assert count_colour(big, figures.MISSING) > 17 * 4000
    assert (tmp_path / "strong.svg").read_text().lstrip().startswith("<?xml")  # an SVG beside every PNG


def test_effect_cells_mark_significance_and_print_every_value() -> None:
    fig, ax = figures.subplots()
    values = pd.DataFrame([[61.0, np.nan], [-0.2, 5.0]], index=["a", "b"], columns=["x", "y"])
    marks = pd.DataFrame([[True, False], [False, True]], index=values.index, columns=values.columns)
    figures.effect_cells(ax, values, marks, 30.0)
    assert sorted(t.get_text() for t in ax.texts) == sorted(["+61.0*", "–", "-0.2", "+5.0*"])


def test_significance_after_holm_or_raw_for_reference_rows() -> None:
    rows = pd.DataFrame({"p": [0.01, 0.01, 0.2, 0.01], "p_holm": [0.04, 0.2, np.nan, np.nan]})
    assert report_figures.significant(rows).tolist() == [True, False, False, True]


def records(
    bias: str, deltas: list[float], entropies: list[float], entropies_qp: list[float] | None = None
) -> list[PairRecord]:
    return [
        PairRecord(
            key=f"K{i}", bias=bias, setting="bias", p_q=None, p_qp=None, delta=d, uncertainty_q=u, uncertainty_qp=up
        )
        for i, (d, u, up) in enumerate(zip(deltas, entropies, entropies_qp or entropies))
    ]


def test_uncertainty_scatter(tmp_path: Path) -> None:
    models = []
    for name, scale in (("a", 1.0), ("b", -2.0)):
        m = ModelResults(name=name, model=name)
        m.records["response_bias"]["biasmonkey_acquiescence"] = records(
            "acquiescence", [scale * x for x in (1, 3, 2, 4, 7)], [0.1, 0.2, 0.3, 0.4, 0.9]
        )
        m.records["response_bias"]["biasmonkey_odd_even"] = records(
            "odd_even", [5, 1, 4, 2, 3], [0.5, 0.6, 0.2, 0.3, 0.8]
        )
        models.append(m)
    image = pixels(report_figures.uncertainty_scatter(models, uncertainty_table(models), tmp_path / "scatter.png"))
    assert_non_trivial(image)
    assert image.shape[1] > 600  # two panels side by side


@pytest.mark.parametrize(
    ("side", "xs", "xlabel"),
    [
        ("paper", {"acquiescence": "q", "allow_forbid": "qp"}, "normalised entropy of q or q' (per bias: legend)"),
        ("q", {"acquiescence": "q", "allow_forbid": "q"}, "normalised entropy of q"),
        ("qp", {"acquiescence": "qp", "allow_forbid": "qp"}, "normalised entropy of q'"),
    ],
)
def test_uncertainty_scatter_x_follows_the_side(
    side: str, xs: dict[str, str], xlabel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The x values and label are the entropy of the side whose r the uncertainty table reports."""
    q, qp = [0.1, 0.2, 0.3, 0.4], [0.9, 0.7, 0.8, 0.6]
    m = ModelResults(name="a", model="a")
    for bias in xs:
        m.records["response_bias"][f"biasmonkey_{bias}"] = records(bias, [1, 3, 2, 4], q, qp)
    drawn = []
    save = report_figures.save
    monkeypatch.setattr(report_figures, "save", lambda fig, path: (drawn.append(fig), save(fig, path))[1])
    table = uncertainty_table([m], side)
    report_figures.uncertainty_scatter([m], table, tmp_path / "scatter.png")
    ax = drawn[0].axes[0]
    assert ax.get_xlabel() == xlabel
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    for (bias, expected), points, label in zip(xs.items(), ax.collections, labels, strict=True):
        assert list(points.get_offsets()[:, 0]) == (q if expected == "q" else qp)
        r = table.set_index(["bias", "setting"]).loc[(bias, "bias"), "r"]
        assert label.startswith(f"{bias.replace('_', ' ')} ({report_figures.SIDE_NAMES[expected]}): r {r:+.2f}")


def test_topic_yesno_and_cognitive_figures(tmp_path: Path) -> None:
    topics = pd.DataFrame(
        [
            {"model": m, "bias": b, "topic": t, "delta": d, "delta_stderr": 0.5}
            for m, sign in (("a", 1), ("b", -1))
            for b in ("acquiescence", "odd_even")
            for t, d in (("Science and technology", 3.0), ("National / political issues", 5.0))
            for d in [sign * d]
        ]
    )
    assert_non_trivial(pixels(report_figures.topic_bars(topics, tmp_path / "topics.png")))
    yesno = pd.DataFrame(
        [
            {"model": m, "task": "yesno_comps", "correction": c, "bias": b, "accuracy": a}
            for m in ("a", "b")
            for c, b, a in (("base", -0.9, 0.5), ("generic", -0.95, 0.51), ("specific", 0.02, 0.55))
        ]
    )
    assert_non_trivial(pixels(yesno_report.bars(yesno, tmp_path / "yesno.png")))
    cognitive = pd.DataFrame(
        [
            {"model": m, "bias": b, "score": s, "p_holm": 0.01 if s > 0.5 else 0.5}
            for m, scores in (("a", (0.8, -0.5, 0.1)), ("b", (0.7, -0.4, 0.0)), ("c", (-0.6, 0.5, 0.3)))
            for b, s in zip(("anchoring", "framing", "halo_effect"), scores)
        ]
    )
    heat = pixels(cognitive_report.heatmap(cognitive, tmp_path / "heat.png"))
    assert_non_trivial(heat, min_colours=50)
    matrix = figures.feature_matrix(cognitive, "score", ["bias"])
    assert matrix.shape == (3, 3)
    tree = figures.model_dendrogram(matrix, tmp_path / "tree.png", "distance")
    assert tree is not None
    assert_non_trivial(pixels(tree), min_colours=10)


def test_no_dendrogram_below_three_models(tmp_path: Path) -> None:
    two = pd.DataFrame([{"model": m, "bias": "anchoring", "score": s} for m, s in (("a", 0.1), ("b", 0.2))])
    assert figures.model_dendrogram(figures.feature_matrix(two, "score", ["bias"]), tmp_path / "tree.png", "d") is None
    assert not (tmp_path / "tree.png").exists()


def test_dendrogram_uses_complete_linkage_on_euclidean_distances() -> None:
    # a = (0, 0), b = (3, 4), c = (6, 12) over two bias × setting cells:
    # d(a, b) = 5, d(b, c) = √(9 + 64) = 8.544, d(a, c) = √(36 + 144) = 13.416.
    # a and b merge first at 5; {a, b} joins c at the LARGEST distance (complete linkage): √180 = 13.416
    # (average linkage would give (13.416 + 8.544)/2 = 10.98, single linkage 8.544).
    rb = pd.DataFrame(
        [
            {"model": m, "bias": "acquiescence", "setting": s, "delta": d}
            for m, cells in (("a", (0, 0)), ("b", (3, 4)), ("c", (6, 12)))
            for s, d in zip(("bias", "key_typo"), cells)
        ]
    )
    matrix = figures.feature_matrix(rb, "delta", ["bias", "setting"])
    assert list(matrix.index) == ["a", "b", "c"] and matrix.shape == (3, 2)
    z = figures.linkage_matrix(matrix)
    np.testing.assert_allclose(z, [[0, 1, 5.0, 2], [2, 3, np.sqrt(180), 3]])
    assert figures.LINKAGE == "complete"


def test_feature_matrix_keeps_only_the_cells_every_model_has() -> None:
    rb = pd.DataFrame(
        [
            {"model": "a", "bias": "odd_even", "setting": "bias", "delta": 1.0},
            {"model": "a", "bias": "odd_even", "setting": "key_typo", "delta": 2.0},
            {"model": "b", "bias": "odd_even", "setting": "bias", "delta": 3.0},
        ]
    )
    matrix = figures.feature_matrix(rb, "delta", ["bias", "setting"])
    assert list(matrix.columns) == [("odd_even", "bias")] and matrix[("odd_even", "bias")].tolist() == [1.0, 3.0]


def test_bias_grids_draws_one_panel_per_model(tmp_path: Path) -> None:
    cells = {("acquiescence", "bias"): (6.1, 1e-20), ("allow_forbid", "bias"): (-88.5, 1e-30)}
    rows = pd.concat([rb_rows(cells).assign(model=m) for m in ("p1", "p2", "p3", "p4")], ignore_index=True)
    one = pixels(report_figures.bias_grids(rows, ["p1"], tmp_path / "one.png", "paper"))
    four = pixels(report_figures.bias_grids(rows, ["p1", "p2", "p3", "p4"], tmp_path / "four.png", "paper"))
    assert_non_trivial(four)
    # one dark red and one dark blue cell per panel (plus the shared colour bar's ends): four panels hold
    # about four times the colour
    assert count_colour(four, DARKEST_RED) > 3 * count_colour(one, DARKEST_RED)
    assert count_colour(four, DARKEST_BLUE) > 3 * count_colour(one, DARKEST_BLUE)
    assert four.shape[0] > 1.5 * one.shape[0]  # two rows of panels
    assert (tmp_path / "four.png").stat().st_size < 300_000


@pytest.mark.parametrize("n_models", [1, 3])
def test_grid_size_does_not_depend_on_the_data(tmp_path: Path, n_models: int) -> None:
    rows = rb_rows(
        {("odd_even", s): (1.0 * n_models, 0.01) for s in ("bias", "key_typo", "middle_random", "letter_swap")}
    )
    image = pixels(report_figures.bias_grid(rows, "m", tmp_path / "g.png"))
    assert 400 < image.shape[0] < 800 and 800 < image.shape[1] < 1300  # 150 dpi
    assert (tmp_path / "g.png").stat().st_size < 250_000


def test_the_figure_cache_copies_only_a_figure_of_the_same_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside `figure_cache` a figure drawn before from the same data is copied, byte for byte (PNG
    and SVG), without drawing; other data, another title or code that changed draws anew; outside
    it, figure functions always draw and keep nothing."""
    rows = rb_rows({("acquiescence", "bias"): (6.1, 0.01), ("odd_even", "bias"): (-3.0, 0.2)})
    cache = tmp_path / "cache"
    drawn: list[Path] = []
    save = report_figures.save
    monkeypatch.setattr(report_figures, "save", lambda fig, path: (drawn.append(path), save(fig, path))[1])
    report_figures.bias_grid(rows, "m", tmp_path / "plain.png")
    assert drawn == [tmp_path / "plain.png"] and not cache.exists()
    with figures.figure_cache(cache):
        first = report_figures.bias_grid(rows, "m", tmp_path / "a" / "g.png")
        again = report_figures.bias_grid(rows, "m", tmp_path / "b" / "g.png")
        assert len(drawn) == 2 and len(list(cache.iterdir())) == 2  # drawn once, kept as PNG and SVG
        for suffix in (".png", ".svg"):
            assert again.with_suffix(suffix).read_bytes() == first.with_suffix(suffix).read_bytes()
        assert (tmp_path / "plain.png").read_bytes() == first.read_bytes()  # the same file as drawn without the cache
        changed = rows.assign(delta=rows["delta"] + [0.0, 1e-9])
        report_figures.bias_grid(changed, "m", tmp_path / "c" / "g.png")
        report_figures.bias_grid(rows, "other model", tmp_path / "d" / "g.png")
        assert len(drawn) == 4
        monkeypatch.setattr(figures, "_code_version", lambda: "edited")
        report_figures.bias_grid(rows, "m", tmp_path / "e" / "g.png")
        assert len(drawn) == 5 and len(list(cache.iterdir())) == 8
    report_figures.bias_grid(rows, "m", tmp_path / "f" / "g.png")
    assert len(drawn) == 6
