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
from biasmonkey.harness_ext.app.report.tables import uncertainty_table
from biasmonkey.tasks.cognitive import report as cognitive_report
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


def test_bias_grid_colours_significant_cells_and_hatches_the_others(tmp_path: Path) -> None:
    significant = figures.bias_grid(
        rb_rows(
            {
                ("acquiescence", "bias"): (6.1, 1e-20),
                ("allow_forbid", "bias"): (-88.5, 1e-30),
                ("response_order", "key_typo"): (-3.9, 1e-5),
            }
        ),
        "m",
        tmp_path / "significant.png",
    )
    hatched = figures.bias_grid(
        rb_rows(
            {
                ("acquiescence", "bias"): (0.5, 0.6),
                ("allow_forbid", "bias"): (-0.2, 0.9),
                ("response_order", "key_typo"): (0.1, 0.3),
            }
        ),
        "m",
        tmp_path / "hatched.png",
    )
    sig, hat = pixels(significant), pixels(hatched)
    assert_non_trivial(sig)
    assert_non_trivial(hat)
    # Legend swatches alone hold a few hundred pixels of each colour; a filled cell holds thousands.
    legend_positive, legend_negative = count_colour(hat, figures.POSITIVE), count_colour(hat, figures.NEGATIVE)
    assert legend_positive < 500 and legend_negative < 500
    assert count_colour(sig, figures.POSITIVE) > legend_positive + 3000  # one positive cell
    assert count_colour(sig, figures.NEGATIVE) > legend_negative + 2 * 3000  # two negative cells
    # Hatching: grey hatch lines fill the non-significant cells (both figures share the grey of the
    # legend swatch, the "–" of absent cells and anti-aliased text): three hatched cells add > 1,500 grey pixels.
    assert count_colour(hat, figures.HATCH_EDGE, tol=0.08) > count_colour(sig, figures.HATCH_EDGE, tol=0.08) + 1500
    # Absent cells are light grey, and there are 17 of them in both.
    assert count_colour(sig, figures.MISSING) > 17 * 3000


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
    image = pixels(figures.uncertainty_scatter(models, uncertainty_table(models), tmp_path / "scatter.png"))
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
    save = figures.save
    monkeypatch.setattr(figures, "save", lambda fig, path: (drawn.append(fig), save(fig, path))[1])
    table = uncertainty_table([m], side)
    figures.uncertainty_scatter([m], table, tmp_path / "scatter.png")
    ax = drawn[0].axes[0]
    assert ax.get_xlabel() == xlabel
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    for (bias, expected), points, label in zip(xs.items(), ax.collections, labels, strict=True):
        assert list(points.get_offsets()[:, 0]) == (q if expected == "q" else qp)
        r = table.set_index(["bias", "setting"]).loc[(bias, "bias"), "r"]
        assert label.startswith(f"{bias.replace('_', ' ')} ({figures.SIDE_NAMES[expected]}): r {r:+.2f}")


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
    assert_non_trivial(pixels(figures.topic_bars(topics, tmp_path / "topics.png")))
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
            {"model": m, "bias": b, "score": s}
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
    one = pixels(figures.bias_grids(rows, ["p1"], tmp_path / "one.png", "paper"))
    four = pixels(figures.bias_grids(rows, ["p1", "p2", "p3", "p4"], tmp_path / "four.png", "paper"))
    assert_non_trivial(four)
    # one positive cell per panel (plus the shared legend swatch): four panels hold about four times the colour
    assert count_colour(four, figures.POSITIVE) > 3 * count_colour(one, figures.POSITIVE)
    assert count_colour(four, figures.NEGATIVE) > 3 * count_colour(one, figures.NEGATIVE)
    assert four.shape[0] > 1.5 * one.shape[0]  # two rows of panels
    assert (tmp_path / "four.png").stat().st_size < 300_000


@pytest.mark.parametrize("n_models", [1, 3])
def test_grid_size_does_not_depend_on_the_data(tmp_path: Path, n_models: int) -> None:
    rows = rb_rows(
        {("odd_even", s): (1.0 * n_models, 0.01) for s in ("bias", "key_typo", "middle_random", "letter_swap")}
    )
    image = pixels(figures.bias_grid(rows, "m", tmp_path / "g.png"))
    assert (
        250 < image.shape[0] < 500 and 500 < image.shape[1] < 800
    )  # small enough for a README (< 150 kB at this size)
    assert (tmp_path / "g.png").stat().st_size < 150_000
